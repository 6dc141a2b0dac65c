//! From the answers to [`super::query::QUERIES`] (a server's or a file's, the same shape) to
//! per-pod and per-node GPU-seconds. Here the cluster's semantics are applied once for both
//! paths:
//! - only Running pods on a node hold GPUs; Pending requests are unmet demand apart;
//! - a time-sliced GPU is one physical GPU split among the pods that share it, whichever way
//!   dcgm-exporter attributed it (to one pod by default, a copy to each with
//!   `--kubernetes-virtual-gpus`);
//! - under the MIG single strategy an `nvidia.com/gpu` is the node's MIG profile's share;
//! - usage is `DCGM_FI_PROF_GR_ENGINE_ACTIVE`, or `DCGM_FI_DEV_GPU_UTIL / 100` where the
//!   profiling metric is absent or stuck at zero on a non-MIG GPU;
//! - a sample stands for one scrape interval, inferred from the data.

use std::collections::{BTreeMap, BTreeSet};

use super::owners::owner;
use super::query::{compact, Answers, Grid, Q};
use super::telemetry::{NodeSeries, Orphan, PodSeries, Signal, Telemetry};
use crate::catalog::Catalog;
use crate::plan::Plan;

/// Node labels that name a node's pool, in the `label_` form kube-state-metrics exports:
/// gpuplan's own first (render puts `gpuplan.io/pool` on every node it creates).
pub(crate) const POOL_LABELS: [&str; 5] = [
    "label_gpuplan_io_pool",
    "label_kubernetes_azure_com_agentpool",
    "label_agentpool",
    "label_eks_amazonaws_com_nodegroup",
    "label_karpenter_sh_nodepool",
];

/// A node pool label against a plan pool name: equal ignoring case and anything but letters
/// and digits, or the pool's first 12 of those (AKS pool names are at most 12 characters).
pub(crate) fn pool_matches(label: &str, pool: &str) -> bool {
    let norm = |s: &str| {
        s.chars()
            .filter(char::is_ascii_alphanumeric)
            .map(|c| c.to_ascii_lowercase())
            .collect::<String>()
    };
    let (l, p) = (norm(label), norm(pool));
    !l.is_empty() && (l == p || (l.len() == 12 && p.starts_with(&l)))
}

/// The plan pool a node pool label names.
pub(crate) fn plan_pool<'p>(
    plan: &'p Plan,
    label: Option<&str>,
) -> Option<&'p crate::plan::raw::Pool> {
    let l = label?;
    plan.pools()
        .iter()
        .map(|p| p.get())
        .find(|p| pool_matches(l, p.name.get()))
}

/// Which plan pool a node's pool labels name, as render named what it created
/// (`engine::names`): `gpuplan.io/pool` itself, else the AKS agent pool, EKS node group or
/// Karpenter NodePool name render gives each declared pool (what `render --declared`
/// creates), else a label that reads as a pool's name.
pub(crate) struct PoolNames {
    by_name: BTreeMap<String, String>,
}

impl PoolNames {
    pub(crate) fn new(plan: &Plan, catalog: &Catalog) -> PoolNames {
        let mut by_name = BTreeMap::new();
        if !plan.pools().is_empty() {
            let declared = crate::engine::recommend::declared(plan, catalog);
            for (node_pool, pool) in crate::engine::names::node_pool_names(&declared.pools) {
                by_name.entry(node_pool).or_insert(pool);
            }
        }
        PoolNames { by_name }
    }

    pub(crate) fn pool<'p>(
        &self,
        plan: &'p Plan,
        labels: &BTreeMap<String, String>,
    ) -> Option<&'p crate::plan::raw::Pool> {
        // A node is never of a pool of another size: the sizes of a pool of several share its
        // `gpuplan.io/pool` label, and the node group or agent pool label then tells them apart.
        let size = labels
            .get("label_node_kubernetes_io_instance_type")
            .filter(|v| !v.is_empty());
        let fits =
            |p: &crate::plan::raw::Pool| size.is_none_or(|s| p.sku.get().eq_ignore_ascii_case(s));
        for k in POOL_LABELS {
            let Some(v) = labels.get(k).filter(|v| !v.is_empty()) else {
                continue;
            };
            let named = self.by_name.get(v).map(String::as_str).unwrap_or(v);
            if let Some(p) = plan.pool(named).filter(|p| fits(p.get())) {
                return Some(p.get());
            }
        }
        POOL_LABELS
            .iter()
            .find_map(|k| labels.get(*k))
            .and_then(|l| plan_pool(plan, Some(l)))
    }
}

/// The scrape interval of a family of series, from how many samples fall in a window whose
/// neighbours both hold samples too (such a window is covered end to end, so its count is
/// step / interval on average whatever the offsets). Falls back to the typical gap between
/// windows with samples when the interval is longer than the step.
pub(crate) fn interval<'a>(
    rows: impl Iterator<Item = &'a BTreeMap<u32, f64>>,
    step: i64,
) -> Option<f64> {
    // Over each run of a series (windows with samples, with the gaps between them no longer
    // than twice the typical one: a sample jittered across a boundary, or an interval longer
    // than the step), samples per second: the samples of its inner windows over their span.
    // Only runs of ten windows or more count, weighed by length; a longer gap (a pod gone and
    // back) ends a run instead of stretching it.
    let rows: Vec<&BTreeMap<u32, f64>> = rows.collect();
    let mut gaps: Vec<u32> = rows
        .iter()
        .flat_map(|r| {
            let keys: Vec<u32> = r.keys().copied().collect();
            keys.windows(2).map(|w| w[1] - w[0]).collect::<Vec<_>>()
        })
        .collect();
    gaps.sort_unstable();
    let typical = gaps.get(gaps.len() / 2).copied();
    let allowed = run_gap(typical);
    let (mut samples, mut windows) = (0.0, 0u64);
    for r in rows {
        let keys: Vec<u32> = r.keys().copied().collect();
        let mut start = 0;
        for i in 0..keys.len() {
            let end_of_run = i + 1 == keys.len() || keys[i + 1] - keys[i] > allowed;
            if end_of_run {
                // Its inner windows only: the first and last are partial (a pod that starts
                // or ends inside them).
                let span = u64::from(keys[i] - keys[start]).saturating_sub(1);
                if span >= 8 {
                    samples += keys[start + 1..i].iter().map(|k| r[k]).sum::<f64>();
                    windows += span;
                }
                start = i + 1;
            }
        }
    }
    if windows > 0 && samples > 0.0 {
        let i = windows as f64 * step as f64 / samples;
        // Scrape intervals are whole seconds; the edges leave a hair of noise.
        return Some(if (i - i.round()).abs() < 0.02 * i {
            i.round()
        } else {
            i
        });
    }
    typical.map(|g| f64::from(g) * step as f64)
}

/// The longest gap (in windows) inside one run of a series: two windows (one left empty by
/// a sample jittered across a boundary), or twice the typical gap where the scrape interval
/// is longer than the step (10-minute scrapes at a 4-minute step leave gaps of 2 and 3).
fn run_gap(typical: Option<u32>) -> u32 {
    typical.map_or(2, |g| (2 * g).max(2))
}

/// Seconds each sample stands for, per window, for one source (kube-state-metrics, one
/// card's dcgm-exporter): each window's own neighbourhood of samples, so targets scraped at
/// different intervals and an interval changed mid-window are each counted at their own rate.
///
/// Per window, the series present before and after it (interior: a series that starts or
/// ends inside a window has a partial count there) give samples per window; their
/// mean between changes of rate is the rate. A change is where the mean rates of up to
/// [`RADIUS`] windows before and after a window differ by more than 15%; that window's
/// samples stand for the step (its interior series cover it whole), so a change is never
/// smeared over the windows around it. Windows with no interior data take the
/// nearest window's rate, else the source's overall interval.
pub(crate) struct Intervals {
    keys: Vec<u32>,
    at: Vec<f64>,
    fallback: Option<f64>,
}

/// GPU-seconds of usage with no GPU-requesting pod below which it is noise: 0.1 GPU-hour.
const ORPHAN_FLOOR: f64 = 360.0;

/// Windows each side a rate is taken over: a sample jittered across a boundary moves a
/// window's count by one, under 2% of 61 windows' samples.
const RADIUS: usize = 30;

/// Scrape intervals people configure: an estimate within 3% of one is that one.
const COMMON_INTERVALS: [f64; 14] = [
    1.0, 2.0, 5.0, 10.0, 15.0, 20.0, 30.0, 45.0, 60.0, 90.0, 120.0, 180.0, 300.0, 600.0,
];

/// A local interval estimate, settled: the source's overall interval where it agrees within
/// 5% (no change there, only jitter); else a common scrape interval within 3%; else whole
/// seconds within 2%.
fn snap(iv: f64, overall: Option<f64>) -> f64 {
    if let Some(o) = overall.filter(|o| (iv - o).abs() <= 0.05 * o) {
        return o;
    }
    if let Some(c) = COMMON_INTERVALS
        .iter()
        .find(|c| (iv - **c).abs() <= 0.03 * **c)
    {
        return *c;
    }
    if (iv - iv.round()).abs() < 0.02 * iv {
        iv.round()
    } else {
        iv
    }
}

