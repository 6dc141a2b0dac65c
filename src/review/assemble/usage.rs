//! Usage: each device's busy seconds to the pods it names, time-sliced nodes' split by share,
//! and usage no GPU-requesting pod held.

use std::collections::{BTreeMap, BTreeSet};

use super::columns::{card, col, labels, CARD};
use super::intervals::{fill_jitter, seconds_of, Intervals};
use super::nodes::{Node, Unit};
use crate::catalog::Catalog;
use crate::review::query::{Answers, Grid, Row, Q};
use crate::review::telemetry::{run_at, NodeSeries, PodSeries, Pods, Signal, Windows};
use crate::review::timeline::Timeline;

/// A GPU device as dcgm-exporter names it (host, card, instance), or for a series that names
/// no card (a hand-made export) its pod's own device.
pub(super) type Dev = Vec<String>;

/// A device's usage rows: each with the row of its sample counts and its signal.
pub(super) struct DevRow<'a> {
    group: &'a Vec<String>,
    q: Q,
    row: &'a Row,
    counts: Option<&'a Row>,
    signal: Signal,
}

/// Every device's usage rows, by device: an index into the answers, so each device's samples
/// are gathered only while it is attributed.
pub(super) fn device_rows(a: &Answers) -> BTreeMap<Dev, Vec<DevRow<'_>>> {
    // A series that names no card (a hand-made export) is its pod's own device.
    let device_of = |q: Q, g: &Vec<String>| -> Dev {
        card(q, g).unwrap_or_else(|| {
            let mut d = labels(q, g, &CARD);
            d.extend(labels(q, g, &["namespace", "pod"]));
            d
        })
    };
    let mut devices: BTreeMap<Dev, Vec<DevRow<'_>>> = BTreeMap::new();
    for (q, qc, signal) in [
        (Q::Active, Q::ActiveCount, Signal::GrEngineActive),
        (Q::Util, Q::UtilCount, Signal::GpuUtil),
    ] {
        let cnt: BTreeMap<&Vec<String>, &Row> = a.get(qc).collect();
        for (group, row) in a.get(q) {
            devices
                .entry(device_of(q, group))
                .or_default()
                .push(DevRow {
                    group,
                    q,
                    row,
                    counts: cnt.get(group).copied(),
                    signal,
                });
        }
    }
    devices
}

/// One device's usage samples by signal, pod and window (the highest value and the most
/// samples of a window), and its MIG profile.
pub(super) fn device_use(rows: &[DevRow<'_>]) -> DevUse {
    let mut d = DevUse::default();
    for r in rows {
        let (q, g) = (r.q, r.group);
        d.profile.clone_from(&g[col(q, "GPU_I_PROFILE")]);
        let pod = (g[col(q, "namespace")].clone(), g[col(q, "pod")].clone());
        let per = d
            .by_signal
            .entry(r.signal)
            .or_default()
            .entry(pod)
            .or_default();
        for (k, v) in r.row {
            let c = r.counts.and_then(|c| c.get(&k)).copied().unwrap_or(1.0);
            per.update(k, |e| {
                let (s, n) = e.unwrap_or((0.0, 0.0));
                (s.max(*v), n.max(c))
            });
        }
    }
    d
}

/// What attributing usage found beside the pods' own usage.
#[derive(Default)]
pub(super) struct Usage {
    /// Devices reporting usage with no pod named.
    pub(super) unlabelled: usize,
    /// Usage no GPU-requesting pod held, by node, GPU and the pod the exporter named.
    pub(super) orphans: BTreeMap<(String, String, String, String), f64>,
    /// Time-sliced nodes: busy GPU-seconds per window, split by `share_busy`.
    pub(super) shared_busy: BTreeMap<String, Windows>,
    /// Devices read from utilisation for want of the profiling metric.
    pub(super) fallbacks: usize,
    /// MIG profiles the catalog does not know.
    pub(super) unknown_mig: BTreeSet<String>,
}

/// What a device's usage is read against.
pub(super) struct UsageCx<'a> {
    pub(super) catalog: &'a Catalog,
    pub(super) grid: Grid,
    pub(super) units: &'a BTreeMap<String, Unit>,
    pub(super) card_at: &'a BTreeMap<Vec<String>, Intervals>,
    pub(super) dcgm: Option<f64>,
}

/// Every device's usage to the pods it names, with what was found beside them.
pub(super) fn usage_of(
    cx: &UsageCx<'_>,
    a: &Answers,
    pods: &mut Pods,
    out_nodes: &mut BTreeMap<String, NodeSeries>,
) -> Usage {
    let mut usage = Usage::default();
    for (dk, rows) in &device_rows(a) {
        device_usage(cx, dk, &device_use(rows), pods, out_nodes, &mut usage);
    }
    usage
}

