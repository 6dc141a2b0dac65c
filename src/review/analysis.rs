//! From telemetry and the plan to the review: allocated against used GPU-seconds per team,
//! workload, GPU model and pool; what the idle part cost; stalled pods; unmet (Pending)
//! demand; idle pool floors and nodes over the span the data covers; reservation fill and
//! reservation advice from measured floors; cost per 1M tokens; and recommendations with
//! what each saves and the plan change to make.

use std::collections::BTreeMap;

use serde::Serialize;

use super::assemble::{owner, plan_pool, pool_matches};
use super::telemetry::{format_time, PodSeries, Signal, Telemetry};
use crate::catalog::Catalog;
use crate::engine::recommend::Recommendation;
use crate::plan::raw::Capacity;
use crate::plan::Plan;

pub(crate) const SCHEMA: &str = "gpuplan.review/v1";

#[derive(Debug, Serialize)]
pub struct Review {
    pub schema: &'static str,
    pub plan: String,
    pub source: String,
    pub window: Window,
    pub coverage: Coverage,
    pub teams: Vec<TeamRow>,
    pub workloads: Vec<WorkloadRow>,
    pub models: Vec<ModelRow>,
    pub pools: Vec<PoolRow>,
    pub stalled: Vec<Stalled>,
    pub pending: Vec<PendingPod>,
    pub idle_pools: Vec<IdlePool>,
    /// Nodes with GPUs nobody requested (needs node metrics; empty otherwise).
    pub idle_nodes: Vec<IdleNode>,
    pub reservations: Vec<ReservationFill>,
    pub reservation_advice: Vec<ReservationAdvice>,
    pub unmatched: Vec<Unmatched>,
    pub recommendations: Vec<Advice>,
    /// Allocated and used GPUs per team over time, for the charts.
    #[serde(skip)]
    pub timeline: BTreeMap<String, Vec<(i64, f64, f64)>>,
}

#[derive(Debug, Serialize)]
pub struct Window {
    pub from: String,
    pub to: String,
    pub step_seconds: i64,
}

/// The window asked for against what the data covers.
#[derive(Debug, Serialize)]
pub struct Coverage {
    pub requested_seconds: i64,
    /// Seconds of the window holding kube-state-metrics data: costs and advice use these.
    pub covered_seconds: i64,
    pub share: f64,
    pub data_from: Option<String>,
    pub data_to: Option<String>,
    /// Scrape intervals inferred from the data.
    pub kube_state_metrics_interval_seconds: Option<f64>,
    pub dcgm_interval_seconds: Option<f64>,
    /// Pods that held GPUs but have no usage series: "no data", never 0%.
    pub pods_without_usage: Vec<Unmatched>,
    /// Usage attributed to pods that requested no GPU.
    pub usage_without_pod: Vec<Unmatched>,
    /// Spans a node's dcgm-exporter reported nothing while the node was seen: usage there is
    /// no data.
    pub dcgm_gaps: Vec<DcgmGap>,
}

#[derive(Debug, Serialize)]
pub struct DcgmGap {
    pub node: String,
    pub from: String,
    pub to: String,
    pub seconds: i64,
}

#[derive(Debug, Serialize)]
pub struct TeamRow {
    pub team: String,
    pub allocated_gpu_seconds: f64,
    pub used_gpu_seconds: f64,
    /// Of the allocated, GPU-seconds with no usage data (not in the efficiency).
    pub no_data_gpu_seconds: f64,
    pub efficiency: Option<f64>,
    pub idle_cost_usd: f64,
    /// GPU-seconds requested by Pending pods: demand the cluster did not meet.
    pub pending_gpu_seconds: f64,
}

#[derive(Debug, Serialize)]
pub struct WorkloadRow {
    pub workload: String,
    pub team: String,
    pub allocated_gpu_seconds: f64,
    pub used_gpu_seconds: f64,
    pub no_data_gpu_seconds: f64,
    pub efficiency: Option<f64>,
    pub idle_cost_usd: f64,
    pub pending_gpu_seconds: f64,
    /// `utilization` the plan expects, to compare with what was measured.
    pub planned_utilization: Option<f64>,
    pub usd_per_million_tokens: Option<f64>,
    pub pods: usize,
}

/// A GPU model's seconds: a T4 second is not an A100 second.
#[derive(Debug, Serialize)]
pub struct ModelRow {
    pub model: String,
    pub allocated_gpu_seconds: f64,
    pub used_gpu_seconds: f64,
    pub efficiency: Option<f64>,
    pub allocated_cost_usd: Option<f64>,
    pub idle_cost_usd: Option<f64>,
}

#[derive(Debug, Serialize)]
pub struct PoolRow {
    /// The plan pool, or the node pool label when no plan pool matches.
    pub pool: String,
    pub in_plan: bool,
    pub model: Option<String>,
    /// Where "used" was read from on its nodes.
    pub signal: Option<String>,
    pub allocated_gpu_seconds: f64,
    pub used_gpu_seconds: f64,
    pub efficiency: Option<f64>,
    pub allocated_cost_usd: Option<f64>,
    pub idle_cost_usd: Option<f64>,
    /// Physical GPUs held, peak and 95th percentile over the covered windows.
    pub peak_gpus: f64,
    pub p95_gpus: f64,
}

#[derive(Debug, Serialize)]
pub struct Stalled {
    pub workload: Option<String>,
    pub team: String,
    pub pod: String,
    pub since: String,
    pub seconds: i64,
    pub allocated_gpus: f64,
}

