//! Each pod's facts, and every pod summed by team, workload, GPU model and pool.

use crate::review::rows::{Figures, PendingPod, Stalled, Unmatched};
use std::collections::BTreeMap;

use crate::catalog::Catalog;
use crate::engine::recommend::Recommendation;
use crate::plan::Plan;
use crate::review::assemble::plan_pool;
use crate::review::numbers::{gpu_second_price, pool_gpu_second, ratio, round};
use crate::review::owners::{matched, MatchCounts, Matched};
use crate::review::telemetry::{format_time, PodSeries, Signal, Telemetry};
use crate::review::Settings;

/// What one pod came to, once.
pub(super) struct PodFacts<'a> {
    pub(super) p: &'a PodSeries,
    pub(super) workload: Option<&'a str>,
    /// How the pod was matched to `workload`.
    pub(super) matched: Option<Matched>,
    /// Plan pool it ran on (by its node's pool label, else the workload's declared pool).
    pub(super) plan_pool: Option<&'a crate::plan::Pool>,
    pub(super) pool_label: Option<String>,
    pub(super) model: Option<String>,
    pub(super) signal: Option<Signal>,
    pub(super) alloc: f64,
    /// Allocated GPU-seconds that have usage data.
    pub(super) alloc_seen: f64,
    pub(super) used: f64,
    pub(super) price: Option<f64>,
    /// Its usage was read from a time-sliced card: the card's activity, split by allocation.
    pub(super) shared_card: bool,
}