impl Intervals {
    pub(crate) fn of<'a>(
        rows: impl Iterator<Item = &'a BTreeMap<u32, f64>>,
        step: i64,
        fallback: Option<f64>,
    ) -> Intervals {
        // window -> (interior series, their samples)
        let mut per: BTreeMap<u32, (f64, f64)> = BTreeMap::new();
        let allowed = run_gap(fallback.map(|f| (f / step as f64).ceil() as u32));
        for r in rows {
            // Runs of the series: windows with samples, a single empty window allowed inside
            // (a sample jittered across a boundary, or an interval longer than the step); its
            // inner windows count, empty ones at zero, so a jitter never biases the rate.
            let keys: Vec<u32> = r.keys().copied().collect();
            let mut start = 0;
            for i in 0..keys.len() {
                if i + 1 < keys.len() && keys[i + 1] - keys[i] <= allowed {
                    continue;
                }
                for w in keys[start] + 1..keys[i] {
                    let e = per.entry(w).or_insert((0.0, 0.0));
                    e.0 += 1.0;
                    e.1 += r.get(&w).copied().unwrap_or(0.0);
                }
                start = i + 1;
            }
        }
        let keys: Vec<u32> = per.keys().copied().collect();
        let rate: Vec<f64> = per.values().map(|(n, s)| s / n).collect();
        let n: Vec<f64> = per.values().map(|x| x.0).collect();
        let s_: Vec<f64> = per.values().map(|x| x.1).collect();
        // Prefix sums over the keys: series, samples, rate.
        let prefix = |v: &dyn Fn(usize) -> f64| -> Vec<f64> {
            let mut out = vec![0.0; keys.len() + 1];
            for i in 0..keys.len() {
                out[i + 1] = out[i] + v(i);
            }
            out
        };
        let (pn, ps, pr) = (prefix(&|i| n[i]), prefix(&|i| s_[i]), prefix(&|i| rate[i]));
        let len = keys.len();
        // Where the rate changes: the mean rate of up to RADIUS windows before and after a
        // window differ by more than 15%, most there of its neighbourhood.
        let mean = |a: usize, b: usize| (pr[b] - pr[a]) / (b - a).max(1) as f64;
        let jump: Vec<f64> = (0..len)
            .map(|i| {
                let (lo, hi) = (i.saturating_sub(RADIUS), (i + 1 + RADIUS).min(len));
                if i - lo < 3 || hi - i - 1 < 3 {
                    return 0.0;
                }
                let (l, r) = (mean(lo, i), mean(i + 1, hi));
                (l - r).abs() / l.max(r).max(1e-9)
            })
            .collect();
        let change: Vec<bool> = (0..len)
            .map(|i| {
                let (lo, hi) = (i.saturating_sub(RADIUS), (i + 1 + RADIUS).min(len));
                jump[i] > 0.15
                    && (lo..hi).all(|j| jump[j] < jump[i] || (jump[j] == jump[i] && j >= i))
            })
            .collect();
        // Between changes the rate is one: the segment's samples over its series-windows. A
        // window of change is its own (its interior series cover it whole).
        let stepf = step as f64;
        let mut at = vec![fallback.unwrap_or(stepf); len];
        let mut start = 0;
        for i in 0..=len {
            if i < len && !change[i] {
                continue;
            }
            if i > start {
                let per_window = (ps[i] - ps[start]) / (pn[i] - pn[start]).max(1e-9);
                if per_window > 0.0 {
                    let iv = snap(stepf / per_window, fallback);
                    at[start..i].fill(iv);
                }
            }
            if i < len {
                if rate[i] > 0.0 {
                    at[i] = stepf / rate[i];
                } else if i > start {
                    at[i] = at[i - 1];
                }
            }
            start = i + 1;
        }
        Intervals { keys, at, fallback }
    }

    /// Seconds a sample in window `k` stands for.
    pub(crate) fn at(&self, k: u32) -> Option<f64> {
        if self.keys.is_empty() {
            return self.fallback;
        }
        let i = self.keys.partition_point(|x| *x < k);
        let near = [i.checked_sub(1), (i < self.keys.len()).then_some(i)]
            .into_iter()
            .flatten()
            .min_by_key(|j| self.keys[*j].abs_diff(k));
        match near {
            Some(j) if self.keys[j].abs_diff(k) <= 3 * RADIUS as u32 => Some(self.at[j]),
            _ => self.fallback,
        }
    }
}

/// Covered windows of a source scraped every `interval` seconds: a window left empty by a
/// scrape jittered across its boundary is covered; a gap longer than a scrape interval is not.
fn fill_jitter(covered: &mut BTreeSet<u32>, interval: Option<f64>, step: f64) {
    let reach = interval.map_or(1, |i| (i / step).ceil() as u32 + 1);
    let filled: Vec<u32> = covered
        .iter()
        .zip(covered.iter().skip(1))
        .filter(|(a, b)| *b - *a > 1 && *b - *a <= reach)
        .flat_map(|(a, b)| a + 1..*b)
        .collect();
    covered.extend(filled);
}

fn col(q: Q, l: &str) -> usize {
    Answers::col(q, l)
}

/// The card (or MIG instance) a DCGM row of query `q` is about: its cluster, host, index,
/// UUID and instance id; `None` when it names neither host nor UUID.
fn card(q: Q, g: &[String]) -> Option<Vec<String>> {
    let named = !g[col(q, "Hostname")].is_empty() || !g[col(q, "UUID")].is_empty();
    named.then(|| labels(q, g, &CARD))
}

/// The labels that name a card (or MIG instance).
const CARD: [&str; 5] = ["cluster", "Hostname", "gpu", "UUID", "GPU_I_ID"];

/// The values of `names` in a row of query `q`.
fn labels(q: Q, g: &[String], names: &[&str]) -> Vec<String> {
    names.iter().map(|l| g[col(q, l)].clone()).collect()
}

struct Node {
    labels: BTreeMap<String, String>,
    /// resource -> window -> (avg, count)
    alloc: BTreeMap<String, BTreeMap<u32, (f64, f64)>>,
}

impl Node {
    /// The node pool its labels name (only non-empty labels are kept).
    fn pool_label(&self) -> Option<&str> {
        POOL_LABELS
            .iter()
            .find_map(|k| self.labels.get(*k).map(String::as_str))
    }
}

/// How the node's `nvidia.com/gpu` counts: 1, a time-sliced replica's share, or a single
/// strategy MIG profile's share.
struct Unit {
    replicas: u32,
    share: f64,
    /// The GPUs of the node were counted from the distinct cards dcgm-exporter reported
    /// (no label or known instance type said so).
    from_cards: bool,
    /// Its `nvidia.com/gpu` are MIG instances (single strategy).
    mig: bool,
}

fn unit_of(
    plan: &Plan,
    catalog: &Catalog,
    labels: &BTreeMap<String, String>,
    allocatable_gpus: Option<f64>,
    pool: Option<&crate::plan::raw::Pool>,
    cards: Option<u32>,
) -> Unit {
    let label = |k: &str| labels.get(k).map(String::as_str).filter(|v| !v.is_empty());
    // MIG single strategy: GPU feature discovery names the profile in the product or the
    // mig-parted config; an AKS MIG pool's comes from the plan.
    let mig = label("label_nvidia_com_gpu_product")
        .and_then(|p| p.rsplit_once("-MIG-").map(|(_, m)| m.to_owned()))
        .or_else(|| {
            (label("label_nvidia_com_mig_strategy") == Some("single"))
                .then(|| label("label_nvidia_com_mig_config"))
                .flatten()
                .and_then(|c| c.strip_prefix("all-"))
                .map(str::to_owned)
        })
        .or_else(|| {
            pool.and_then(|p| p.mig_profile.as_ref())
                .map(|m| m.get().clone())
        })
        .and_then(|m| super::telemetry::mig_share(catalog, &m));
    if let Some(share) = mig {
        return Unit {
            replicas: 1,
            share,
            from_cards: false,
            mig: true,
        };
    }
    let labelled = label("label_nvidia_com_gpu_count").and_then(|c| c.parse::<u32>().ok());
    // Where no label says how many cards a node has, the distinct physical GPUs (UUIDs)
    // dcgm-exporter reports for it do: it reports each card once, however many replicas
    // time-slicing makes of it.
    let from_cards = labelled.is_none() && cards.is_some_and(|c| c > 0);
    let physical = labelled
        .or(cards.filter(|c| *c > 0))
        .or_else(|| {
            let it = label("label_node_kubernetes_io_instance_type")?;
            catalog.sku(plan.provider(), it).map(|s| s.gpu_count)
        })
        .or_else(|| {
            pool.and_then(|p| catalog.sku(plan.provider(), p.sku.get()))
                .map(|s| s.gpu_count)
        })
        .filter(|c| *c > 0);
    // What the node advertises against its physical GPUs beats what the plan says.
    let measured = allocatable_gpus.zip(physical).and_then(|(a, p)| {
        let r = a / f64::from(p);
        (r >= 1.0 && (r - r.round()).abs() < 1e-9).then_some(r.round() as u32)
    });
    let replicas = label("label_nvidia_com_gpu_replicas")
        .and_then(|r| r.parse::<u32>().ok())
        .or(measured)
        .or_else(|| {
            pool.filter(|p| {
                matches!(
                    p.sharing(),
                    crate::plan::raw::Sharing::TimeSlicing | crate::plan::raw::Sharing::Mps
                )
            })
            .and_then(|p| p.time_slicing_replicas.as_ref())
            .and_then(|r| u32::try_from(*r.get()).ok())
        })
        .filter(|r| *r >= 1)
        .unwrap_or(1);
    Unit {
        replicas,
        from_cards: from_cards && replicas > 1,
        share: 1.0 / f64::from(replicas),
        mig: false,
    }
}

/// A scrape interval longer than the step leaves windows between two samples empty though
/// the pod held its GPUs all along: each such gap no longer than an interval carries the
/// level of the sample before it (as Prometheus's lookback does), so peaks and quantiles of
/// GPUs held are neither inflated by a window standing for a whole interval nor emptied by
/// the windows in between. Totals come from `allocated`, which this never touches.
fn carry_levels(levels: &mut BTreeMap<i64, f64>, step: i64, interval: impl Fn(i64) -> Option<f64>) {
    let samples: Vec<(i64, f64)> = levels.iter().map(|(k, v)| (*k, *v)).collect();
    for pair in samples.windows(2) {
        let ((a, level), (b, _)) = (pair[0], pair[1]);
        let Some(iv) = interval(a).filter(|iv| *iv > step as f64) else {
            continue;
        };
        // The next sample's window, one step late at most for jitter.
        if (b - a) as f64 > iv + step as f64 {
            continue;
        }
        let mut t = a + step;
        while t < b {
            levels.insert(t, level);
            t += step;
        }
    }
}

