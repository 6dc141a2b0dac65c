//! From telemetry and the plan to the review: allocated against used GPU-seconds per team,
//! workload, GPU model and pool; what the idle part cost; stalled pods; unmet (Pending)
//! demand; idle pool floors and nodes over the span the data covers; reservation fill and
//! reservation advice from measured floors; cost per 1M tokens; and recommendations with
//! what each saves and the plan change to make. The rows it fills are in [`super::rows`];
//! the advice on right-sizing, unmet demand, reservations and empty nodes in
//! [`super::advice`]; next quarter's forecast in [`super::forecast`].

use std::collections::BTreeMap;

pub use super::rows::*;

use super::advice::{idle_nodes, reservation, right_size, unmet_demand};
use super::assemble::plan_pool;
use super::owners::{matched, MatchCounts, Matched};
use super::telemetry::{format_time, PodSeries, Signal, Telemetry};
use crate::catalog::Catalog;
use crate::engine::recommend::Recommendation;
use crate::plan::Plan;

pub(crate) const SCHEMA: &str = "gpuplan.review/v1";

/// Share of held time in `CrashLoopBackOff` from which a workload's idleness is its crash,
/// not its size: no right-size, no consolidation.
pub(crate) const CRASHLOOP_SHARE: f64 = 0.1;

/// Rounded to a hundredth, without a negative zero.
pub(super) fn round(x: f64) -> f64 {
    let r = (x * 100.0).round() / 100.0;
    if r == 0.0 {
        0.0
    } else {
        r
    }
}

pub(super) fn round4(x: f64) -> f64 {
    let r = (x * 10_000.0).round() / 10_000.0;
    if r == 0.0 {
        0.0
    } else {
        r
    }
}

pub(super) fn ratio(used: f64, alloc: f64) -> Option<f64> {
    (alloc > 0.0).then(|| round4(used / alloc))
}

/// Price of one GPU-second of a declared pool: its node price for its capacity type over its
/// GPUs.
pub(super) fn pool_gpu_second(
    plan: &Plan,
    catalog: &Catalog,
    pool: &crate::plan::raw::Pool,
) -> Option<f64> {
    let price = crate::engine::cost::pool_hour(catalog, plan.provider(), pool)?;
    let gpus = catalog.sku(plan.provider(), pool.sku.get())?.gpu_count;
    (gpus > 0).then(|| price.usd / f64::from(gpus) / 3600.0)
}

/// Price of one GPU-second for a workload: its declared pool when it runs on one (that is
/// what is paid today), else its recommended pool.
pub(super) fn gpu_second_price(
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
pub(super) fn quantile(v: &[f64], q: f64) -> f64 {
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
    /// How the pod was matched to `workload`.
    matched: Option<Matched>,
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
    /// Its usage was read from a time-sliced card: the card's activity, split by allocation.
    shared_card: bool,
}

/// GPU-seconds and costs summed over pods (a team, workload, model or pool).
#[derive(Default, Clone, Copy)]
struct Sums {
    alloc: f64,
    seen: f64,
    used: f64,
    pending: f64,
    idle_cost: f64,
    cost: f64,
    priced: bool,
    shared: bool,
}
impl Sums {
    fn figures(&self) -> Figures {
        Figures {
            allocated_gpu_seconds: round(self.alloc),
            used_gpu_seconds: round(self.used),
            no_data_gpu_seconds: round(self.alloc - self.seen),
            efficiency: ratio(self.used, self.seen),
            efficiency_of_shared_cards: self.shared,
            idle_cost_usd: round(self.idle_cost),
            pending_gpu_seconds: round(self.pending),
        }
    }
    fn add(&mut self, f: &PodFacts) {
        self.shared |= f.shared_card;
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

/// Each pod with what the figures need: its workload and how it was matched, its pool and
/// GPU model, its GPU-seconds allocated, seen and used, and its price.
fn pod_facts<'a>(
    plan: &'a Plan,
    rec: &Recommendation,
    catalog: &Catalog,
    t: &'a Telemetry,
) -> Vec<PodFacts<'a>> {
    t.pods
        .values()
        .map(|p| {
            let (workload, how) = matched(plan, p).unzip();
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
                matched: how,
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
                shared_card: p.has_usage && node.is_some_and(|n| n.replicas > 1),
            }
        })
        .collect()
}