#[derive(Debug, Serialize)]
pub struct PendingPod {
    pub workload: Option<String>,
    pub team: String,
    pub pod: String,
    pub gpu_seconds: f64,
}

#[derive(Debug, Serialize)]
pub struct IdlePool {
    pub pool: String,
    pub idle_gpu_seconds: f64,
    pub idle_cost_usd: f64,
}

/// A node that was paid for while its GPUs sat unrequested.
#[derive(Debug, Serialize)]
pub struct IdleNode {
    pub node: String,
    /// The node's pool label, and the plan pool it matched (by name, as AKS shortens it).
    pub pool_label: Option<String>,
    pub pool: Option<String>,
    /// Seconds the node was up with no GPU requested on it at all.
    pub empty_seconds: i64,
    /// Its longest contiguous stretch with no GPU requested.
    pub longest_empty_seconds: i64,
    /// GPU-seconds it offered that no running pod requested.
    pub idle_gpu_seconds: f64,
    /// At the matched pool's price; `None` when the node matches no plan pool.
    pub idle_cost_usd: Option<f64>,
}

#[derive(Debug, Serialize)]
pub struct ReservationFill {
    pub pool: String,
    pub reserved_gpu_seconds: f64,
    pub allocated_gpu_seconds: f64,
    pub fill: f64,
}

/// What a reservation of the measured floor would save, per SKU and region.
#[derive(Debug, Serialize)]
pub struct ReservationAdvice {
    pub pool: String,
    pub sku: String,
    pub region: String,
    /// GPUs held at least 90% of the covered span (the 10th percentile), and the median.
    pub floor_gpus: f64,
    pub p10_gpus: f64,
    pub p50_gpus: f64,
    /// Whole nodes of the floor: what to reserve, never more.
    pub nodes: i64,
    pub on_demand_usd_per_month: f64,
    pub options: Vec<ReservationOption>,
    pub note: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct ReservationOption {
    pub term: &'static str,
    pub usd_per_month: f64,
    pub saving_usd_per_month: f64,
    /// The share of hours the nodes must be held for the reservation to beat on-demand.
    pub break_even_utilization: f64,
    pub source: String,
}

#[derive(Debug, Serialize)]
pub struct Unmatched {
    pub namespace: String,
    pub pod: String,
    pub allocated_gpu_seconds: f64,
    pub used_gpu_seconds: f64,
    /// Usage with no GPU-requesting pod: the node and GPU it was on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct Advice {
    pub kind: &'static str,
    pub workload: Option<String>,
    pub pool: Option<String>,
    /// What the change would have saved over the window; `None` where no price is known
    /// (or the change buys capacity rather than saving it).
    pub saving_usd: Option<f64>,
    pub message: String,
    /// The plan change to make, as TOML.
    pub change: String,
}

/// Settings of the analysis.
pub struct Settings {
    /// A pod is stalled after this many seconds allocated with near-zero activity.
    pub stalled_after: i64,
    /// Activity below this share of the allocated GPUs counts as none.
    pub quiet_below: f64,
    /// Efficiency below which a slice or GPU is over-sized (GP025's threshold).
    pub low_utilization: f64,
}

/// Rounded to a hundredth, without a negative zero.
fn round(x: f64) -> f64 {
    let r = (x * 100.0).round() / 100.0;
    if r == 0.0 {
        0.0
    } else {
        r
    }
}

fn round4(x: f64) -> f64 {
    let r = (x * 10_000.0).round() / 10_000.0;
    if r == 0.0 {
        0.0
    } else {
        r
    }
}

fn ratio(used: f64, alloc: f64) -> Option<f64> {
    (alloc > 0.0).then(|| round4(used / alloc))
}

/// Price of one GPU-second of a declared pool: its node price for its capacity type over its
/// GPUs.
fn pool_gpu_second(plan: &Plan, catalog: &Catalog, pool: &crate::plan::raw::Pool) -> Option<f64> {
    let price = crate::engine::cost::pool_hour(catalog, plan.provider(), pool)?;
    let gpus = catalog.sku(plan.provider(), pool.sku.get())?.gpu_count;
    (gpus > 0).then(|| price.usd / f64::from(gpus) / 3600.0)
}

/// Price of one GPU-second for a workload: its declared pool when it runs on one (that is
/// what is paid today), else its recommended pool.
fn gpu_second_price(
    plan: &Plan,
    rec: &Recommendation,
    catalog: &Catalog,
    workload: &str,
) -> Option<f64> {
    if let Some(pool) = plan.workload_pools(workload).next() {
        return pool_gpu_second(plan, catalog, pool);
    }
    rec.pools
        .iter()
        .find(|p| p.workloads.iter().any(|w| w == workload))
        .filter(|p| p.gpus_per_node > 0)
        .map(|p| p.usd_per_node_hour / f64::from(p.gpus_per_node) / 3600.0)
}

/// A value at quantile `q` of `v` (nearest rank; `v` need not be sorted).
fn quantile(v: &[f64], q: f64) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let i = ((q * s.len() as f64).ceil() as usize).clamp(1, s.len()) - 1;
    s[i]
}

/// What one pod came to, once.
struct PodFacts<'a> {
    p: &'a PodSeries,
    workload: Option<&'a str>,
    /// Plan pool it ran on (by its node's pool label, else the workload's declared pool).
    plan_pool: Option<&'a crate::plan::raw::Pool>,
    pool_label: Option<String>,
    model: Option<String>,
    signal: Option<Signal>,
    alloc: f64,
    /// Allocated GPU-seconds that have usage data.
    alloc_seen: f64,
    used: f64,
    price: Option<f64>,
}