/// GPU-seconds and costs summed over pods (a team, workload, model or pool).
#[derive(Default, Clone, Copy)]
pub(super) struct Sums {
    pub(super) alloc: f64,
    pub(super) seen: f64,
    pub(super) used: f64,
    pub(super) pending: f64,
    pub(super) idle_cost: f64,
    pub(super) cost: f64,
    pub(super) priced: bool,
    pub(super) shared: bool,
}
impl Sums {
    pub(super) fn figures(&self) -> Figures {
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
    pub(super) fn add(&mut self, f: &PodFacts) {
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
pub(super) fn pod_facts<'a>(
    plan: &'a Plan,
    rec: &Recommendation,
    catalog: &Catalog,
    t: &'a Telemetry,
) -> Vec<PodFacts<'a>> {
    t.pods
        .values()
        .flatten()
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
pub(super) type WorkloadSums = (Sums, f64, usize, f64, f64);

/// Sums of a pool's pods, with its GPU model and the usage signals read on it.
pub(super) type PoolSums = (Sums, Option<String>, Vec<Signal>);

/// Every pod's figures summed by team (teams are namespaces: every pod counts, claimed by a
/// workload or not), workload, model and pool, with the pods listed apart.
#[derive(Default)]
pub(super) struct Tally<'a> {
    pub(super) teams: BTreeMap<String, Sums>,
    pub(super) by_workload: BTreeMap<&'a str, WorkloadSums>,
    pub(super) matches: BTreeMap<&'a str, MatchCounts>,
    pub(super) by_model: BTreeMap<String, Sums>,
    pub(super) by_pool: BTreeMap<(String, bool), PoolSums>,
    pub(super) pool_held: BTreeMap<(String, bool), BTreeMap<i64, f64>>,
    pub(super) timeline: BTreeMap<String, BTreeMap<i64, (f64, f64)>>,
    pub(super) unmatched: Vec<Unmatched>,
    pub(super) no_usage: Vec<Unmatched>,
    pub(super) stalled: Vec<Stalled>,
    pub(super) pending: Vec<PendingPod>,
}

pub(super) fn tally<'a>(facts: &[PodFacts<'a>], t: &Telemetry, s: &Settings) -> Tally<'a> {
    let mut out = Tally::default();
    for f in facts {
        let p = f.p;
        out.teams.entry(p.namespace.clone()).or_default().add(f);
        out.by_model
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
            let e = out.by_pool.entry(k.clone()).or_default();
            e.0.add(f);
            if e.1.is_none() {
                e.1.clone_from(&f.model);
            }
            e.2.extend(f.signal);
            let held = out.pool_held.entry(k.clone()).or_default();
            for (time, g) in &p.gpus {
                *held.entry(time).or_default() += g;
            }
        }
        // The chart draws the level held in each window, as the pool peaks read it: with a
        // scrape longer than the step a sampled window holds more than a step's GPU-seconds,
        // which divided by the step would overstate the GPUs. Used at the share of the held
        // GPU-seconds busy in the last sampled window.
        let mut busy = 0.0;
        for (time, g) in &p.gpus {
            if let Some(a) = p.allocated.get(&time).filter(|a| **a > 0.0) {
                busy = (p.used.get(&time).copied().unwrap_or(0.0) / a).clamp(0.0, 1.0);
            }
            let e = out
                .timeline
                .entry(p.namespace.clone())
                .or_default()
                .entry(time)
                .or_default();
            e.0 += g;
            e.1 += g * busy;
        }
        if let (Some(w), Some(how)) = (f.workload, f.matched) {
            out.matches.entry(w).or_default().add(how);
        }
        match f.workload {
            Some(w) => {
                let e = out.by_workload.entry(w).or_default();
                e.0.add(f);
                e.1 += p.tokens;
                e.2 += 1;
                e.3 += p.crashloop;
                e.4 += p.held_seconds;
            }
            None if f.alloc > 0.0 => out.unmatched.push(Unmatched {
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
            out.pending.push(PendingPod {
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
                out.no_usage.push(Unmatched {
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
        out.stalled.extend(stalled_of(f, t, s));
    }
    out
}

/// A pod's stretches allocated with near-zero activity longer than the threshold: the
/// longest, and how many there were and what they held in all (a notebook idle every night
/// has one a night, not one in the window). A pod that finished holds nothing, so it is
/// never stalled, and a window in which it served requests (its server ran requests or gave
/// first tokens) is activity whatever the GPU's counters say: a lightly loaded server is not
/// a stalled one.
pub(super) fn stalled_of(f: &PodFacts<'_>, t: &Telemetry, s: &Settings) -> Option<Stalled> {
    let p = f.p;
    let step = t.step.max(1);
    // (start, end) of each quiet run, in order.
    let mut runs: Vec<(i64, i64)> = Vec::new();
    let mut run: Option<(i64, i64)> = None;
    let mut prev: Option<i64> = None;
    // A window left empty by a scrape jittered across its boundary is no gap.
    let slack = t.ksm_interval.map_or(0, |i| i.ceil() as i64);
    for (time, a) in &p.allocated {
        // No data is no evidence of idleness: a stretch without usage data ends a run.
        if p.unobserved.contains(&time) {
            runs.extend(run.take());
            prev = None;
            continue;
        }
        let u = p.used.get(&time).copied().unwrap_or(0.0);
        let served = p.serving.as_ref().is_some_and(|sv| {
            sv.running.get(&time).is_some_and(|r| *r > 0.0)
                || sv.finished.get(&time).is_some_and(|n| *n > 0.0)
                || sv
                    .ttft
                    .get(&time)
                    .is_some_and(|b| b.values().any(|c| *c > 0.0))
        });
        let quiet = *a > 0.0 && u < s.quiet_below * a && !served;
        let contiguous = prev.is_some_and(|x| time - x <= step + slack);
        prev = Some(time);
        run = match run {
            Some((start, _)) if quiet && contiguous => Some((start, time + step)),
            r => {
                runs.extend(r);
                quiet.then_some((time, time + step))
            }
        };
    }
    runs.extend(run);
    // The GPUs it held over a run: its level, which a scrape interval longer than the step
    // does not inflate (its GPU-seconds over the run's length can).
    let held = |start: i64, end: i64| {
        p.gpus
            .range(start, end)
            .map(|(_, g)| *g)
            .fold(None, |m: Option<f64>, g| Some(m.map_or(g, |m| m.max(g))))
            .unwrap_or_else(|| {
                p.allocated.range(start, end).map(|(_, a)| *a).sum::<f64>()
                    / (end - start).max(1) as f64
            })
    };
    let long: Vec<(i64, i64)> = runs
        .into_iter()
        .filter(|(a, b)| b - a >= s.stalled_after)
        .collect();
    let &(start, end) = long
        .iter()
        .max_by_key(|(a, b)| (b - a, std::cmp::Reverse(*a)))?;
    let all_seconds: i64 = long.iter().map(|(a, b)| b - a).sum();
    let all_gpu_seconds: f64 = long
        .iter()
        .map(|(a, b)| held(*a, *b) * (b - a) as f64)
        .sum();
    Some(Stalled {
        workload: f.workload.map(str::to_owned),
        team: p.namespace.clone(),
        pod: p.pod.clone(),
        since: format_time(start),
        seconds: end - start,
        allocated_gpus: round(held(start, end)),
        stretches: long.len(),
        all_seconds,
        all_gpu_seconds: round(all_gpu_seconds),
    })
}