/// Sums of a workload's pods, with its tokens, pod count, crash-loop and held seconds.
type WorkloadSums = (Sums, f64, usize, f64, f64);

/// Sums of a pool's pods, with its GPU model and the usage signals read on it.
type PoolSums = (Sums, Option<String>, Vec<Signal>);

/// Every pod's figures summed by team (teams are namespaces: every pod counts, claimed by a
/// workload or not), workload, model and pool, with the pods listed apart.
#[derive(Default)]
struct Tally<'a> {
    teams: BTreeMap<String, Sums>,
    by_workload: BTreeMap<&'a str, WorkloadSums>,
    matches: BTreeMap<&'a str, MatchCounts>,
    by_model: BTreeMap<String, Sums>,
    by_pool: BTreeMap<(String, bool), PoolSums>,
    pool_held: BTreeMap<(String, bool), BTreeMap<i64, f64>>,
    timeline: BTreeMap<String, BTreeMap<i64, (f64, f64)>>,
    unmatched: Vec<Unmatched>,
    no_usage: Vec<Unmatched>,
    stalled: Vec<Stalled>,
    pending: Vec<PendingPod>,
}

fn tally<'a>(facts: &[PodFacts<'a>], t: &Telemetry, s: &Settings) -> Tally<'a> {
    let step = t.step.max(1);
    let Tally {
        mut teams,
        mut by_workload,
        mut matches,
        mut by_model,
        mut by_pool,
        mut pool_held,
        mut timeline,
        mut unmatched,
        mut no_usage,
        mut stalled,
        mut pending,
    } = Tally::default();
    for f in facts {
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
            for (time, g) in &p.gpus {
                *held.entry(*time).or_default() += g;
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
        if let (Some(w), Some(how)) = (f.workload, f.matched) {
            matches.entry(w).or_default().add(how);
        }
        match f.workload {
            Some(w) => {
                let e = by_workload.entry(w).or_default();
                e.0.add(f);
                e.1 += p.tokens;
                e.2 += 1;
                e.3 += p.crashloop;
                e.4 += p.held_seconds;
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
                unscheduled_gpu_seconds: p.scheduled_known.then(|| round(p.unscheduled)),
                image_pull_gpu_seconds: round(p.image_pull),
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
        stalled.extend(stalled_of(f, t, s));
    }
    Tally {
        teams,
        by_workload,
        matches,
        by_model,
        by_pool,
        pool_held,
        timeline,
        unmatched,
        no_usage,
        stalled,
        pending,
    }
}

/// A pod's longest stretch allocated with near-zero activity, when it is longer than the
/// threshold; a pod that finished holds nothing, so it is never stalled.
fn stalled_of(f: &PodFacts<'_>, t: &Telemetry, s: &Settings) -> Option<Stalled> {
    let p = f.p;
    let step = t.step.max(1);
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
    let (start, len, mean) = best.filter(|b| b.1 >= s.stalled_after)?;
    // The GPUs it held over the run: its level, which a scrape interval longer than the step
    // does not inflate (its GPU-seconds over the run's length can).
    let held = p
        .gpus
        .range(start..start + len)
        .map(|(_, g)| *g)
        .fold(None, |m: Option<f64>, g| Some(m.map_or(g, |m| m.max(g))))
        .unwrap_or(mean);
    Some(Stalled {
        workload: f.workload.map(str::to_owned),
        team: p.namespace.clone(),
        pod: p.pod.clone(),
        since: format_time(start),
        seconds: len,
        allocated_gpus: round(held),
    })
}

/// Each planned workload's row, with crash-loop and right-size advice (the right-sizes also
/// go to the forecast).
fn workload_rows(
    plan: &Plan,
    rec: &Recommendation,
    catalog: &Catalog,
    s: &Settings,
    by_workload: &BTreeMap<&str, WorkloadSums>,
    matches: &mut BTreeMap<&str, MatchCounts>,
) -> (
    Vec<WorkloadRow>,
    Vec<Advice>,
    BTreeMap<String, super::advice::RightSize>,
) {
    let mut advice = Vec::new();
    let mut workloads = Vec::new();
    let mut right_sizes = BTreeMap::new();
    for w in plan.workloads() {
        let name = w.name.get();
        let (sums, tokens, pods, crash, held) =
            by_workload.get(name.as_str()).copied().unwrap_or_default();
        let price = gpu_second_price(plan, rec, catalog, name).unwrap_or(0.0);
        let eff = ratio(sums.used, sums.seen);
        let crashloop_share = (held > 0.0 && crash > 0.0).then(|| round4(crash / held));
        // A pod that restarts in a loop holds its GPU idle whatever its size: the fix is the
        // crash, and a smaller slice would hide it.
        let crashing = crashloop_share.is_some_and(|c| c >= CRASHLOOP_SHARE);
        if crashing {
            advice.push(Advice {
                kind: "crash-loop",
                workload: Some(name.clone()),
                pool: None,
                saving_usd: None,
                message: format!(
                    "`{name}`'s pods waited in CrashLoopBackOff {:.0}% of the time they held GPUs: the GPUs sat idle while the container restarted",
                    crashloop_share.unwrap_or(0.0) * 100.0
                ),
                change: "fix the crash (kubectl describe / logs of the pod) before sizing it: no right-size is advised from these figures".into(),
            });
        }
        if let Some(e) = eff.filter(|e| *e < s.low_utilization && !crashing) {
            if let Some((a, fit)) = right_size(plan, rec, catalog, w, e, sums.idle_cost) {
                advice.push(a);
                right_sizes.insert(name.clone(), fit);
            }
        }
        workloads.push(WorkloadRow {
            workload: name.clone(),
            team: w.team.get().clone(),
            figures: sums.figures(),
            planned_utilization: w.utilization(),
            usd_per_million_tokens: (tokens > 0.0)
                .then(|| round4(sums.alloc * price / tokens * 1e6)),
            pods,
            matched_pods: matches.remove(name.as_str()).unwrap_or_default(),
            crashloop_share,
        });
    }
    (workloads, advice, right_sizes)
}

/// Advice to reap each stalled pod, priced at its workload's GPU-second.
fn stalled_advice(
    plan: &Plan,
    rec: &Recommendation,
    catalog: &Catalog,
    stalled: &[Stalled],
) -> Vec<Advice> {
    let mut advice = Vec::new();
    for st in stalled {
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
    advice
}

/// Pool floors paid over the covered span against what ran on them: idle floors, reservation
/// fill, and reservation advice.
struct Floors {
    idle_pools: Vec<IdlePool>,
    reservations: Vec<ReservationFill>,
    reservation_advice: Vec<ReservationAdvice>,
}

fn pool_floors(
    plan: &Plan,
    catalog: &Catalog,
    t: &Telemetry,
    by_pool: &BTreeMap<(String, bool), PoolSums>,
    pool_held: &BTreeMap<(String, bool), BTreeMap<i64, f64>>,
    advice: &mut Vec<Advice>,
) -> Floors {
    let covered = t.covered.max(0);
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
    Floors {
        idle_pools,
        reservations,
        reservation_advice,
    }
}

/// What the data covers: the window asked for and held, the exporters' intervals, the
/// exporters' gaps, pods without usage data and usage without a pod.
fn coverage_of(t: &Telemetry, no_usage: Vec<Unmatched>) -> Coverage {
    let covered = t.covered.max(0);
    Coverage {
        requested_seconds: t.to - t.from,
        covered_seconds: covered,
        share: ratio(covered as f64, (t.to - t.from) as f64).unwrap_or(0.0),
        data_from: t.data_from.map(format_time),
        data_to: t.data_to.map(format_time),
        kube_state_metrics_interval_seconds: t.ksm_interval,
        dcgm_interval_seconds: t.dcgm_interval,
        dcgm_intervals_seconds: t.dcgm_intervals.clone(),
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
    }
}

fn model_rows(by_model: BTreeMap<String, Sums>) -> Vec<ModelRow> {
    by_model
        .into_iter()
        .map(|(model, x)| ModelRow {
            model,
            allocated_gpu_seconds: round(x.alloc),
            used_gpu_seconds: round(x.used),
            efficiency: ratio(x.used, x.seen),
            allocated_cost_usd: x.priced.then(|| round(x.cost)),
            idle_cost_usd: x.priced.then(|| round(x.idle_cost)),
        })
        .collect()
}

/// Each pool's row, with its peak and p95 GPUs held.
fn pool_rows(
    by_pool: &BTreeMap<(String, bool), PoolSums>,
    pool_held: &BTreeMap<(String, bool), BTreeMap<i64, f64>>,
) -> Vec<PoolRow> {
    let p95 = |k: &(String, bool)| -> (f64, f64) {
        let v: Vec<f64> = pool_held
            .get(k)
            .map(|m| m.values().copied().collect())
            .unwrap_or_default();
        let peak = v.iter().copied().fold(0.0, f64::max);
        (round(peak), round(quantile(&v, 0.95)))
    };
    by_pool
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
                efficiency_of_shared_cards: x.shared,
                allocated_cost_usd: x.priced.then(|| round(x.cost)),
                idle_cost_usd: x.priced.then(|| round(x.idle_cost)),
                peak_gpus: peak,
                p95_gpus: p95,
            }
        })
        .collect()
}