pub fn analyse(
    plan: &Plan,
    rec: &Recommendation,
    catalog: &Catalog,
    t: &Telemetry,
    s: &Settings,
) -> Review {
    let step = t.step.max(1);
    let covered = t.covered.max(0);
    let facts: Vec<PodFacts> = t
        .pods
        .values()
        .map(|p| {
            let workload = owner(plan, p);
            let node = p.node.as_ref().and_then(|n| t.nodes.get(n));
            let pool_label = node.and_then(|n| n.pool.clone());
            let plan_pool = node
                .and_then(|n| n.plan_pool.as_deref())
                .and_then(|name| plan.pool(name))
                .map(|p| p.get())
                .or_else(|| plan_pool(plan, pool_label.as_deref()))
                .or_else(|| {
                    workload
                        .and_then(|w| plan.workload_pools(w).next())
                        .map(|p| p.get())
                });
            let model = plan_pool
                .and_then(|pp| catalog.sku(plan.provider(), pp.sku.get()))
                .map(|s| s.gpu_model.clone())
                .or_else(|| node.and_then(|n| n.model.clone()));
            let price = plan_pool
                .and_then(|pp| pool_gpu_second(plan, catalog, pp))
                .or_else(|| workload.and_then(|w| gpu_second_price(plan, rec, catalog, w)));
            let alloc: f64 = p.allocated.values().sum();
            let used: f64 = p.used.values().sum();
            // Efficiency is over the time usage was observed.
            let unseen: f64 = p.unobserved.iter().filter_map(|t| p.allocated.get(t)).sum();
            PodFacts {
                p,
                workload,
                plan_pool,
                pool_label,
                model,
                signal: p.signal.or_else(|| node.and_then(|n| n.signal)),
                alloc,
                alloc_seen: if p.has_usage {
                    (alloc - unseen).max(0.0)
                } else {
                    0.0
                },
                used: if p.has_usage { used } else { 0.0 },
                price,
            }
        })
        .collect();

    // Teams are namespaces: every pod counts, claimed by a workload or not.
    #[derive(Default, Clone, Copy)]
    struct Sums {
        alloc: f64,
        seen: f64,
        used: f64,
        pending: f64,
        idle_cost: f64,
        cost: f64,
        priced: bool,
    }
    impl Sums {
        fn add(&mut self, f: &PodFacts) {
            self.alloc += f.alloc;
            self.seen += f.alloc_seen;
            self.used += f.used;
            self.pending += f.p.pending;
            if let Some(price) = f.price {
                self.priced = true;
                self.idle_cost += (f.alloc_seen - f.used).max(0.0) * price;
                self.cost += f.alloc * price;
            }
        }
    }
    let mut teams: BTreeMap<String, Sums> = BTreeMap::new();
    let mut by_workload: BTreeMap<&str, (Sums, f64, usize)> = BTreeMap::new();
    let mut by_model: BTreeMap<String, Sums> = BTreeMap::new();
    type PoolSums = (Sums, Option<String>, Vec<Signal>);
    let mut by_pool: BTreeMap<(String, bool), PoolSums> = BTreeMap::new();
    let mut pool_held: BTreeMap<(String, bool), BTreeMap<i64, f64>> = BTreeMap::new();
    let mut timeline: BTreeMap<String, BTreeMap<i64, (f64, f64)>> = BTreeMap::new();
    let mut unmatched = Vec::new();
    let mut no_usage = Vec::new();
    let mut stalled = Vec::new();
    let mut pending = Vec::new();
    for f in &facts {
        let p = f.p;
        teams.entry(p.namespace.clone()).or_default().add(f);
        by_model
            .entry(f.model.clone().unwrap_or_else(|| "unknown".into()))
            .or_default()
            .add(f);
        let pool_key = match (f.plan_pool, &f.pool_label) {
            (Some(pp), _) => Some((pp.name.get().clone(), true)),
            (None, Some(l)) => Some((l.clone(), false)),
            // Nodes with no pool label (or pods with no node) still have GPUs and a signal.
            (None, None) if f.alloc > 0.0 => Some(("(no pool label)".to_owned(), false)),
            (None, None) => None,
        };
        if let Some(k) = &pool_key {
            let e = by_pool.entry(k.clone()).or_default();
            e.0.add(f);
            if e.1.is_none() {
                e.1.clone_from(&f.model);
            }
            e.2.extend(f.signal);
            let held = pool_held.entry(k.clone()).or_default();
            for (time, a) in &p.allocated {
                *held.entry(*time).or_default() += a / step as f64;
            }
        }
        for (time, a) in &p.allocated {
            let e = timeline
                .entry(p.namespace.clone())
                .or_default()
                .entry(*time)
                .or_default();
            e.0 += a / step as f64;
            e.1 += p.used.get(time).copied().unwrap_or(0.0) / step as f64;
        }
        match f.workload {
            Some(w) => {
                let e = by_workload.entry(w).or_default();
                e.0.add(f);
                e.1 += p.tokens;
                e.2 += 1;
            }
            None if f.alloc > 0.0 => unmatched.push(Unmatched {
                namespace: p.namespace.clone(),
                pod: p.pod.clone(),
                allocated_gpu_seconds: round(f.alloc),
                used_gpu_seconds: round(f.used),
                node: None,
                gpu: None,
            }),
            None => {}
        }
        if p.pending > 0.0 {
            pending.push(PendingPod {
                workload: f.workload.map(str::to_owned),
                team: p.namespace.clone(),
                pod: p.pod.clone(),
                gpu_seconds: round(p.pending),
            });
        }
        if !p.has_usage {
            if f.alloc > 0.0 {
                no_usage.push(Unmatched {
                    namespace: p.namespace.clone(),
                    pod: p.pod.clone(),
                    allocated_gpu_seconds: round(f.alloc),
                    used_gpu_seconds: 0.0,
                    node: None,
                    gpu: None,
                });
            }
            continue;
        }
        // The longest stretch allocated with near-zero activity; a pod that finished holds
        // nothing, so it is never stalled.
        let (mut run_start, mut best): (Option<i64>, Option<(i64, i64, f64)>) = (None, None);
        let mut peak = 0.0f64;
        let mut prev: Option<i64> = None;
        for (time, a) in &p.allocated {
            // No data is no evidence of idleness: a stretch without usage data ends a run.
            if p.unobserved.contains(time) {
                run_start = None;
                prev = None;
                continue;
            }
            let u = p.used.get(time).copied().unwrap_or(0.0);
            let quiet = *a > 0.0 && u < s.quiet_below * a;
            // A window left empty by a scrape jittered across its boundary is no gap.
            let slack = t.ksm_interval.map_or(0, |i| i.ceil() as i64);
            let contiguous = prev.is_some_and(|x| time - x <= step + slack);
            prev = Some(*time);
            if quiet && contiguous && run_start.is_some() {
                peak += a;
            } else if quiet {
                run_start = Some(*time);
                peak = *a;
            } else {
                run_start = None;
            }
            if let Some(start) = run_start {
                let len = time + step - start;
                if best.is_none_or(|b| len > b.1) {
                    // GPUs held over the run: its GPU-seconds over its length.
                    best = Some((start, len, peak / len as f64));
                }
            }
        }
        if let Some((start, len, peak)) = best.filter(|b| b.1 >= s.stalled_after) {
            stalled.push(Stalled {
                workload: f.workload.map(str::to_owned),
                team: p.namespace.clone(),
                pod: p.pod.clone(),
                since: format_time(start),
                seconds: len,
                allocated_gpus: round(peak),
            });
        }
    }

    let mut advice = Vec::new();
    let mut workloads = Vec::new();
    for w in plan.workloads() {
        let name = w.name.get();
        let (sums, tokens, pods) = by_workload.get(name.as_str()).copied().unwrap_or_default();
        let price = gpu_second_price(plan, rec, catalog, name).unwrap_or(0.0);
        let eff = ratio(sums.used, sums.seen);
        if let Some(e) = eff.filter(|e| *e < s.low_utilization) {
            if let Some(a) = right_size(plan, rec, catalog, w, e, sums.idle_cost) {
                advice.push(a);
            }
        }
        workloads.push(WorkloadRow {
            workload: name.clone(),
            team: w.team.get().clone(),
            allocated_gpu_seconds: round(sums.alloc),
            used_gpu_seconds: round(sums.used),
            no_data_gpu_seconds: round(sums.alloc - sums.seen),
            efficiency: eff,
            idle_cost_usd: round(sums.idle_cost),
            pending_gpu_seconds: round(sums.pending),
            planned_utilization: w.utilization(),
            usd_per_million_tokens: (tokens > 0.0)
                .then(|| round4(sums.alloc * price / tokens * 1e6)),
            pods,
        });
    }
    for st in &stalled {
        let price = st
            .workload
            .as_deref()
            .and_then(|w| gpu_second_price(plan, rec, catalog, w));
        advice.push(Advice {
            kind: "reap-stalled",
            workload: st.workload.clone(),
            pool: None,
            saving_usd: price.map(|p| round(st.allocated_gpus * st.seconds as f64 * p)),
            message: format!(
                "pod `{}/{}` held {} GPU(s) with no activity for {:.1} h from {}",
                st.team,
                st.pod,
                st.allocated_gpus,
                st.seconds as f64 / 3600.0,
                st.since
            ),
            change: "stop pods idle longer than the threshold (an idle-job reaper), or set scale_to_zero = true".into(),
        });
    }
    let pending_total: f64 = pending.iter().map(|p| p.gpu_seconds).sum();
    if pending_total >= 3600.0 {
        advice.push(Advice {
            kind: "unmet-demand",
            workload: None,
            pool: None,
            saving_usd: None,
            message: format!(
                "{:.1} GPU-hours were requested by pods while Pending (unscheduled, or starting: pulling images, waiting for a node)",
                pending_total / 3600.0
            ),
            change: {
                // Nodes of each plan pool seen at once, against its maximum: capacity is the
                // wait only where a pool reached it.
                let mut at_once: BTreeMap<&str, BTreeMap<i64, u32>> = BTreeMap::new();
                for n in t.nodes.values() {
                    if let Some(pool) = n.plan_pool.as_deref() {
                        for (ts, cap) in &n.capacity {
                            if *cap > 0.0 {
                                *at_once.entry(pool).or_default().entry(*ts).or_default() += 1;
                            }
                        }
                    }
                }
                let full: Vec<String> = plan
                    .pools()
                    .iter()
                    .filter(|p| {
                        let max = u32::try_from(p.nodes().max().max(0)).unwrap_or(0);
                        at_once
                            .get(p.name.get().as_str())
                            .is_some_and(|w| w.values().any(|n| *n >= max && max > 0))
                    })
                    .map(|p| format!("`{}` ({} nodes)", p.name.get(), p.nodes().max()))
                    .collect();
                if full.is_empty() {
                    "no pool reached its nodes.max while they waited: look at scheduling and start-up (quota, taints and selectors, image pulls) before adding capacity, or queue them (Kueue) so the wait is visible".into()
                } else {
                    format!(
                        "{} reached nodes.max: raise it or the quota for those workloads, or queue them (Kueue) so the wait is visible",
                        full.join(", ")
                    )
                }
            },
        });
    }

    // Pool floors paid over the covered span against what ran on them.
    let mut idle_pools = Vec::new();
    let mut reservations = Vec::new();
    let mut reservation_advice = Vec::new();
    for p in plan.pools() {
        let Some(sku) = catalog.sku(plan.provider(), p.sku.get()) else {
            continue;
        };
        let gpus = f64::from(sku.gpu_count);
        let floor = p.nodes().min().max(0) as f64 * gpus * covered as f64;
        let key = (p.name.get().clone(), true);
        let held: f64 = by_pool.get(&key).map_or(0.0, |x| x.0.alloc);
        let priced = pool_gpu_second(plan, catalog, p);
        let price = priced.unwrap_or(0.0);
        let idle = (floor - held).max(0.0);
        if idle > 0.0 && covered > 0 {
            let nodes_idle = (idle / covered as f64 / gpus.max(1.0)).floor();
            idle_pools.push(IdlePool {
                pool: p.name.get().clone(),
                idle_gpu_seconds: round(idle),
                idle_cost_usd: round(idle * price),
            });
            if nodes_idle >= 1.0 {
                advice.push(Advice {
                    kind: "shrink-pool",
                    workload: None,
                    pool: Some(p.name.get().clone()),
                    saving_usd: priced.map(|p| round(nodes_idle * gpus * covered as f64 * p)),
                    message: format!(
                        "pool `{}` kept {} node(s) of its floor idle on average over the {:.1} h the data covers",
                        p.name.get(),
                        nodes_idle,
                        covered as f64 / 3600.0
                    ),
                    change: format!(
                        "[[pool]] name = \"{}\": nodes.min = {}",
                        p.name.get(),
                        (p.nodes().min() - nodes_idle as i64).max(0)
                    ),
                });
            }
        }
        if p.capacity().is_committed() && floor > 0.0 {
            reservations.push(ReservationFill {
                pool: p.name.get().clone(),
                reserved_gpu_seconds: round(floor),
                allocated_gpu_seconds: round(held.min(floor)),
                fill: round4(held.min(floor) / floor),
            });
        }
        if let Some(a) = reservation(plan, catalog, p, gpus, pool_held.get(&key), t, covered) {
            if let Some(best) = a
                .options
                .iter()
                .max_by(|x, y| x.saving_usd_per_month.total_cmp(&y.saving_usd_per_month))
                .filter(|o| o.saving_usd_per_month > 0.0)
            {
                advice.push(Advice {
                    kind: "reserve-floor",
                    workload: None,
                    pool: Some(p.name.get().clone()),
                    saving_usd: Some(round(best.saving_usd_per_month * covered as f64 / (crate::core::HOURS_PER_MONTH * 3600.0))),
                    message: format!(
                        "pool `{}` held at least {} GPU(s) 90% of the time: {} node(s) of {} on a {} reservation save {} a month (break-even at {:.0}% of hours held)",
                        p.name.get(),
                        a.floor_gpus,
                        a.nodes,
                        a.sku,
                        best.term,
                        crate::core::usd(best.saving_usd_per_month),
                        best.break_even_utilization * 100.0
                    ),
                    change: format!(
                        "split [[pool]] name = \"{}\": {} node(s) with capacity = \"{}\", the rest on-demand",
                        p.name.get(),
                        a.nodes,
                        best.term
                    ),
                });
            }
            reservation_advice.push(a);
        }
    }
    let idle_nodes = idle_nodes(plan, catalog, t, &mut advice);
    advice.sort_by(|a, b| {
        b.saving_usd
            .unwrap_or(0.0)
            .total_cmp(&a.saving_usd.unwrap_or(0.0))
            .then(a.kind.cmp(b.kind))
    });

    let p95 = |k: &(String, bool)| -> (f64, f64) {
        let v: Vec<f64> = pool_held
            .get(k)
            .map(|m| m.values().copied().collect())
            .unwrap_or_default();
        let peak = v.iter().copied().fold(0.0, f64::max);
        (round(peak), round(quantile(&v, 0.95)))
    };
    Review {
        schema: SCHEMA,
        plan: plan.name().to_owned(),
        source: t.source.clone(),
        window: Window {
            from: format_time(t.from),
            to: format_time(t.to),
            step_seconds: step,
        },
        coverage: Coverage {
            requested_seconds: t.to - t.from,
            covered_seconds: covered,
            share: ratio(covered as f64, (t.to - t.from) as f64).unwrap_or(0.0),
            data_from: t.data_from.map(format_time),
            data_to: t.data_to.map(format_time),
            kube_state_metrics_interval_seconds: t.ksm_interval,
            dcgm_interval_seconds: t.dcgm_interval,
            pods_without_usage: no_usage,
            dcgm_gaps: t
                .dcgm_gaps
                .iter()
                .map(|(node, from, to)| DcgmGap {
                    node: node.clone(),
                    from: format_time(*from),
                    to: format_time(*to),
                    seconds: to - from,
                })
                .collect(),
            usage_without_pod: t
                .orphans
                .iter()
                .map(|o| Unmatched {
                    namespace: o.namespace.clone(),
                    pod: o.pod.clone(),
                    allocated_gpu_seconds: 0.0,
                    used_gpu_seconds: round(o.used_gpu_seconds),
                    node: Some(o.node.clone()),
                    gpu: Some(o.gpu.clone()),
                })
                .collect(),
        },
        teams: teams
            .into_iter()
            .map(|(team, x)| TeamRow {
                team,
                allocated_gpu_seconds: round(x.alloc),
                used_gpu_seconds: round(x.used),
                no_data_gpu_seconds: round(x.alloc - x.seen),
                efficiency: ratio(x.used, x.seen),
                idle_cost_usd: round(x.idle_cost),
                pending_gpu_seconds: round(x.pending),
            })
            .collect(),
        workloads,
        models: by_model
            .into_iter()
            .map(|(model, x)| ModelRow {
                model,
                allocated_gpu_seconds: round(x.alloc),
                used_gpu_seconds: round(x.used),
                efficiency: ratio(x.used, x.seen),
                allocated_cost_usd: x.priced.then(|| round(x.cost)),
                idle_cost_usd: x.priced.then(|| round(x.idle_cost)),
            })
            .collect(),
        pools: by_pool
            .iter()
            .map(|(k, (x, model, signals))| {
                let (peak, p95) = p95(k);
                let mut sig: Vec<&str> = signals.iter().map(|s| s.metric()).collect();
                sig.sort_unstable();
                sig.dedup();
                PoolRow {
                    pool: k.0.clone(),
                    in_plan: k.1,
                    model: model.clone(),
                    signal: (!sig.is_empty()).then(|| sig.join(" and ")),
                    allocated_gpu_seconds: round(x.alloc),
                    used_gpu_seconds: round(x.used),
                    efficiency: ratio(x.used, x.seen),
                    allocated_cost_usd: x.priced.then(|| round(x.cost)),
                    idle_cost_usd: x.priced.then(|| round(x.idle_cost)),
                    peak_gpus: peak,
                    p95_gpus: p95,
                }
            })
            .collect(),
        stalled,
        pending,
        idle_pools,
        idle_nodes,
        reservations,
        reservation_advice,
        unmatched,
        recommendations: advice,
        timeline: timeline
            .into_iter()
            .map(|(team, pts)| (team, pts.into_iter().map(|(t, (a, u))| (t, a, u)).collect()))
            .collect(),
    }
}