/// The whole cards of a MIG node, whose slices no instance holds are paid for all the same:
/// the distinct parent cards dcgm-exporter reports, else its instance type's or plan pool's
/// GPU count, else the least whole number of cards its instances fill. GPU feature
/// discovery's `nvidia.com/gpu.count` is not read here: under the single strategy it counts
/// MIG instances.
fn whole_cards(
    plan: &Plan,
    catalog: &Catalog,
    labels: &BTreeMap<String, String>,
    pool: Option<&crate::plan::raw::Pool>,
    cards: Option<u32>,
    offered: f64,
) -> f64 {
    let sku_gpus = |sku: &str| catalog.sku(plan.provider(), sku).map(|s| s.gpu_count);
    let counted = cards
        .filter(|c| *c > 0)
        .or_else(|| {
            labels
                .get("label_node_kubernetes_io_instance_type")
                .and_then(|it| sku_gpus(it))
        })
        .or_else(|| pool.and_then(|p| sku_gpus(p.sku.get())))
        .map(f64::from);
    // Never fewer cards than the instances offered fill (a share sum rounded for float noise).
    let least = (offered - 1e-9).ceil().max(0.0);
    counted.map_or(least, |c| c.max(least))
}

/// A node's GPU-seconds per window counted as whole cards: each window's offered
/// GPU-seconds scaled from the instances' share to the cards they sit on.
fn paid_for(
    capacity: &BTreeMap<i64, f64>,
    physical: &BTreeMap<u32, f64>,
    cards: f64,
    start: impl Fn(u32) -> i64,
) -> BTreeMap<i64, f64> {
    physical
        .iter()
        .filter_map(|(k, offered)| {
            let ts = start(*k);
            let secs = capacity.get(&ts)?;
            let scale = if *offered > 1e-9 && cards > *offered {
                cards / offered
            } else {
                1.0
            };
            Some((ts, secs * scale))
        })
        .collect()
}

/// How a pod holds its GPUs: MIG instances (a mixed strategy resource, or a single strategy
/// node's `nvidia.com/gpu`), time-sliced replicas, or whole cards.
fn pod_gpu(unit: Option<&Unit>, resources: &BTreeSet<String>) -> super::owners::PodGpu {
    use super::owners::PodGpu;
    if unit.is_some_and(|u| u.mig) || resources.iter().any(|r| r.starts_with("nvidia_com_mig_")) {
        PodGpu::Mig
    } else if unit.is_some_and(|u| u.replicas > 1) {
        PodGpu::Shared
    } else {
        PodGpu::Whole
    }
}

/// A pod's containers, by kind, per window: (node, GPUs of one unit each, avg requested).
#[derive(Default)]
struct PodReq {
    node: Option<String>,
    /// The node each window's requests name (an index into the node names): a pod name can
    /// run on two nodes one after the other (a StatefulSet pod recreated elsewhere), and each
    /// node holds it for its own time. An index, not the name: one per pod-window.
    node_at: BTreeMap<u32, u32>,
    /// container -> resource -> window -> avg (scheduled rows only)
    app: BTreeMap<String, BTreeMap<String, BTreeMap<u32, f64>>>,
    init: BTreeMap<String, BTreeMap<String, BTreeMap<u32, f64>>>,
    /// Requests per window of any row (scheduled or not), for Pending demand, in GPUs (a MIG
    /// profile counts as its share of one).
    any: BTreeMap<u32, f64>,
    /// The GPU resources of those rows.
    any_resources: BTreeSet<String>,
}

/// Seconds a window's samples stand for: count x the source's interval at that window (the
/// step where the interval is unknown). Not capped at the window: a sample jittered across a
/// boundary leaves one window with one too many and its neighbour one too few, and the total
/// stays exact.
fn seconds_of(stepf: f64) -> impl Fn(f64, Option<f64>) -> f64 {
    move |count, iv| count * iv.unwrap_or(stepf)
}

/// How often kube-state-metrics and dcgm-exporter were scraped, overall and per window, and
/// each card's scrape counts.
struct Scrapes {
    ksm: Option<f64>,
    ksm_at: Intervals,
    has_phase: bool,
    /// A card's scrape counts per window, by host, card and `vgpu` copy.
    cards: BTreeMap<Vec<String>, BTreeMap<u32, f64>>,
    dcgm: Option<f64>,
    dcgm_intervals: Vec<f64>,
    card_at: BTreeMap<Vec<String>, Intervals>,
}

fn scrapes(a: &Answers, step: i64) -> Scrapes {
    let ksm = interval(
        a.get(Q::Scraped)
            .map(|(_, r)| r)
            .chain(a.get(Q::NodeScraped).map(|(_, r)| r)),
        step,
    );
    let ksm_at = Intervals::of(
        a.get(Q::Scraped)
            .map(|(_, r)| r)
            .chain(a.get(Q::NodeScraped).map(|(_, r)| r)),
        step,
        ksm,
    );
    let has_phase = a.get(Q::Scraped).next().is_some();
    // A GPU reports all along, whichever pod holds it: its rows, summed across pods (not
    // across `vgpu` copies), are long even where each pod's is short (a six-minute job).
    // A row that names neither host nor card (a hand-made export) may be several cards.
    let mut cards: BTreeMap<Vec<String>, BTreeMap<u32, f64>> = BTreeMap::new();
    for (g, r) in a.get(Q::DeviceScrapes) {
        let Some(mut card) = card(Q::DeviceScrapes, g) else {
            continue;
        };
        // Pods one after another on a card add up; `vgpu` copies stay apart.
        card.push(g[col(Q::DeviceScrapes, "vgpu")].clone());
        let e = cards.entry(card).or_default();
        for (k, c) in r {
            *e.entry(*k).or_default() += c;
        }
    }
    let dcgm = interval(cards.values(), step).or_else(|| {
        interval(
            a.get(Q::ActiveCount)
                .map(|(_, r)| r)
                .chain(a.get(Q::UtilCount).map(|(_, r)| r)),
            step,
        )
    });

    // The intervals the exporters were scraped at, each card's own (whole seconds): targets
    // scraped at 15 s and 30 s are both said, not averaged into a 28 s no target had.
    let mut dcgm_intervals: Vec<f64> = cards
        .values()
        .filter_map(|r| interval(std::iter::once(r), step))
        .filter(|i| (i - i.round()).abs() < 1e-9)
        .collect();
    dcgm_intervals.sort_by(f64::total_cmp);
    dcgm_intervals.dedup();

    // Each card's own interval in time (targets scraped at different intervals); a card
    // without enough samples of its own takes the exporters' overall one.
    let mut card_at: BTreeMap<Vec<String>, Intervals> = BTreeMap::new();
    for (card, r) in &cards {
        let key = card[..card.len() - 1].to_vec();
        card_at
            .entry(key)
            .or_insert_with(|| Intervals::of(std::iter::once(r), step, dcgm));
    }
    Scrapes {
        ksm,
        ksm_at,
        has_phase,
        cards,
        dcgm,
        dcgm_intervals,
        card_at,
    }
}

/// Each node's labels and allocatable resources per window, with the samples behind them.
fn nodes_of(a: &Answers, ksm_at: &Intervals, stepf: f64) -> BTreeMap<String, Node> {
    let mut nodes: BTreeMap<String, Node> = BTreeMap::new();
    for (g, w) in a.get(Q::NodeLabels) {
        let name = &g[col(Q::NodeLabels, "node")];
        if name.is_empty() || w.is_empty() {
            continue;
        }
        let n = nodes.entry(name.clone()).or_insert_with(|| Node {
            labels: BTreeMap::new(),
            alloc: BTreeMap::new(),
        });
        for (i, l) in super::query::NODE_LABELS.iter().enumerate() {
            if !g[i].is_empty() {
                n.labels.insert((*l).to_owned(), g[i].clone());
            }
        }
    }
    let counts: BTreeMap<(&str, &str), &BTreeMap<u32, f64>> = a
        .get(Q::NodeScraped)
        .map(|(g, r)| {
            (
                (
                    g[col(Q::NodeScraped, "node")].as_str(),
                    g[col(Q::NodeScraped, "resource")].as_str(),
                ),
                r,
            )
        })
        .collect();
    for (g, w) in a.get(Q::NodeAllocatable) {
        let (name, res) = (
            &g[col(Q::NodeAllocatable, "node")],
            &g[col(Q::NodeAllocatable, "resource")],
        );
        if name.is_empty() {
            continue;
        }
        let c = counts.get(&(name.as_str(), res.as_str()));
        let n = nodes.entry(name.clone()).or_insert_with(|| Node {
            labels: BTreeMap::new(),
            alloc: BTreeMap::new(),
        });
        let e = n.alloc.entry(res.clone()).or_default();
        for (k, v) in w {
            let count = c
                .and_then(|c| c.get(k))
                .copied()
                .unwrap_or(stepf / ksm_at.at(*k).unwrap_or(stepf));
            e.insert(*k, (*v, count));
        }
    }
    nodes
}