pub fn analyse(
    plan: &Plan,
    rec: &Recommendation,
    catalog: &Catalog,
    t: &Telemetry,
    s: &Settings,
) -> Review {
    let step = t.step.max(1);
    let facts = pod_facts(plan, rec, catalog, t);

    let Tally {
        teams,
        by_workload,
        mut matches,
        by_model,
        by_pool,
        pool_held,
        timeline,
        unmatched,
        no_usage,
        stalled,
        pending,
    } = tally(&facts, t, s);

    let (workloads, mut advice, right_sizes) =
        workload_rows(plan, rec, catalog, s, &by_workload, &mut matches);
    advice.extend(stalled_advice(plan, rec, catalog, &stalled));
    advice.extend(unmet_demand(plan, t, &pending));

    let Floors {
        idle_pools,
        reservations,
        reservation_advice,
    } = pool_floors(plan, catalog, t, &by_pool, &pool_held, &mut advice);
    let idle_nodes = idle_nodes(plan, catalog, t, &mut advice);
    advice.sort_by(|a, b| {
        b.saving_usd
            .unwrap_or(0.0)
            .total_cmp(&a.saving_usd.unwrap_or(0.0))
            .then(a.kind.cmp(b.kind))
    });

    let (serving, serving_missing) = super::serving::serving(plan, t);
    let next_quarter =
        super::forecast::forecast(plan, t, &workloads, &right_sizes, &serving, &s.forecast);
    Review {
        schema: SCHEMA,
        plan: plan.name().to_owned(),
        source: t.source.clone(),
        window: Window {
            from: format_time(t.from),
            to: format_time(t.to),
            step_seconds: step,
        },
        coverage: coverage_of(t, no_usage),
        teams: teams
            .into_iter()
            .map(|(team, x)| TeamRow {
                team,
                figures: x.figures(),
            })
            .collect(),
        workloads,
        models: model_rows(by_model),
        pools: pool_rows(&by_pool, &pool_held),
        stalled,
        pending,
        idle_pools,
        idle_nodes,
        reservations,
        purchase_fill: Vec::new(),
        reservation_advice,
        unmatched,
        recommendations: advice,
        serving,
        serving_missing,
        next_quarter,
        timeline: timeline
            .into_iter()
            .map(|(team, pts)| (team, pts.into_iter().map(|(t, (a, u))| (t, a, u)).collect()))
            .collect(),
    }
}