/// Right-size advice that fits: a MIG profile (on a GPU that has MIG) with the compute share
/// the work used and the memory the workload needs; on a GPU without MIG, time-slicing only
/// when that many replicas' memory fits the card. `None` when nothing smaller holds it.
fn right_size(
    plan: &Plan,
    rec: &Recommendation,
    catalog: &Catalog,
    w: &crate::plan::raw::Workload,
    eff: f64,
    idle_cost: f64,
) -> Option<Advice> {
    let name = w.name.get();
    let now = w.gpu_share();
    if now > 1.0 {
        // Several GPUs per replica: fewer GPUs is a model-parallelism change, not a slice.
        return None;
    }
    let share = ((eff * now * 10.0).ceil() / 10.0).max(0.1);
    if share >= now {
        return None;
    }
    let sku = plan
        .workload_pools(name)
        .next()
        .map(|p| p.sku.get().clone())
        .or_else(|| {
            rec.pools
                .iter()
                .find(|p| p.workloads.iter().any(|x| x == name))
                .map(|p| p.sku.clone())
        })?;
    let gpu = catalog.gpu(&catalog.sku(plan.provider(), &sku)?.gpu_model)?;
    let need = crate::engine::memory::need_in_instance(w, catalog)
        .map(|n| n / crate::engine::memory::usable_share(w, catalog).max(0.05));
    let (fraction, change, what) = if let Some(mig) = &gpu.mig {
        let slices = f64::from(mig.compute_slices.max(1));
        let p = mig
            .profiles
            .iter()
            .filter(|p| f64::from(p.compute) / slices + 1e-9 >= share)
            .filter(|p| need.is_none_or(|n| p.memory_gib + 1e-9 >= n))
            .filter(|p| f64::from(p.compute) / slices < now)
            // AKS creates only its own profiles (`gpu_instance` MIG1g ... MIG7g).
            .filter(|p| {
                plan.mig_manager() != Some(crate::plan::raw::MigManager::Aks)
                    || mig.aks_creates(&p.name)
            })
            .min_by(|a, b| {
                a.compute
                    .cmp(&b.compute)
                    .then(a.memory_gib.total_cmp(&b.memory_gib))
            })?;
        let f = round4(f64::from(p.compute) / slices);
        (
            f,
            format!(
                "[[workload]] name = \"{name}\": gpu_fraction = {f}, sharing = \"mig\" ({} on {})",
                p.name, gpu.name
            ),
            format!("a {} MIG instance", p.name),
        )
    } else {
        let replicas = (1.0 / share).floor().max(2.0) as u32;
        let replicas = match need {
            Some(n) => (2..=replicas).rev().find(|r| {
                gpu.memory_gib
                    * crate::engine::memory::time_sliced_cap(
                        *r,
                        catalog.assumptions.time_slicing_memory_headroom,
                    )
                    + 1e-9
                    >= n
            })?,
            None => replicas,
        };
        let f = round4(1.0 / f64::from(replicas));
        (
            f,
            format!("[[workload]] name = \"{name}\": gpu_fraction = {f}, sharing = \"time-slicing\" ({replicas} replicas per {}; needs a recorded [[decision]])", gpu.name),
            format!("a {replicas}-way time-sliced {} ({} has no MIG)", gpu.name, gpu.name),
        )
    };
    if fraction >= now {
        // Nothing smaller than what it has holds its memory.
        return None;
    }
    let saving = round(idle_cost * (1.0 - fraction / now.max(1e-9)).max(0.0));
    Some(Advice {
        kind: "right-size",
        workload: Some(name.clone()),
        pool: None,
        saving_usd: Some(saving.min(round(idle_cost))),
        message: format!(
            "`{name}` kept what it held busy {:.0}% of the time; {what} ({fraction} of a GPU{}) would have held the same work",
            eff * 100.0,
            need.map(|n| format!(", {n:.1} GiB needed")).unwrap_or_else(|| ", memory need unknown: declare gpu_memory_gib".into())
        ),
        change,
    })
}