/// Each pod's requests by container and resource, the node it ran on per window and longest,
/// and the node names those windows index.
fn requests(
    a: &Answers,
    catalog: &Catalog,
    has_phase: bool,
) -> (BTreeMap<(String, String), PodReq>, Vec<String>) {
    let mut reqs: BTreeMap<(String, String), PodReq> = BTreeMap::new();
    let mut node_names: Vec<String> = Vec::new();
    let mut node_ids: BTreeMap<String, u32> = BTreeMap::new();
    for (q, init) in [(Q::Requests, false), (Q::InitRequests, true)] {
        for (g, w) in a.get(q) {
            let (ns, pod, container, node, res) = (
                &g[col(q, "namespace")],
                &g[col(q, "pod")],
                &g[col(q, "container")],
                &g[col(q, "node")],
                &g[col(q, "resource")],
            );
            if ns.is_empty() || pod.is_empty() {
                continue;
            }
            let r = reqs.entry((ns.clone(), pod.clone())).or_default();
            // A Pending MIG request is its profile's share of a GPU (2g.20gb: 2/7), as a
            // running one is; `nvidia.com/gpu` takes its node's replica share below.
            let mig_share = if res == "nvidia_com_gpu" {
                1.0
            } else {
                super::telemetry::resource_share(catalog, res).unwrap_or(1.0)
            };
            for (k, v) in w {
                let e = r.any.entry(*k).or_default();
                *e = e.max(*v * mig_share);
            }
            r.any_resources.insert(res.clone());
            if node.is_empty() && has_phase {
                continue;
            }
            if !node.is_empty() {
                let id = *node_ids.entry(node.clone()).or_insert_with(|| {
                    node_names.push(node.clone());
                    (node_names.len() - 1) as u32
                });
                for k in w.keys() {
                    r.node_at.insert(*k, id);
                }
            }
            let by = if init { &mut r.init } else { &mut r.app };
            let e = by
                .entry(container.clone())
                .or_default()
                .entry(res.clone())
                .or_default();
            for (k, v) in w {
                let x = e.entry(*k).or_default();
                *x = x.max(*v);
            }
        }
    }
    // A pod's node is the one that held it longest (its usage and pool follow it); each
    // window's allocation goes to the node of that window.
    for r in reqs.values_mut() {
        let mut held: BTreeMap<&String, usize> = BTreeMap::new();
        for n in r.node_at.values() {
            *held.entry(&node_names[*n as usize]).or_default() += 1;
        }
        r.node = held
            .into_iter()
            .max_by_key(|(_, c)| *c)
            .map(|(n, _)| n.clone());
    }
    (reqs, node_names)
}

/// Each pod's phases and waiting reasons per window, by (namespace, pod).
struct PodStates<'a> {
    running: BTreeMap<(String, String), &'a BTreeMap<u32, f64>>,
    pending: BTreeMap<(String, String), &'a BTreeMap<u32, f64>>,
    crashloop: BTreeMap<(String, String), BTreeMap<u32, f64>>,
    image_pull: BTreeMap<(String, String), BTreeMap<u32, f64>>,
    scheduled_known: BTreeSet<(String, String)>,
    unscheduled: BTreeMap<(String, String), &'a BTreeMap<u32, f64>>,
    sidecars: BTreeSet<(String, String, String)>,
}

fn pod_states(a: &Answers) -> PodStates<'_> {
    let per_pod = |q: Q| -> BTreeMap<(String, String), &BTreeMap<u32, f64>> {
        a.get(q)
            .map(|(g, r)| {
                (
                    (g[col(q, "namespace")].clone(), g[col(q, "pod")].clone()),
                    r,
                )
            })
            .collect()
    };
    let running = per_pod(Q::Running);
    let pending = per_pod(Q::Pending);
    // Windows' samples of a pod's containers waiting for a reason, by (pod, reason).
    let waiting = |reasons: &[&str]| -> BTreeMap<(String, String), BTreeMap<u32, f64>> {
        let mut out: BTreeMap<(String, String), BTreeMap<u32, f64>> = BTreeMap::new();
        for (g, r) in a.get(Q::Waiting) {
            if !reasons.contains(&g[col(Q::Waiting, "reason")].as_str()) {
                continue;
            }
            let e = out
                .entry((
                    g[col(Q::Waiting, "namespace")].clone(),
                    g[col(Q::Waiting, "pod")].clone(),
                ))
                .or_default();
            for (k, v) in r {
                let x = e.entry(*k).or_default();
                *x = x.max(*v);
            }
        }
        out
    };
    let crashloop = waiting(&["CrashLoopBackOff"]);
    let image_pull = waiting(&["ErrImagePull", "ImagePullBackOff"]);
    let scheduled_known: BTreeSet<(String, String)> = a
        .get(Q::Scheduled)
        .map(|(g, _)| {
            (
                g[col(Q::Scheduled, "namespace")].clone(),
                g[col(Q::Scheduled, "pod")].clone(),
            )
        })
        .collect();
    let unscheduled: BTreeMap<(String, String), &BTreeMap<u32, f64>> = a
        .get(Q::Scheduled)
        .filter(|(g, _)| g[col(Q::Scheduled, "condition")] == "false")
        .map(|(g, r)| {
            (
                (
                    g[col(Q::Scheduled, "namespace")].clone(),
                    g[col(Q::Scheduled, "pod")].clone(),
                ),
                r,
            )
        })
        .collect();
    let sidecars: BTreeSet<(String, String, String)> = a
        .get(Q::Sidecars)
        .filter(|(_, r)| r.values().any(|v| *v > 0.0))
        .map(|(g, _)| {
            (
                g[col(Q::Sidecars, "namespace")].clone(),
                g[col(Q::Sidecars, "pod")].clone(),
                g[col(Q::Sidecars, "container")].clone(),
            )
        })
        .collect();
    PodStates {
        running,
        pending,
        crashloop,
        image_pull,
        scheduled_known,
        unscheduled,
        sidecars,
    }
}

/// Pod labels that name a workload, and the controller that made each pod.
type Named = (
    BTreeMap<(String, String), String>,
    BTreeMap<(String, String), String>,
);

/// A pod's workload labels: render's `gpuplan.io/workload` first, else
/// `app.kubernetes.io/name`; and its controllers.
fn named_by(a: &Answers) -> Named {
    let label_of = |q: Q, label: &'static str| {
        a.get(q).map(move |(g, _)| {
            (
                (g[col(q, "namespace")].clone(), g[col(q, "pod")].clone()),
                g[col(q, label)].clone(),
            )
        })
    };
    let mut apps: BTreeMap<(String, String), String> =
        label_of(Q::PodLabels, "label_app_kubernetes_io_name").collect();
    apps.extend(label_of(Q::WorkloadLabels, "label_gpuplan_io_workload"));
    (apps, super::owners::controllers(a))
}

/// A node's pool by the names render gave; a node without one takes the declared pool of a
/// workload running on it (and is a node from then on, labels or not).
fn node_pools<'p>(
    plan: &'p Plan,
    catalog: &Catalog,
    a: &Answers,
    nodes: &mut BTreeMap<String, Node>,
    reqs: &BTreeMap<(String, String), PodReq>,
    apps: &BTreeMap<(String, String), String>,
    controllers: &BTreeMap<(String, String), String>,
) -> BTreeMap<String, &'p crate::plan::raw::Pool> {
    let names = PoolNames::new(plan, catalog);
    let mut node_pool: BTreeMap<String, &crate::plan::raw::Pool> = BTreeMap::new();
    for (name, n) in nodes.iter() {
        if let Some(p) = names.pool(plan, &n.labels) {
            node_pool.insert(name.clone(), p);
        }
    }
    for ((ns, pod), r) in reqs.iter().filter(|_| !a.gpus_as_given) {
        let Some(node) = &r.node else { continue };
        if node_pool.contains_key(node) {
            continue;
        }
        let key = (ns.clone(), pod.clone());
        let probe = PodSeries {
            namespace: ns.clone(),
            pod: pod.clone(),
            app: apps.get(&key).cloned(),
            controller: controllers.get(&key).cloned(),
            ..PodSeries::default()
        };
        if let Some(p) = owner(plan, &probe).and_then(|w| plan.workload_pools(w).next()) {
            node_pool.insert(node.clone(), p.get());
        }
    }
    for node in node_pool.keys() {
        nodes.entry(node.clone()).or_insert_with(|| Node {
            labels: BTreeMap::new(),
            alloc: BTreeMap::new(),
        });
    }
    node_pool
}

/// Per host, what dcgm-exporter says of its cards: the physical cards (UUIDs, not MIG
/// instances), the parent cards MIG instances name, and the GPU model (`modelName`).
type CardMaps<'a> = (
    BTreeMap<&'a str, BTreeSet<&'a str>>,
    BTreeMap<&'a str, BTreeSet<&'a str>>,
    BTreeMap<&'a str, &'a str>,
);

fn card_maps<'a>(
    a: &'a Answers,
    cards: &'a BTreeMap<Vec<String>, BTreeMap<u32, f64>>,
) -> CardMaps<'a> {
    // The distinct physical cards (UUIDs, not MIG instances) dcgm-exporter reports per node.
    let mut physical_cards: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    // A MIG instance's row carries its parent card's UUID: the cards a MIG node has.
    let mut parent_cards: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for card in cards.keys() {
        let (host, uuid, instance) = (&card[1], &card[3], &card[4]);
        if !host.is_empty() && !uuid.is_empty() {
            parent_cards.entry(host).or_default().insert(uuid);
            if instance.is_empty() {
                physical_cards.entry(host).or_default().insert(uuid);
            }
        }
    }
    // What dcgm-exporter calls each node's GPUs (`modelName`, exported on a stock install):
    // a node's model where no plan pool or GPU feature discovery label says.
    let mut dcgm_models: BTreeMap<&str, &str> = BTreeMap::new();
    for q in [Q::Active, Q::Util] {
        for (g, _) in a.get(q) {
            let (host, model) = (&g[col(q, "Hostname")], &g[col(q, "modelName")]);
            if !host.is_empty() && !model.is_empty() {
                dcgm_models.entry(host).or_insert(model);
            }
        }
    }
    (physical_cards, parent_cards, dcgm_models)
}

