//! From telemetry and the plan to the review: allocated against used GPU-seconds per team and
//! workload, what the idle part cost, stalled pods, idle pool floors, reservation fill, cost
//! per 1M tokens, and recommendations with what each saves and the plan change to make.

use std::collections::BTreeMap;

use serde::Serialize;

use super::telemetry::{format_time, PodSeries, Telemetry};
use crate::engine::recommend::Recommendation;
use crate::plan::Plan;

pub const SCHEMA: &str = "gpuplan.review/v1";

#[derive(Debug, Serialize)]
pub struct Review {
    pub schema: &'static str,
    pub plan: String,
    pub source: String,
    pub window: Window,
    pub teams: Vec<TeamRow>,
    pub workloads: Vec<WorkloadRow>,
    pub stalled: Vec<Stalled>,
    pub idle_pools: Vec<IdlePool>,
    /// Nodes with GPUs nobody requested (needs node metrics; empty otherwise).
    pub idle_nodes: Vec<IdleNode>,
    pub reservations: Vec<ReservationFill>,
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

#[derive(Debug, Serialize)]
pub struct TeamRow {
    pub team: String,
    pub allocated_gpu_seconds: f64,
    pub used_gpu_seconds: f64,
    pub efficiency: Option<f64>,
    pub idle_cost_usd: f64,
}

#[derive(Debug, Serialize)]
pub struct WorkloadRow {
    pub workload: String,
    pub team: String,
    pub allocated_gpu_seconds: f64,
    pub used_gpu_seconds: f64,
    pub efficiency: Option<f64>,
    pub idle_cost_usd: f64,
    /// `utilization` the plan expects, to compare with what was measured.
    pub planned_utilization: Option<f64>,
    pub usd_per_million_tokens: Option<f64>,
    pub pods: usize,
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
    /// GPU-seconds it offered that no pod requested.
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

#[derive(Debug, Serialize)]
pub struct Unmatched {
    pub namespace: String,
    pub pod: String,
    pub allocated_gpu_seconds: f64,
    pub used_gpu_seconds: f64,
}

#[derive(Debug, Serialize)]
pub struct Advice {
    pub kind: &'static str,
    pub workload: Option<String>,
    pub pool: Option<String>,
    pub saving_usd: f64,
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

fn round(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

fn ratio(used: f64, alloc: f64) -> Option<f64> {
    (alloc > 0.0).then(|| (used / alloc * 10_000.0).round() / 10_000.0)
}

/// A node pool label against a plan pool name: equal ignoring case and anything but letters
/// and digits, or the pool's first 12 of those (AKS pool names are at most 12 characters).
fn pool_matches(label: &str, pool: &str) -> bool {
    let norm = |s: &str| {
        s.chars()
            .filter(char::is_ascii_alphanumeric)
            .map(|c| c.to_ascii_lowercase())
            .collect::<String>()
    };
    let (l, p) = (norm(label), norm(pool));
    !l.is_empty() && (l == p || (l.len() == 12 && p.starts_with(&l)))
}

/// Per node: GPU-seconds offered and not requested, and time with nothing requested at all;
/// costed at the matched plan pool's price per GPU. A node empty for more than a day of the
/// window is advice: the autoscaler is not removing it, or the pool floor holds it.
fn idle_nodes(
    plan: &Plan,
    catalog: &crate::catalog::Catalog,
    t: &Telemetry,
    step: i64,
    advice: &mut Vec<Advice>,
) -> Vec<IdleNode> {
    let mut out = Vec::new();
    for (name, n) in &t.nodes {
        let mut idle = 0.0;
        let mut empty = 0;
        for (ts, cap) in &n.capacity {
            if *cap <= 0.0 {
                continue;
            }
            let alloc = n.allocated.get(ts).copied().unwrap_or(0.0);
            idle += (cap - alloc).max(0.0) * step as f64;
            if alloc <= 0.0 {
                empty += step;
            }
        }
        if idle <= 0.0 {
            continue;
        }
        let pool = n
            .pool
            .as_deref()
            .and_then(|l| plan.pools().iter().find(|p| pool_matches(l, p.name.get())));
        let price = pool.and_then(|p| pool_gpu_second(plan, catalog, p));
        let cost = price.map(|p| round(idle * p));
        if empty >= 86_400 {
            let days = empty as f64 / 86_400.0;
            advice.push(Advice {
                kind: "empty-node",
                workload: None,
                pool: pool.map(|p| p.name.get().clone()),
                saving_usd: price.map_or(0.0, |p| {
                    round(empty as f64 * p * n.capacity.values().copied().fold(0.0, f64::max))
                }),
                message: format!(
                    "node `{name}`{} ran {days:.1} day(s) with no GPU requested",
                    n.pool
                        .as_deref()
                        .map(|l| format!(" (pool `{l}`)"))
                        .unwrap_or_default()
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

/// Which workload a pod belongs to: its team's namespace, and the workload's name as the
/// pod's `app.kubernetes.io/name` or as its name prefix (`chat-api-7d9f...`).
fn owner<'p>(plan: &'p Plan, p: &PodSeries) -> Option<&'p str> {
    let mut best: Option<&str> = None;
    for w in plan.workloads() {
        if w.team.get() != &p.namespace {
            continue;
        }
        let name = w.name.get().as_str();
        if p.app.as_deref() == Some(name) {
            return Some(name);
        }
        if (p.pod == name || p.pod.starts_with(&format!("{name}-")))
            && best.is_none_or(|b| name.len() > b.len())
        {
            best = Some(name);
        }
    }
    best
}

fn integral(m: &BTreeMap<i64, f64>, step: i64) -> f64 {
    m.values().sum::<f64>() * step as f64
}

/// Increase of a counter over the window, across resets.
fn increase(m: &BTreeMap<i64, f64>) -> f64 {
    m.values()
        .zip(m.values().skip(1))
        .map(|(a, b)| if b >= a { b - a } else { *b })
        .sum()
}

/// Price of one GPU-second of a declared pool: its node price for its capacity type over its
/// GPUs.
fn pool_gpu_second(
    plan: &Plan,
    catalog: &crate::catalog::Catalog,
    pool: &crate::plan::raw::Pool,
) -> Option<f64> {
    let price = crate::engine::cost::pool_hour(catalog, plan.provider(), pool)?;
    let gpus = catalog.sku(plan.provider(), pool.sku.get())?.gpu_count;
    (gpus > 0).then(|| price.usd / f64::from(gpus) / 3600.0)
}

/// Price of one GPU-second for a workload: its declared pool when it runs on one (that is
/// what is paid today), else its recommended pool.
fn gpu_second_price(
    plan: &Plan,
    rec: &Recommendation,
    catalog: &crate::catalog::Catalog,
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

pub fn analyse(
    plan: &Plan,
    rec: &Recommendation,
    catalog: &crate::catalog::Catalog,
    t: &Telemetry,
    s: &Settings,
) -> Review {
    let step = t.step.max(1);
    let mut by_workload: BTreeMap<String, (f64, f64, f64, usize)> = BTreeMap::new();
    let mut unmatched = Vec::new();
    let mut stalled = Vec::new();
    let mut timeline: BTreeMap<String, BTreeMap<i64, (f64, f64)>> = BTreeMap::new();
    // Teams are namespaces: every pod counts, claimed by a workload or not.
    let mut ns_totals: BTreeMap<String, (f64, f64)> = BTreeMap::new();
    for p in t.pods.values() {
        let alloc = integral(&p.allocated, step);
        let used = integral(&p.used, step);
        let e = ns_totals.entry(p.namespace.clone()).or_default();
        e.0 += alloc;
        e.1 += used;
        for (time, a) in &p.allocated {
            let e = timeline
                .entry(p.namespace.clone())
                .or_default()
                .entry(*time)
                .or_default();
            e.0 += a;
            e.1 += p.used.get(time).copied().unwrap_or(0.0);
        }
        let who = owner(plan, p);
        match who {
            Some(w) => {
                let e = by_workload.entry(w.to_owned()).or_default();
                e.0 += alloc;
                e.1 += used;
                e.2 += increase(&p.tokens);
                e.3 += 1;
            }
            None => unmatched.push(Unmatched {
                namespace: p.namespace.clone(),
                pod: p.pod.clone(),
                allocated_gpu_seconds: round(alloc),
                used_gpu_seconds: round(used),
            }),
        }
        // The longest stretch allocated with near-zero activity.
        let (mut run_start, mut best): (Option<i64>, Option<(i64, i64, f64)>) = (None, None);
        let mut peak = 0.0f64;
        let times: Vec<i64> = p.allocated.keys().copied().collect();
        for (i, time) in times.iter().enumerate() {
            let a = p.allocated[time];
            let u = p.used.get(time).copied().unwrap_or(0.0);
            let quiet = a > 0.0 && u < s.quiet_below * a;
            let contiguous = i == 0 || time - times[i - 1] == step;
            if quiet && contiguous && run_start.is_some() {
                peak = peak.max(a);
            } else if quiet {
                run_start = Some(*time);
                peak = a;
            } else {
                run_start = None;
            }
            if let Some(start) = run_start {
                let len = time + step - start;
                if best.is_none_or(|b| len > b.1) {
                    best = Some((start, len, peak));
                }
            }
        }
        if let Some((start, len, peak)) = best.filter(|b| b.1 >= s.stalled_after) {
            stalled.push(Stalled {
                workload: who.map(str::to_owned),
                team: p.namespace.clone(),
                pod: p.pod.clone(),
                since: format_time(start),
                seconds: len,
                allocated_gpus: peak,
            });
        }
    }

    let window_s = (t.to - t.from) as f64;
    let mut workloads = Vec::new();
    let mut teams: BTreeMap<String, (f64, f64, f64)> = BTreeMap::new();
    let mut advice = Vec::new();
    for w in plan.workloads() {
        let name = w.name.get();
        let (alloc, used, tokens, pods) =
            by_workload.get(name.as_str()).copied().unwrap_or_default();
        let price = gpu_second_price(plan, rec, catalog, name).unwrap_or(0.0);
        let idle_cost = (alloc - used).max(0.0) * price;
        teams.entry(w.team.get().clone()).or_default().2 += idle_cost;
        let eff = ratio(used, alloc);
        if let Some(e) = eff.filter(|e| *e < s.low_utilization) {
            // A share of one GPU sized to what was used, in tenths, at least one tenth.
            let now = w.gpu_share().min(1.0);
            let share = ((e * now * 10.0).ceil() / 10.0).max(0.1);
            let saving = idle_cost.min(alloc * price) * (1.0 - share / now.max(1e-9)).max(0.0);
            advice.push(Advice {
                kind: "right-size",
                workload: Some(name.clone()),
                pool: None,
                saving_usd: round(saving),
                message: format!(
                    "`{name}` kept what it held busy {:.0}% of the time; a {share} share of a GPU would have held the same work",
                    e * 100.0
                ),
                change: format!(
                    "[[workload]] name = \"{name}\": gpu_fraction = {share}, sharing = \"mig\" (or \"time-slicing\" with a recorded decision)"
                ),
            });
        }
        workloads.push(WorkloadRow {
            workload: name.clone(),
            team: w.team.get().clone(),
            allocated_gpu_seconds: round(alloc),
            used_gpu_seconds: round(used),
            efficiency: eff,
            idle_cost_usd: round(idle_cost),
            planned_utilization: w.utilization(),
            usd_per_million_tokens: (tokens > 0.0)
                .then(|| (alloc * price / tokens * 1e6 * 10_000.0).round() / 10_000.0),
            pods,
        });
    }
    for st in &stalled {
        let price = st
            .workload
            .as_deref()
            .and_then(|w| gpu_second_price(plan, rec, catalog, w))
            .unwrap_or(0.0);
        advice.push(Advice {
            kind: "reap-stalled",
            workload: st.workload.clone(),
            pool: None,
            saving_usd: round(st.allocated_gpus * st.seconds as f64 * price),
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

    // Pool floors paid all window against what their workloads held.
    let mut idle_pools = Vec::new();
    let mut reservations = Vec::new();
    for p in plan.pools() {
        let Some(sku) = catalog.sku(plan.provider(), p.sku.get()) else {
            continue;
        };
        let gpus = f64::from(sku.gpu_count);
        let floor = p.nodes().min().max(0) as f64 * gpus * window_s;
        let held: f64 = p
            .workloads
            .iter()
            .filter_map(|w| by_workload.get(w.get().as_str()))
            .map(|x| x.0)
            .sum();
        let price = pool_gpu_second(plan, catalog, p).unwrap_or(0.0);
        let idle = (floor - held).max(0.0);
        if idle > 0.0 {
            let nodes_idle = (idle / window_s / gpus.max(1.0)).floor();
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
                    saving_usd: round(nodes_idle * gpus * window_s * price),
                    message: format!(
                        "pool `{}` kept {} node(s) of its floor idle on average",
                        p.name.get(),
                        nodes_idle
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
                fill: (held.min(floor) / floor * 10_000.0).round() / 10_000.0,
            });
        }
    }
    let idle_nodes = idle_nodes(plan, catalog, t, step, &mut advice);
    for (ns, (a, u)) in ns_totals {
        let team = teams.entry(ns).or_default();
        team.0 = a;
        team.1 = u;
    }
    advice.sort_by(|a, b| {
        b.saving_usd
            .total_cmp(&a.saving_usd)
            .then(a.kind.cmp(b.kind))
    });

    Review {
        schema: SCHEMA,
        plan: plan.name().to_owned(),
        source: t.source.clone(),
        window: Window {
            from: format_time(t.from),
            to: format_time(t.to),
            step_seconds: step,
        },
        teams: teams
            .into_iter()
            .map(|(team, (a, u, c))| TeamRow {
                team,
                allocated_gpu_seconds: round(a),
                used_gpu_seconds: round(u),
                efficiency: ratio(u, a),
                idle_cost_usd: round(c),
            })
            .collect(),
        workloads,
        stalled,
        idle_pools,
        idle_nodes,
        reservations,
        unmatched,
        recommendations: advice,
        timeline: timeline
            .into_iter()
            .map(|(team, pts)| (team, pts.into_iter().map(|(t, (a, u))| (t, a, u)).collect()))
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::pool_matches;

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
}