/// Covered days of data below which no reservation is advised.
const MIN_RESERVATION_DAYS: i64 = 30;

/// Reservation advice for an on-demand plan pool from the GPUs it held per covered window:
/// at least [`MIN_RESERVATION_DAYS`] covered, and terms up to the plan's `reservation_term`.
fn reservation(
    plan: &Plan,
    catalog: &Catalog,
    p: &crate::plan::raw::Pool,
    gpus: f64,
    held: Option<&BTreeMap<i64, f64>>,
    t: &Telemetry,
    covered: i64,
) -> Option<ReservationAdvice> {
    if p.capacity() != Capacity::OnDemand || gpus <= 0.0 || covered < 86_400 {
        return None;
    }
    let held = held?;
    // Windows with data but nothing held count as zero; windows without data do not count.
    let windows = (covered / t.step.max(1)).max(1) as usize;
    let mut v: Vec<f64> = held.values().copied().collect();
    v.resize(windows.max(v.len()), 0.0);
    let p10 = quantile(&v, 0.10);
    let p50 = quantile(&v, 0.50);
    let nodes = ((p10 + 1e-6) / gpus).floor() as i64;
    let nodes = nodes.min(p.nodes().max());
    if nodes < 1 {
        return None;
    }
    let (sku, region) = (p.sku.get(), p.region.get());
    let od =
        crate::engine::cost::listed(catalog, plan.provider(), sku, region, Capacity::OnDemand)?;
    let month = crate::core::HOURS_PER_MONTH * nodes as f64;
    let mut options = Vec::new();
    // A reservation commits for a year or more: less than a month of covered data is no
    // basis for one, and a term longer than the plan allows is not advised.
    let days = covered as f64 / 86_400.0;
    let enough = covered >= MIN_RESERVATION_DAYS * 86_400;
    let plan_term = plan.reservation_term();
    for (cap, term) in [
        (Capacity::Reserved1y, "reserved-1y"),
        (Capacity::Reserved3y, "reserved-3y"),
    ] {
        if !enough || !plan_term.allows(cap) {
            continue;
        }
        if let Some(r) = crate::engine::cost::listed(catalog, plan.provider(), sku, region, cap) {
            options.push(ReservationOption {
                term,
                usd_per_month: round(r.usd_per_hour * month),
                saving_usd_per_month: round((od.usd_per_hour - r.usd_per_hour) * month),
                break_even_utilization: round4(r.usd_per_hour / od.usd_per_hour),
                source: r.source.to_string(),
            });
        }
    }
    let note = options.is_empty().then(|| {
        if !enough {
            format!(
                "not advised: the window covers {} day(s) of data; a reservation commits for a year or more, so at least {MIN_RESERVATION_DAYS} covered days are needed",
                crate::core::num(days)
            )
        } else if plan_term == crate::core::ReservationTerm::None {
            "not advised: the plan's reservation_term = \"none\"".to_owned()
        } else {
            format!(
                "no reserved price for {sku} in {region} in the catalog{}",
                match plan.provider() {
                    crate::plan::raw::Provider::Azure =>
                        " (Azure reservations are unknown offline; `catalog refresh` fetches them)",
                    crate::plan::raw::Provider::Aws => "",
                }
            )
        }
    });
    Some(ReservationAdvice {
        pool: p.name.get().clone(),
        sku: sku.clone(),
        region: region.clone(),
        floor_gpus: round(p10),
        p10_gpus: round(p10),
        p50_gpus: round(p50),
        nodes,
        on_demand_usd_per_month: round(od.usd_per_hour * month),
        options,
        note,
    })
}