/// Each node's series and the unit its GPUs are counted in, with what was learnt on the way.
struct NodeStage {
    units: BTreeMap<String, Unit>,
    out_nodes: BTreeMap<String, NodeSeries>,
    /// Nodes whose time-slicing replicas came from counting their cards.
    replicas_from_cards: usize,
    /// Resources no catalog MIG profile names.
    unknown_mig: BTreeSet<String>,
}

/// Each node's capacity per window in its unit, the whole cards paid for where MIG leaves
/// slices unconfigured, and its pool and GPU model.
#[allow(clippy::too_many_arguments)]
fn node_series(
    plan: &Plan,
    catalog: &Catalog,
    a: &Answers,
    grid: Grid,
    nodes: &BTreeMap<String, Node>,
    node_pool: &BTreeMap<String, &crate::plan::raw::Pool>,
    cards: &BTreeMap<Vec<String>, BTreeMap<u32, f64>>,
    ksm_at: &Intervals,
) -> NodeStage {
    let stepf = grid.step as f64;
    let secs = seconds_of(stepf);
    let mut units: BTreeMap<String, Unit> = BTreeMap::new();
    let (physical_cards, parent_cards, dcgm_models) = card_maps(a, cards);
    let mut replicas_from_cards = 0usize;
    let mut out_nodes: BTreeMap<String, NodeSeries> = BTreeMap::new();
    let mut unknown_mig = BTreeSet::new();
    for (name, n) in nodes {
        let gpus = n
            .alloc
            .get("nvidia_com_gpu")
            .and_then(|w| w.values().map(|x| x.0).reduce(f64::max));
        let u = unit_of(
            plan,
            catalog,
            &n.labels,
            gpus,
            node_pool.get(name).copied(),
            physical_cards.get(name.as_str()).map(|s| s.len() as u32),
        );
        replicas_from_cards += usize::from(u.from_cards);
        let mut capacity: BTreeMap<i64, f64> = BTreeMap::new();
        let mut physical: BTreeMap<u32, f64> = BTreeMap::new();
        let mut mig = u.mig;
        for (res, w) in &n.alloc {
            let share = if res == "nvidia_com_gpu" {
                u.share
            } else if let Some(s) = super::telemetry::resource_share(catalog, res) {
                mig = true;
                s
            } else {
                unknown_mig.insert(res.clone());
                continue;
            };
            for (k, (avg, count)) in w {
                *capacity.entry(grid.start(*k)).or_default() +=
                    avg * share * secs(*count, ksm_at.at(*k));
                *physical.entry(*k).or_default() += avg * share;
            }
        }
        let offered = physical.values().copied().fold(0.0, f64::max);
        let cards = if mig {
            whole_cards(
                plan,
                catalog,
                &n.labels,
                node_pool.get(name).copied(),
                parent_cards.get(name.as_str()).map(|s| s.len() as u32),
                offered,
            )
        } else {
            offered
        };
        // Only a MIG node's differs from what it offers: the others leave it empty (read as
        // `capacity`), so no node holds a second copy of its windows.
        let paid = if cards > offered + 1e-9 {
            paid_for(&capacity, &physical, cards, |k| grid.start(k))
        } else {
            BTreeMap::new()
        };
        let label = |k: &str| n.labels.get(k).cloned();
        let pool = n.pool_label().map(str::to_owned);
        let model = node_pool
            .get(name)
            .copied()
            .and_then(|p| catalog.sku(plan.provider(), p.sku.get()))
            .map(|s| s.gpu_model.clone())
            .or_else(|| label("label_nvidia_com_gpu_product"))
            .or_else(|| dcgm_models.get(name.as_str()).map(|m| (*m).to_owned()));
        out_nodes.insert(
            name.clone(),
            NodeSeries {
                pool,
                plan_pool: node_pool.get(name).map(|p| p.name.get().clone()),
                model,
                replicas: u.replicas,
                gpus: offered,
                cards,
                capacity,
                paid,
                allocated: BTreeMap::new(),
                signal: None,
            },
        );
        units.insert(name.clone(), u);
    }
    NodeStage {
        units,
        out_nodes,
        replicas_from_cards,
        unknown_mig,
    }
}

/// What every pod's series is read against.
struct PodCx<'a> {
    plan: &'a Plan,
    catalog: &'a Catalog,
    a: &'a Answers,
    grid: Grid,
    ksm_at: &'a Intervals,
    has_phase: bool,
    units: &'a BTreeMap<String, Unit>,
    states: &'a PodStates<'a>,
    apps: &'a BTreeMap<(String, String), String>,
    controllers: &'a BTreeMap<(String, String), String>,
    node_names: &'a [String],
}

/// GPUs per window of a pod's app containers (and sidecars), or of its largest init
/// container where that is more, each resource at its share of a GPU.
fn gpus_by_window(
    cx: &PodCx<'_>,
    key: &(String, String),
    r: &PodReq,
    share_of: &dyn Fn(&str) -> Option<f64>,
    unknown_mig: &mut BTreeSet<String>,
) -> BTreeMap<u32, f64> {
    let mut app: BTreeMap<u32, f64> = BTreeMap::new();
    let mut init: BTreeMap<u32, f64> = BTreeMap::new();
    let mut add =
        |target: &mut BTreeMap<u32, f64>, res: &BTreeMap<String, BTreeMap<u32, f64>>, sum: bool| {
            for (res, w) in res {
                let Some(s) = share_of(res) else {
                    unknown_mig.insert(res.clone());
                    continue;
                };
                for (k, v) in w {
                    let e = target.entry(*k).or_default();
                    *e = if sum { *e + v * s } else { e.max(v * s) };
                }
            }
        };
    for c in r.app.values() {
        add(&mut app, c, true);
    }
    for (name, c) in &r.init {
        if cx
            .states
            .sidecars
            .contains(&(key.0.clone(), key.1.clone(), name.clone()))
        {
            add(&mut app, c, true);
        } else {
            add(&mut init, c, false);
        }
    }
    for (k, v) in init {
        let e = app.entry(k).or_default();
        *e = e.max(v);
    }
    app
}

/// A Pending pod's GPU-seconds waiting, and of those the unscheduled ones and those whose
/// image would not pull; `share` is its `nvidia.com/gpu` share of a GPU.
fn pending_seconds(
    cx: &PodCx<'_>,
    key: &(String, String),
    r: &PodReq,
    p: &mut PodSeries,
    share: f64,
) {
    let stepf = cx.grid.step as f64;
    let secs = seconds_of(stepf);
    let Some(pend) = cx.states.pending.get(key) else {
        return;
    };
    p.scheduled_known = cx.states.scheduled_known.contains(key);
    let unsched = cx.states.unscheduled.get(key);
    for (k, c) in *pend {
        let gpus = r.any.get(k).copied().unwrap_or(0.0);
        p.pending += gpus * secs(*c, cx.ksm_at.at(*k)) * share;
        // Samples unscheduled within the Pending ones of the window.
        let u = unsched
            .and_then(|u| u.get(k))
            .copied()
            .unwrap_or(0.0)
            .min(*c);
        p.unscheduled += gpus * secs(u, cx.ksm_at.at(*k)) * share;
        // Scheduled, but its image would not pull.
        let pull = cx
            .states
            .image_pull
            .get(key)
            .and_then(|w| w.get(k))
            .copied()
            .unwrap_or(0.0)
            .min(*c - u);
        p.image_pull += gpus * secs(pull, cx.ksm_at.at(*k)) * share;
    }
}

/// One pod's series: GPUs held per window (app containers and sidecars, the largest init
/// container), GPU-seconds allocated to the node of each window, and Pending, unscheduled,
/// image-pull and crash-loop seconds. A Pending pod with no node goes to `unplaced`.
fn pod_series(
    cx: &PodCx<'_>,
    key: &(String, String),
    r: &PodReq,
    out_nodes: &mut BTreeMap<String, NodeSeries>,
    unknown_mig: &mut BTreeSet<String>,
    unplaced: &mut Vec<(String, String)>,
) -> PodSeries {
    let step = cx.grid.step;
    let stepf = step as f64;
    let secs = seconds_of(stepf);
    let unit = r
        .node
        .as_ref()
        .and_then(|n| cx.units.get(n))
        .filter(|_| !cx.a.gpus_as_given);
    let share_of = |res: &str| -> Option<f64> {
        if res == "nvidia_com_gpu" {
            Some(unit.map_or(1.0, |u| u.share))
        } else {
            super::telemetry::resource_share(cx.catalog, res)
        }
    };
    let app = gpus_by_window(cx, key, r, &share_of, unknown_mig);
    let run = cx.states.running.get(key);
    let mut p = PodSeries {
        namespace: key.0.clone(),
        pod: key.1.clone(),
        app: cx.apps.get(key).cloned(),
        controller: cx.controllers.get(key).cloned(),
        only_on_gpu: r.node.as_ref().and_then(|n| {
            let model = cx.catalog.gpu_named(out_nodes.get(n)?.model.as_deref()?)?;
            let held = pod_gpu(cx.units.get(n), &r.any_resources);
            super::owners::only_on_gpu(cx.plan, cx.catalog, &key.0, &model.name, held)
        }),
        node: r.node.clone(),
        ..PodSeries::default()
    };
    for (k, gpus) in &app {
        let held = if cx.has_phase {
            secs(
                run.and_then(|r| r.get(k)).copied().unwrap_or(0.0),
                cx.ksm_at.at(*k),
            )
        } else {
            stepf
        };
        if held > 0.0 && *gpus > 0.0 {
            p.allocated.insert(cx.grid.start(*k), gpus * held);
            p.held_seconds += held;
            p.gpus
                .insert(cx.grid.start(*k), gpus * (held / stepf).min(1.0));
        }
    }
    carry_levels(&mut p.gpus, step, |ts| {
        cx.ksm_at.at(((ts - cx.grid.from) / step) as u32)
    });
    pending_seconds(
        cx,
        key,
        r,
        &mut p,
        share_of("nvidia_com_gpu").unwrap_or(1.0),
    );
    // A MIG resource of the mixed strategy is already at its profile's share.
    let whole_gpus = r.any_resources.iter().all(|res| res == "nvidia_com_gpu");
    if p.pending > 0.0 && unit.is_none() && whole_gpus && !cx.a.gpus_as_given {
        unplaced.push(key.clone());
    }
    // Crash-looping while it held GPUs.
    if let Some(cl) = cx.states.crashloop.get(key) {
        for (k, c) in cl {
            if p.allocated.contains_key(&cx.grid.start(*k)) {
                p.crashloop += secs(*c, cx.ksm_at.at(*k));
            }
        }
    }
    // Each window's GPU-seconds to the node that held the pod then.
    for (t, v) in &p.allocated {
        let k = ((t - cx.grid.from) / step) as u32;
        let node = r
            .node_at
            .get(&k)
            .map(|n| &cx.node_names[*n as usize])
            .or(r.node.as_ref());
        if let Some(n) = node.and_then(|n| out_nodes.get_mut(n)) {
            *n.allocated.entry(*t).or_default() += v;
        }
    }
    compact(&mut p.allocated);
    compact(&mut p.gpus);
    p
}