/// A pod's share `mine` of a device's busy seconds in the window starting at `t`: its usage
/// while it holds GPUs (this window or, when a sample was jittered across the boundary, a
/// neighbour); an orphan's when no GPU-requesting pod of that name exists.
pub(super) fn attribute(
    dk: &Dev,
    n: &(String, String),
    (t, step): (i64, i64),
    signal: Signal,
    mine: f64,
    pods: &mut Pods,
    orphans: &mut BTreeMap<(String, String, String, String), f64>,
) {
    match pods.get_mut(n).and_then(|runs| run_at(runs, t)) {
        // Usage counts while the pod holds GPUs (this window or, when a sample
        // was jittered across the boundary, a neighbour).
        Some(p) if holds_near(p, t, step) => {
            p.has_usage = true;
            p.signal = Some(p.signal.map_or(signal, |s| s.max(signal)));
            p.used.add(t, mine);
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
pub(super) fn device_usage(
    cx: &UsageCx<'_>,
    dk: &Dev,
    d: &DevUse,
    pods: &mut Pods,
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
        match crate::review::telemetry::mig_share(cx.catalog, &d.profile) {
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
            let b = sum / count.max(1.0) * secs(*count, dcgm_at(k)) * scale * weight;
            per.entry(k).or_default().push((pod, b, *count));
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
        let node = rows.iter().find_map(|r| {
            pods.get_mut(r.0)
                .and_then(|runs| run_at(runs, t))
                .and_then(|p| p.node.clone())
        });
        let shared = node
            .as_ref()
            .and_then(|n| cx.units.get(n))
            .is_some_and(|u| u.replicas > 1 && !mig);
        if let Some(n) = node.as_ref().and_then(|n| out_nodes.get_mut(n)) {
            n.signal = Some(n.signal.map_or(signal, |s| s.max(signal)));
        }
        if shared {
            acc.shared_busy
                .entry(node.unwrap_or_default())
                .or_default()
                .add(t, busy);
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
pub(super) fn settle_usage(
    pods: &mut Pods,
    out_nodes: &BTreeMap<String, NodeSeries>,
    shared_busy: BTreeMap<String, Windows>,
    step: i64,
) {
    for (node, busy) in shared_busy {
        let holders: Vec<((String, String), usize)> = pods
            .iter()
            .flat_map(|(k, runs)| runs.iter().enumerate().map(move |(i, p)| (k, i, p)))
            .filter(|(_, _, p)| p.node.as_deref() == Some(node.as_str()))
            .map(|(k, i, _)| (k.clone(), i))
            .collect();
        for (t, b) in &busy {
            let share = |p: &PodSeries| -> f64 {
                [t - step, t, t + step]
                    .iter()
                    .filter_map(|x| p.allocated.get(x))
                    .copied()
                    .fold(0.0, f64::max)
            };
            let total: f64 = holders.iter().map(|(k, i)| share(&pods[k][*i])).sum();
            if total <= 0.0 {
                continue;
            }
            for (k, i) in &holders {
                let Some(p) = pods.get_mut(k).and_then(|runs| runs.get_mut(*i)) else {
                    continue;
                };
                p.has_usage = true;
                let w = share(p);
                if w > 0.0 {
                    p.used.add(t, b * w / total);
                }
            }
        }
    }
    // A GPU is never busier than it was held: the pod's total used is capped at its total
    // allocated (per window it may be off by a sample jittered across a boundary).
    for p in pods.values_mut().flatten() {
        let (a, u): (f64, f64) = (p.allocated.values().sum(), p.used.values().sum());
        if u > a && u > 0.0 {
            let f = a / u;
            p.used.map_values(|v| v * f);
        }
    }
    for p in pods.values_mut().flatten() {
        if !p.has_usage {
            if let Some(n) = p.node.as_ref().and_then(|n| out_nodes.get(n)) {
                p.has_usage = n.signal.is_some() && n.replicas > 1;
            }
        }
    }
}

/// Per pod, per window: the highest (sum, count) of a device's samples.
pub(super) type PodWindows = BTreeMap<(String, String), Timeline<u32, (f64, f64)>>;

/// A pod named on a device in one window: who, busy seconds, samples.
pub(super) type PodBusy<'a> = (&'a (String, String), f64, f64);

/// Whether a pod holds GPUs in the window starting at `t` or a neighbour of it.
pub(super) fn holds_near(p: &PodSeries, t: i64, step: i64) -> bool {
    [t - step, t, t + step]
        .iter()
        .any(|x| p.allocated.contains_key(x))
}

#[derive(Default)]
pub(super) struct DevUse {
    pub(super) profile: String,
    pub(super) by_signal: BTreeMap<Signal, PodWindows>,
}

/// Each node's dcgm-exporter coverage: a pod's windows on a node with usage data, where its
/// exporter reported nothing, are unobserved (never idle); and each node's gaps while
/// kube-state-metrics saw it.
pub(super) fn dcgm_coverage(
    cards: &BTreeMap<Vec<String>, Row>,
    dcgm: Option<f64>,
    grid: Grid,
    nodes: &BTreeMap<String, Node>,
    pods: &mut Pods,
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
    for p in pods.values_mut().flatten() {
        let Some(cover) = p.node.as_ref().and_then(|n| dcgm_cover.get(n)) else {
            continue;
        };
        if !p.has_usage {
            continue;
        }
        for t in p.allocated.keys() {
            let k = ((t - grid.from) / step) as u32;
            if !cover.contains(&k) {
                p.unobserved.insert(t);
            }
        }
    }
    // Each node's gaps, while kube-state-metrics saw it.
    let mut dcgm_gaps: Vec<(String, i64, i64)> = Vec::new();
    for (node, cover) in &dcgm_cover {
        let Some(n) = nodes.get(node) else { continue };
        let seen: BTreeSet<u32> = n.alloc.values().flat_map(|w| w.keys()).collect();
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