/// Empty stretches shorter than this are churn between pods, not a node held empty.
const EMPTY_STRETCH: i64 = 3_600;

/// Per node: GPU-seconds offered and not requested by running pods, and time with nothing
/// requested at all; costed at the matched plan pool's price per GPU. A node empty for more
/// than a day is advice: the autoscaler is not removing it, or the pool floor holds it.
fn idle_nodes(
    plan: &Plan,
    catalog: &Catalog,
    t: &Telemetry,
    advice: &mut Vec<Advice>,
) -> Vec<IdleNode> {
    let mut out = Vec::new();
    for (name, n) in &t.nodes {
        let mut idle = 0.0;
        let mut empty = 0;
        // Contiguous empty stretches: the autoscaler removes a node empty for ten minutes by
        // default, so only stretches of an hour or more say a node was held empty; scattered
        // empty windows between pods are churn, not advice.
        let (mut stretch, mut held_empty, mut longest) = (0i64, 0i64, 0i64);
        let mut last: Option<i64> = None;
        let close_stretch = |stretch: &mut i64, held: &mut i64, longest: &mut i64| {
            if *stretch >= EMPTY_STRETCH {
                *held += *stretch;
            }
            *longest = (*longest).max(*stretch);
            *stretch = 0;
        };
        for (ts, cap) in &n.capacity {
            if *cap <= 0.0 {
                continue;
            }
            let alloc = n.allocated.get(ts).copied().unwrap_or(0.0);
            idle += (cap - alloc).max(0.0);
            if alloc <= 0.0 {
                let secs = (cap / n.gpus.max(1e-9)).round() as i64;
                empty += secs;
                if last.is_some_and(|l| ts - l > t.step) {
                    close_stretch(&mut stretch, &mut held_empty, &mut longest);
                }
                stretch += secs;
                last = Some(*ts);
            } else {
                close_stretch(&mut stretch, &mut held_empty, &mut longest);
                last = None;
            }
        }
        close_stretch(&mut stretch, &mut held_empty, &mut longest);
        if idle <= 0.01 {
            continue;
        }
        let pool = n
            .plan_pool
            .as_deref()
            .and_then(|name| plan.pool(name))
            .or_else(|| {
                n.pool
                    .as_deref()
                    .and_then(|l| plan.pools().iter().find(|p| pool_matches(l, p.name.get())))
            });
        let price = pool.and_then(|p| pool_gpu_second(plan, catalog, p));
        let cost = price.map(|p| round(idle * p));
        if held_empty >= 86_400 {
            let days = held_empty as f64 / 86_400.0;
            advice.push(Advice {
                kind: "empty-node",
                workload: None,
                pool: pool.map(|p| p.name.get().clone()),
                saving_usd: price.map(|p| round(held_empty as f64 * p * n.gpus)),
                message: format!(
                    "node `{name}`{} sat empty for {days:.1} day(s) in stretches of an hour or more (the longest {:.1} h) with no GPU requested",
                    n.pool
                        .as_deref()
                        .map(|l| format!(" (pool `{l}`)"))
                        .unwrap_or_default(),
                    longest as f64 / 3600.0
                ),
                change: match pool {
                    Some(p) if p.nodes().min() > 0 => format!(
                        "[[pool]] name = \"{}\": lower nodes.min (now {}) or let the autoscaler remove empty nodes",
                        p.name.get(),
                        p.nodes().min()
                    ),
                    _ => "check the cluster autoscaler's scale-down (scale-down-unneeded-time, pods that block eviction)".into(),
                },
            });
        }
        out.push(IdleNode {
            node: name.clone(),
            pool_label: n.pool.clone(),
            pool: pool.map(|p| p.name.get().clone()),
            empty_seconds: empty,
            longest_empty_seconds: longest,
            idle_gpu_seconds: round(idle),
            idle_cost_usd: cost,
        });
    }
    out.sort_by(|a, b| {
        b.idle_cost_usd
            .unwrap_or(0.0)
            .total_cmp(&a.idle_cost_usd.unwrap_or(0.0))
            .then(b.idle_gpu_seconds.total_cmp(&a.idle_gpu_seconds))
            .then(a.node.cmp(&b.node))
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::review::telemetry::{NodeSeries, Telemetry};

    fn plan() -> (Plan, Catalog) {
        let catalog = Catalog::embedded(&[crate::core::Provider::Aws]).expect("catalog");
        let text = "version = 1\n[plan]\nname = \"p\"\nowner = \"o\"\nprovider = \"aws\"\nregions = [\"us-east-1\"]\n\n[[workload]]\nname = \"w\"\nteam = \"t\"\nkind = \"batch\"\ngpus = 1\nskus = [\"g6.xlarge\"]\n";
        let p = crate::plan::load_and_validate(
            crate::source::SourceFile::new("p.toml", text.to_owned()),
            &catalog,
        )
        .unwrap_or_else(|_| panic!("plan"));
        (p, catalog)
    }

    /// A one-GPU node over `windows` 60 s windows, empty where `empty(k)`.
    fn node(windows: i64, empty: impl Fn(i64) -> bool) -> Telemetry {
        let mut n = NodeSeries {
            gpus: 1.0,
            ..NodeSeries::default()
        };
        for k in 0..windows {
            n.capacity.insert(k * 60, 60.0);
            if !empty(k) {
                n.allocated.insert(k * 60, 60.0);
            }
        }
        Telemetry {
            step: 60,
            nodes: BTreeMap::from([("node-a".to_owned(), n)]),
            ..Telemetry::default()
        }
    }

    #[test]
    fn empty_node_advice_comes_from_contiguous_stretches_only() {
        let (p, c) = plan();
        // Four days of 50 minutes held, 40 empty: two days empty in all, never an hour at a
        // time. No advice, and the longest stretch says why.
        let t = node(4 * 1440, |k| k % 90 >= 50);
        let mut advice = Vec::new();
        let out = idle_nodes(&p, &c, &t, &mut advice);
        assert!(
            advice.is_empty(),
            "{:?}",
            advice.first().map(|a| &a.message)
        );
        assert_eq!(out[0].longest_empty_seconds, 40 * 60);
        assert!(out[0].empty_seconds > 86_400);
        // A day and a half empty in one stretch is advice, for that stretch.
        let t = node(3 * 1440, |k| k >= 1440);
        let mut advice = Vec::new();
        idle_nodes(&p, &c, &t, &mut advice);
        assert_eq!(advice.len(), 1);
        assert!(
            advice[0].message.contains("sat empty for 2.0 day(s)")
                && advice[0].message.contains("the longest 48.0 h"),
            "{}",
            advice[0].message
        );
    }
}