/// A Pending pod has no node, so no node says whether its `nvidia.com/gpu` is a time-sliced
/// replica or (MIG single strategy) a profile. Its workload does: the share its running pods
/// held (the most common), else its declared pool's; else a whole GPU. How many were shared.
fn pending_shares(
    plan: &Plan,
    catalog: &Catalog,
    reqs: &BTreeMap<(String, String), PodReq>,
    units: &BTreeMap<String, Unit>,
    pods: &mut BTreeMap<(String, String), PodSeries>,
    unplaced: &[(String, String)],
) -> usize {
    if unplaced.is_empty() {
        return 0;
    }
    let mut seen: BTreeMap<&str, BTreeMap<u64, usize>> = BTreeMap::new();
    for (key, r) in reqs {
        let (Some(w), Some(u)) = (
            pods.get(key).and_then(|p| owner(plan, p)),
            r.node.as_ref().and_then(|n| units.get(n)),
        ) else {
            continue;
        };
        *seen
            .entry(w)
            .or_default()
            .entry(u.share.to_bits())
            .or_default() += 1;
    }
    let mut shared = 0;
    for key in unplaced {
        let Some(p) = pods.get_mut(key) else { continue };
        let Some(w) = owner(plan, p) else { continue };
        let measured = seen.get(w).and_then(|m| {
            m.iter()
                .max_by_key(|(_, n)| **n)
                .map(|(bits, _)| f64::from_bits(*bits))
        });
        // The plan's word on the pool it is declared on, read as a node of it would be.
        let declared = plan.workload_pools(w).next().map(|pool| {
            unit_of(
                plan,
                catalog,
                &BTreeMap::new(),
                None,
                Some(pool.get()),
                None,
            )
            .share
        });
        if let Some(share) = measured.or(declared).filter(|s| *s < 1.0) {
            p.pending *= share;
            p.unscheduled *= share;
            p.image_pull *= share;
            shared += 1;
        }
    }
    shared
}

/// A GPU device as dcgm-exporter names it (host, card, instance), or for a series that names
/// no card (a hand-made export) its pod's own device.
type Dev = Vec<String>;

/// Each device's usage samples by signal, pod and window (the highest value and the most
/// samples of a window), and its MIG profile.
fn devices_of(a: &Answers) -> BTreeMap<Dev, DevUse> {
    // A series that names no card (a hand-made export) is its pod's own device.
    let device_of = |q: Q, g: &Vec<String>| -> Dev {
        card(q, g).unwrap_or_else(|| {
            let mut d = labels(q, g, &CARD);
            d.extend(labels(q, g, &["namespace", "pod"]));
            d
        })
    };
    // device -> pod -> window -> (sum, count), and the device's MIG profile
    let mut devices: BTreeMap<Dev, DevUse> = BTreeMap::new();
    for (q, qc, sig) in [
        (Q::Active, Q::ActiveCount, Signal::GrEngineActive),
        (Q::Util, Q::UtilCount, Signal::GpuUtil),
    ] {
        let cnt: BTreeMap<&Vec<String>, &BTreeMap<u32, f64>> = a.get(qc).collect();
        for (g, w) in a.get(q) {
            let d = devices.entry(device_of(q, g)).or_default();
            d.profile.clone_from(&g[col(q, "GPU_I_PROFILE")]);
            let pod = (g[col(q, "namespace")].clone(), g[col(q, "pod")].clone());
            let per = d.by_signal.entry(sig).or_default().entry(pod).or_default();
            for (k, v) in w {
                let c = cnt.get(g).and_then(|c| c.get(k)).copied().unwrap_or(1.0);
                let e = per.entry(*k).or_insert((0.0, 0.0));
                e.0 = e.0.max(*v);
                e.1 = e.1.max(c);
            }
        }
    }
    devices
}

/// What attributing usage found beside the pods' own usage.
#[derive(Default)]
struct Usage {
    /// Devices reporting usage with no pod named.
    unlabelled: usize,
    /// Usage no GPU-requesting pod held, by node, GPU and the pod the exporter named.
    orphans: BTreeMap<(String, String, String, String), f64>,
    /// Time-sliced nodes: busy GPU-seconds per window, split by `share_busy`.
    shared_busy: BTreeMap<String, BTreeMap<i64, f64>>,
    /// Devices read from utilisation for want of the profiling metric.
    fallbacks: usize,
    /// MIG profiles the catalog does not know.
    unknown_mig: BTreeSet<String>,
}

/// What a device's usage is read against.
struct UsageCx<'a> {
    catalog: &'a Catalog,
    grid: Grid,
    units: &'a BTreeMap<String, Unit>,
    card_at: &'a BTreeMap<Vec<String>, Intervals>,
    dcgm: Option<f64>,
}

/// Every device's usage to the pods it names, with what was found beside them.
fn usage_of(
    cx: &UsageCx<'_>,
    a: &Answers,
    pods: &mut Pods,
    out_nodes: &mut BTreeMap<String, NodeSeries>,
) -> Usage {
    let mut usage = Usage::default();
    for (dk, d) in &devices_of(a) {
        device_usage(cx, dk, d, pods, out_nodes, &mut usage);
    }
    usage
}

/// A pod's share `mine` of a device's busy seconds in the window starting at `t`: its usage
/// while it holds GPUs (this window or, when a sample was jittered across the boundary, a
/// neighbour); an orphan's when no GPU-requesting pod of that name exists.
fn attribute(
    dk: &Dev,
    n: &(String, String),
    (t, step): (i64, i64),
    signal: Signal,
    mine: f64,
    pods: &mut Pods,
    orphans: &mut BTreeMap<(String, String, String, String), f64>,
) {
    match pods.get_mut(n) {
        // Usage counts while the pod holds GPUs (this window or, when a sample
        // was jittered across the boundary, a neighbour).
        Some(p) if holds_near(p, t, step) => {
            p.has_usage = true;
            p.signal = Some(p.signal.map_or(signal, |s| s.max(signal)));
            *p.used.entry(t).or_default() += mine;
        }
        Some(p) => p.has_usage = true,
        None => {
            let gpu = match (dk.get(2), dk.get(4)) {
                (Some(g), Some(i)) if !i.is_empty() => format!("{g}/MIG {i}"),
                (Some(g), _) => g.clone(),
                _ => String::new(),
            };
            let host = dk.get(1).cloned().unwrap_or_default();
            *orphans
                .entry((host, gpu, n.0.clone(), n.1.clone()))
                .or_default() += mine
        }
    }
}

/// One device's busy seconds per window to the pods it names: the profiling metric, or
/// utilisation on a non-MIG GPU where that is absent or flat at zero while utilisation moves;
/// a time-sliced node's to `shared_busy`, a pod nobody requested GPUs for to `orphans`.
fn device_usage(
    cx: &UsageCx<'_>,
    dk: &Dev,
    d: &DevUse,
    pods: &mut BTreeMap<(String, String), PodSeries>,
    out_nodes: &mut BTreeMap<String, NodeSeries>,
    acc: &mut Usage,
) {
    let step = cx.grid.step;
    let stepf = step as f64;
    let secs = seconds_of(stepf);
    let iv = cx.card_at.get(dk);
    let dcgm_at = |k: u32| iv.map_or(cx.dcgm, |i| i.at(k));
    let peak = |s: Signal| {
        d.by_signal.get(&s).map(|m| {
            m.values()
                .flat_map(|w| w.values())
                .map(|x| x.0)
                .fold(0.0, f64::max)
        })
    };
    let mig = !d.profile.is_empty();
    let signal = match (peak(Signal::GrEngineActive), peak(Signal::GpuUtil)) {
        (Some(_), _) if mig => Signal::GrEngineActive,
        (Some(a), Some(u)) if a <= 0.0 && u > 0.0 => Signal::GpuUtil,
        (Some(_), _) => Signal::GrEngineActive,
        (None, Some(_)) if !mig => Signal::GpuUtil,
        _ => return,
    };
    if signal == Signal::GpuUtil {
        acc.fallbacks += 1;
    }
    let scale = match signal {
        Signal::GrEngineActive => 1.0,
        Signal::GpuUtil => 0.01,
    };
    let weight = if mig {
        match super::telemetry::mig_share(cx.catalog, &d.profile) {
            Some(w) => w,
            None => {
                acc.unknown_mig.insert(d.profile.clone());
                return;
            }
        }
    } else {
        1.0
    };
    let Some(by_pod) = d.by_signal.get(&signal) else {
        return;
    };
    // Per window, each named pod's busy seconds on the device: a window's samples' sum
    // over their count, times the time they cover.
    let mut per: BTreeMap<u32, Vec<PodBusy>> = BTreeMap::new();
    for (pod, w) in by_pod {
        if pod.0.is_empty() || pod.1.is_empty() {
            continue;
        }
        for (k, (sum, count)) in w {
            let b = sum / count.max(1.0) * secs(*count, dcgm_at(*k)) * scale * weight;
            per.entry(*k).or_default().push((pod, b, *count));
        }
    }
    if per.is_empty() {
        acc.unlabelled += 1;
        return;
    }
    for (k, rows) in per {
        let full = dcgm_at(k).map(|i| stepf / i);
        let t = cx.grid.start(k);
        // Rows of one window are either one after another (a job ends, the next starts,
        // or the GPU falls back to the exporter's own labels): their samples add up to
        // at most a window's; or copies of one card (`--kubernetes-virtual-gpus`): each
        // a window's worth. The card was busy their sum, or one copy.
        let (total, top, count): (f64, f64, f64) =
            rows.iter().fold((0.0, 0.0, 0.0), |(s, m, c), r| {
                (s + r.1, f64::max(m, r.1), c + r.2)
            });
        let copies = rows.len() > 1 && full.is_some_and(|f| count > f + 1.0);
        let busy = if copies { top } else { total };
        // The node of the pods it names, from kube-state-metrics.
        let node = rows
            .iter()
            .find_map(|r| pods.get(r.0).and_then(|p| p.node.clone()));
        let shared = node
            .as_ref()
            .and_then(|n| cx.units.get(n))
            .is_some_and(|u| u.replicas > 1 && !mig);
        if let Some(n) = node.as_ref().and_then(|n| out_nodes.get_mut(n)) {
            n.signal = Some(n.signal.map_or(signal, |s| s.max(signal)));
        }
        if shared {
            *acc.shared_busy
                .entry(node.unwrap_or_default())
                .or_default()
                .entry(t)
                .or_default() += busy;
            continue;
        }
        for (n, b, _) in rows {
            // Copies share the card equally; rows one after another keep their own.
            let mine = if copies {
                busy / total.max(1e-12) * b
            } else {
                b
            };
            attribute(dk, n, (t, step), signal, mine, pods, &mut acc.orphans);
        }
    }
}

/// A time-sliced node's busy seconds go to the pods holding its GPUs, by their share; a pod is
/// never busier than it was held; a pod on a time-sliced node with usage has usage data.
fn settle_usage(
    pods: &mut BTreeMap<(String, String), PodSeries>,
    out_nodes: &BTreeMap<String, NodeSeries>,
    shared_busy: BTreeMap<String, BTreeMap<i64, f64>>,
    step: i64,
) {
    for (node, busy) in shared_busy {
        let holders: Vec<(String, String)> = pods
            .iter()
            .filter(|(_, p)| p.node.as_deref() == Some(node.as_str()))
            .map(|(k, _)| k.clone())
            .collect();
        for (t, b) in busy {
            let share = |p: &PodSeries| -> f64 {
                [t - step, t, t + step]
                    .iter()
                    .filter_map(|x| p.allocated.get(x))
                    .copied()
                    .fold(0.0, f64::max)
            };
            let total: f64 = holders.iter().map(|k| share(&pods[k])).sum();
            if total <= 0.0 {
                continue;
            }
            for k in &holders {
                let p = pods.get_mut(k).expect("holder");
                p.has_usage = true;
                let w = share(p);
                if w > 0.0 {
                    *p.used.entry(t).or_default() += b * w / total;
                }
            }
        }
    }
    // A GPU is never busier than it was held: the pod's total used is capped at its total
    // allocated (per window it may be off by a sample jittered across a boundary).
    for p in pods.values_mut() {
        let (a, u): (f64, f64) = (p.allocated.values().sum(), p.used.values().sum());
        if u > a && u > 0.0 {
            let f = a / u;
            p.used.values_mut().for_each(|v| *v *= f);
        }
    }
    for p in pods.values_mut() {
        if !p.has_usage {
            if let Some(n) = p.node.as_ref().and_then(|n| out_nodes.get(n)) {
                p.has_usage = n.signal.is_some() && n.replicas > 1;
            }
        }
    }
}

/// Each node's dcgm-exporter coverage: a pod's windows on a node with usage data, where its
/// exporter reported nothing, are unobserved (never idle); and each node's gaps while
/// kube-state-metrics saw it.
fn dcgm_coverage(
    cards: &BTreeMap<Vec<String>, BTreeMap<u32, f64>>,
    dcgm: Option<f64>,
    grid: Grid,
    nodes: &BTreeMap<String, Node>,
    pods: &mut BTreeMap<(String, String), PodSeries>,
) -> Vec<(String, i64, i64)> {
    let step = grid.step;
    let stepf = step as f64;
    // Usage coverage per node: the windows its dcgm-exporter reported in (a window left empty
    // by a scrape jittered across its boundary counts). A pod that held GPUs on a node that
    // reports usage, in a window it did not, has no data there: never idle.
    let mut dcgm_cover: BTreeMap<String, BTreeSet<u32>> = BTreeMap::new();
    for (card, r) in cards {
        let host = &card[1];
        if !host.is_empty() {
            dcgm_cover.entry(host.clone()).or_default().extend(r.keys());
        }
    }
    for cover in dcgm_cover.values_mut() {
        fill_jitter(cover, dcgm, stepf);
    }
    for p in pods.values_mut() {
        let Some(cover) = p.node.as_ref().and_then(|n| dcgm_cover.get(n)) else {
            continue;
        };
        if !p.has_usage {
            continue;
        }
        for t in p.allocated.keys() {
            let k = ((t - grid.from) / step) as u32;
            if !cover.contains(&k) {
                p.unobserved.insert(*t);
            }
        }
    }
    // Each node's gaps, while kube-state-metrics saw it.
    let mut dcgm_gaps: Vec<(String, i64, i64)> = Vec::new();
    for (node, cover) in &dcgm_cover {
        let Some(n) = nodes.get(node) else { continue };
        let seen: BTreeSet<u32> = n.alloc.values().flat_map(|w| w.keys().copied()).collect();
        let mut run: Option<(u32, u32)> = None;
        for k in seen.iter().copied().chain(std::iter::once(u32::MAX)) {
            let gap = k != u32::MAX && !cover.contains(&k);
            match (&mut run, gap) {
                (Some((_, end)), true) if *end + 1 == k => *end = k,
                (r, g) => {
                    if let Some((a, b)) = r.take() {
                        dcgm_gaps.push((node.clone(), grid.start(a), grid.start(b) + step));
                    }
                    if g {
                        *r = Some((k, k));
                    }
                }
            }
        }
    }
    dcgm_gaps
}

/// Tokens: a counter's increase across resets, from each window's highest value.
fn tokens(a: &Answers, pods: &mut BTreeMap<(String, String), PodSeries>) {
    for (g, w) in a.get(Q::Tokens) {
        let key = (
            g[col(Q::Tokens, "namespace")].clone(),
            g[col(Q::Tokens, "pod")].clone(),
        );
        if let Some(p) = pods.get_mut(&key) {
            p.tokens += w
                .values()
                .zip(w.values().skip(1))
                .map(|(a, b)| if b >= a { b - a } else { *b })
                .sum::<f64>();
        }
    }
}

/// The windows holding any kube-state-metrics data (jitter filled), and those with samples.
fn ksm_coverage(a: &Answers, grid: Grid, ksm: Option<f64>) -> (BTreeSet<u32>, BTreeSet<i64>) {
    let stepf = grid.step as f64;
    let mut covered: BTreeSet<u32> = BTreeSet::new();
    for q in [Q::Scraped, Q::NodeScraped, Q::Requests] {
        for (_, w) in a.get(q) {
            covered.extend(w.keys());
        }
    }
    let sampled: BTreeSet<i64> = covered.iter().map(|k| grid.start(*k)).collect();
    fill_jitter(&mut covered, ksm, stepf);
    (covered, sampled)
}

/// Pods' series by (namespace, pod).
type Pods = BTreeMap<(String, String), PodSeries>;

/// Every pod's series, and the Pending pods no node holds yet, whose `nvidia.com/gpu` share
/// is their workload's.
fn pods_of(
    cx: &PodCx<'_>,
    reqs: &BTreeMap<(String, String), PodReq>,
    out_nodes: &mut BTreeMap<String, NodeSeries>,
    unknown_mig: &mut BTreeSet<String>,
) -> (Pods, Vec<(String, String)>) {
    let mut pods = BTreeMap::new();
    let mut unplaced = Vec::new();
    for (key, r) in reqs {
        let p = pod_series(cx, key, r, out_nodes, unknown_mig, &mut unplaced);
        pods.insert(key.clone(), p);
    }
    (pods, unplaced)
}

/// What reading the data noticed that the review's figures rest on.
struct ReadFacts {
    /// Pods with GPU requests and no phase series.
    no_phase: bool,
    unlabelled: usize,
    replicas_from_cards: usize,
    fallbacks: usize,
    unknown_mig: BTreeSet<String>,
}

fn read_notes(f: ReadFacts) -> Vec<String> {
    let ReadFacts {
        no_phase,
        unlabelled,
        replicas_from_cards,
        fallbacks,
        unknown_mig,
    } = f;
    let mut notes = Vec::new();
    if no_phase {
        notes.push("no kube_pod_status_phase series: every pod with GPU requests is counted as running (finished and Pending pods included); export it with kube-state-metrics".into());
    }
    if unlabelled > 0 {
        notes.push(format!("{unlabelled} GPU(s) report usage with no pod: no pod held them, or dcgm-exporter runs without --kubernetes"));
    }
    if replicas_from_cards > 0 {
        notes.push(format!(
            "{replicas_from_cards} node(s) carry no nvidia.com/gpu.count or replicas label: their time-slicing replicas per card are allocatable nvidia.com/gpu over the distinct cards (UUIDs) dcgm-exporter reports for them"
        ));
    }
    if fallbacks > 0 {
        notes.push(format!("{fallbacks} GPU(s) have no usable DCGM_FI_PROF_GR_ENGINE_ACTIVE (absent, or flat at 0 while utilisation moves): read from DCGM_FI_DEV_GPU_UTIL / 100 instead"));
    }
    if !unknown_mig.is_empty() {
        notes.push(format!(
            "MIG profile(s) not in the catalog skipped: {}",
            unknown_mig.into_iter().collect::<Vec<_>>().join(", ")
        ));
    }
    notes
}

/// Pods that held, waited for or used nothing go; the rest, and the nodes, are compacted.
fn compact_series(
    pods: &mut BTreeMap<(String, String), PodSeries>,
    out_nodes: &mut BTreeMap<String, NodeSeries>,
) {
    pods.retain(|_, p| !p.allocated.is_empty() || p.pending > 0.0 || !p.used.is_empty());
    for p in pods.values_mut() {
        compact(&mut p.used);
    }
    for n in out_nodes.values_mut() {
        compact(&mut n.capacity);
        compact(&mut n.allocated);
    }
}

/// Where the data covers less than the window asked for, what the figures are over.
fn coverage_note(covered: &BTreeSet<u32>, grid: Grid) -> Option<String> {
    let step = grid.step;
    let requested = grid.to() - grid.from;
    let span = covered.len() as i64 * step;
    (!covered.is_empty() && (span as f64) < 0.98 * requested as f64).then(|| {
        format!(
            "the data covers {:.1} h of the {:.1} h window ({} to {}): costs, idle floors and advice are over the {:.1} h covered, never over hours without data",
            span as f64 / 3600.0,
            requested as f64 / 3600.0,
            super::telemetry::format_time(covered.first().map_or(grid.from, |k| grid.start(*k))),
            super::telemetry::format_time(covered.last().map_or(grid.from, |k| grid.start(*k) + step)),
            span as f64 / 3600.0
        )
    })
}

/// Usage no GPU-requesting pod held, above the noise floor.
fn orphans_of(orphans: BTreeMap<(String, String, String, String), f64>) -> Vec<Orphan> {
    orphans
        .into_iter()
        // Below a tenth of a GPU-hour over the window it is noise (a device that reports
        // a sliver of activity with no pod of its own), not work to find.
        .filter(|(_, used)| *used >= ORPHAN_FLOOR)
        .map(|((node, gpu, namespace, pod), used)| Orphan {
            node,
            gpu,
            namespace,
            pod,
            used_gpu_seconds: used,
        })
        .collect()
}

/// Several clusters in one store (Thanos, Mimir) must not be merged silently: without a
/// cluster named, the data must hold one.
fn one_cluster(a: &Answers, cluster: Option<&str>) -> Result<(), super::ReviewError> {
    let clusters = a.clusters();
    if cluster.is_none() && clusters.len() > 1 {
        return Err(super::ReviewError::Data(format!(
            "the data holds {} clusters ({}): review one with `--cluster NAME`, or the fleet with `--all-clusters` (or `--cluster` once per cluster)",
            clusters.len(),
            clusters.iter().cloned().collect::<Vec<_>>().join(", ")
        )));
    }
    Ok(())
}

/// The telemetry of one cluster from the queries' answers: its nodes and pods with their series
/// per window, stage by stage.
pub(crate) fn assemble(
    a: &Answers,
    grid: Grid,
    plan: &Plan,
    catalog: &Catalog,
    cluster: Option<&str>,
    source: String,
    mut notes: Vec<String>,
) -> Result<Telemetry, super::ReviewError> {
    let step = grid.step;
    let stepf = step as f64;
    one_cluster(a, cluster)?;

    let Scrapes {
        ksm,
        ksm_at,
        has_phase,
        cards,
        dcgm,
        dcgm_intervals,
        card_at,
    } = scrapes(a, step);

    let mut nodes = nodes_of(a, &ksm_at, stepf);
    let (reqs, node_names) = requests(a, catalog, has_phase);
    let states = pod_states(a);
    let (apps, controllers) = named_by(a);
    let node_pool = node_pools(plan, catalog, a, &mut nodes, &reqs, &apps, &controllers);
    let NodeStage {
        units,
        mut out_nodes,
        replicas_from_cards,
        mut unknown_mig,
    } = node_series(plan, catalog, a, grid, &nodes, &node_pool, &cards, &ksm_at);

    let cx = PodCx {
        plan,
        catalog,
        a,
        grid,
        ksm_at: &ksm_at,
        has_phase,
        units: &units,
        states: &states,
        apps: &apps,
        controllers: &controllers,
        node_names: &node_names,
    };
    let (mut pods, unplaced) = pods_of(&cx, &reqs, &mut out_nodes, &mut unknown_mig);
    let shared = pending_shares(plan, catalog, &reqs, &units, &mut pods, &unplaced);
    if shared > 0 {
        notes.push(format!("{shared} Pending pod(s) with no node yet counted at their workload's share of a GPU (a time-slicing replica's or a MIG single-strategy profile's, from its running pods, else its declared pool)"));
    }

    let ucx = UsageCx {
        catalog,
        grid,
        units: &units,
        card_at: &card_at,
        dcgm,
    };
    let mut usage = usage_of(&ucx, a, &mut pods, &mut out_nodes);
    unknown_mig.append(&mut usage.unknown_mig);
    let Usage {
        unlabelled,
        orphans,
        shared_busy,
        fallbacks,
        ..
    } = usage;
    settle_usage(&mut pods, &out_nodes, shared_busy, step);

    let dcgm_gaps = dcgm_coverage(&cards, dcgm, grid, &nodes, &mut pods);
    if !dcgm_gaps.is_empty() {
        let hours: f64 = dcgm_gaps.iter().map(|g| (g.2 - g.1) as f64 / 3600.0).sum();
        notes.push(format!(
            "dcgm-exporter reported nothing for {hours:.1} node-hour(s) in {} gap(s) (coverage lists them): pods there have no usage data for those hours, which count neither as used nor as idle",
            dcgm_gaps.len()
        ));
    }

    tokens(a, &mut pods);
    super::serving::attach(a, &grid, &mut pods);

    let (covered, sampled) = ksm_coverage(a, grid, ksm);
    notes.extend(read_notes(ReadFacts {
        no_phase: !has_phase && !reqs.is_empty(),
        unlabelled,
        replicas_from_cards,
        fallbacks,
        unknown_mig,
    }));
    compact_series(&mut pods, &mut out_nodes);
    notes.extend(coverage_note(&covered, grid));
    Ok(Telemetry {
        from: grid.from,
        to: grid.to(),
        step,
        pods,
        nodes: out_nodes,
        covered: covered.len() as i64 * step,
        covered_windows: covered.iter().map(|k| grid.start(*k)).collect(),
        sampled_windows: sampled,
        data_from: covered.first().map(|k| grid.start(*k)),
        data_to: covered.last().map(|k| grid.start(*k) + step),
        ksm_interval: ksm,
        dcgm_interval: dcgm,
        dcgm_intervals,
        dcgm_gaps,
        orphans: orphans_of(orphans),
        source,
        notes,
    })
}

/// Per pod, per window: the highest (sum, count) of a device's samples.
type PodWindows = BTreeMap<(String, String), BTreeMap<u32, (f64, f64)>>;

/// A pod named on a device in one window: who, busy seconds, samples.
type PodBusy<'a> = (&'a (String, String), f64, f64);

/// Whether a pod holds GPUs in the window starting at `t` or a neighbour of it.
fn holds_near(p: &PodSeries, t: i64, step: i64) -> bool {
    [t - step, t, t + step]
        .iter()
        .any(|x| p.allocated.contains_key(x))
}

#[derive(Default)]
struct DevUse {
    profile: String,
    by_signal: BTreeMap<Signal, PodWindows>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_pool_labels_match_plan_pools_as_aks_shortens_them() {
        assert!(pool_matches("notebooks", "notebooks"));
        assert!(pool_matches("servemig", "serve-mig"));
        // AKS keeps 12 lowercase letters and digits
        assert!(pool_matches("inferencea10", "inference-a100-spot"));
        assert!(!pool_matches("inference", "inference-a100-spot"));
        assert!(!pool_matches("", "x"));
        assert!(!pool_matches("gpu", "cpu"));
    }

    #[test]
    fn intervals_come_from_whole_windows_whatever_the_offset() {
        // 30 s scrapes at +7.1 s in 60 s windows: two per window
        let r: BTreeMap<u32, f64> = (0..10).map(|k| (k, 2.0)).collect();
        assert_eq!(interval([&r].into_iter(), 60), Some(30.0));
        // 45 s into 60 s windows: 1, 2, 1, 1, 2, 1 ...
        let r: BTreeMap<u32, f64> = (0..12)
            .map(|k| (k, if k % 3 == 1 { 2.0 } else { 1.0 }))
            .collect();
        let i = interval([&r].into_iter(), 60).expect("interval");
        assert!((i - 45.0).abs() < 3.0, "{i}");
        // 120 s scrapes into 60 s windows: every other window (edge windows cost a sample)
        let r: BTreeMap<u32, f64> = (0..100).map(|k| (k * 2, 1.0)).collect();
        let i = interval([&r].into_iter(), 60).expect("interval");
        assert!((i - 120.0).abs() < 2.0, "{i}");
    }
}
