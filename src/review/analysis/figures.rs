//! The review's rows and advice from the tally: workloads, stalled pods, pool floors and
//! reservations, coverage, models and pools.

use crate::review::rows::{
    Advice, AdviceKind, Coverage, DcgmGap, IdlePool, ModelRow, PoolRow, ReservationAdvice,
    ReservationFill, RightSize, Stalled, Unmatched, WorkloadRow,
};
use std::collections::BTreeMap;

use super::tally::{PoolSums, Sums, WorkloadSums};
use crate::catalog::Catalog;
use crate::engine::recommend::Recommendation;
use crate::plan::Plan;
use crate::review::advice::{reservation, right_size};
use crate::review::numbers::CRASHLOOP_SHARE;
use crate::review::numbers::{gpu_second_price, pool_gpu_second, quantile, ratio, round, round4};
use crate::review::owners::MatchCounts;
use crate::review::says::{AdviceChange, AdviceSays};
use crate::review::telemetry::{format_time, Telemetry};
use crate::review::Settings;

/// Each planned workload's row, with crash-loop and right-size advice (the right-sizes also
/// go to the forecast).
pub(super) fn workload_rows(
    plan: &Plan,
    rec: &Recommendation,
    catalog: &Catalog,
    s: &Settings,
    by_workload: &BTreeMap<&str, WorkloadSums>,
    matches: &mut BTreeMap<&str, MatchCounts>,
) -> (Vec<WorkloadRow>, Vec<Advice>, BTreeMap<String, RightSize>) {
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
                kind: AdviceKind::CrashLoop,
                workload: Some(name.clone()),
                pool: None,
                saving_usd: None,
                message: AdviceSays::CrashLoop {
                    workload: name.clone(),
                    share: crashloop_share.unwrap_or(0.0),
                },
                change: AdviceChange::FixCrash,
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
pub(super) fn stalled_advice(
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
            kind: AdviceKind::ReapStalled,
            workload: st.workload.clone(),
            pool: None,
            // Every stretch it sat idle is what reaping it saves, not only the longest.
            saving_usd: price.map(|p| round(st.all_gpu_seconds * p)),
            message: AdviceSays::Stalled {
                team: st.team.clone(),
                pod: st.pod.clone(),
                gpus: st.allocated_gpus,
                seconds: st.seconds,
                since: st.since.clone(),
                stretches: st.stretches,
                all_seconds: st.all_seconds,
            },
            change: AdviceChange::Reap,
        });
    }
    advice
}

/// Pool floors paid over the covered span against what ran on them: idle floors, reservation
/// fill, and reservation advice.
pub(super) struct Floors {
    pub(super) idle_pools: Vec<IdlePool>,
    pub(super) reservations: Vec<ReservationFill>,
    pub(super) reservation_advice: Vec<ReservationAdvice>,
}

pub(super) fn pool_floors(
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
                    kind: AdviceKind::ShrinkPool,
                    workload: None,
                    pool: Some(p.name.get().clone()),
                    saving_usd: priced.map(|p| round(nodes_idle * gpus * covered as f64 * p)),
                    message: AdviceSays::IdleFloor {
                        pool: p.name.get().clone(),
                        nodes: nodes_idle,
                        seconds: covered,
                    },
                    change: AdviceChange::NodesMin {
                        pool: p.name.get().clone(),
                        min: (p.nodes().min() - nodes_idle as i64).max(0),
                    },
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
                    kind: AdviceKind::ReserveFloor,
                    workload: None,
                    pool: Some(p.name.get().clone()),
                    saving_usd: Some(round(
                        best.saving_usd_per_month * covered as f64
                            / (crate::core::HOURS_PER_MONTH * 3600.0),
                    )),
                    message: AdviceSays::Reserve {
                        pool: p.name.get().clone(),
                        floor_gpus: a.floor_gpus,
                        nodes: a.nodes,
                        sku: a.sku.clone(),
                        term: best.term,
                        saving: best.saving_usd_per_month,
                        break_even: best.break_even_utilization,
                    },
                    change: AdviceChange::SplitReserved {
                        pool: p.name.get().clone(),
                        nodes: a.nodes,
                        term: best.term,
                    },
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
pub(super) fn coverage_of(t: &Telemetry, no_usage: Vec<Unmatched>) -> Coverage {
    let covered = t.covered.max(0);
    Coverage {
        requested_seconds: t.to - t.from,
        covered_seconds: covered,
        share: ratio(covered as f64, (t.to - t.from) as f64).unwrap_or(0.0),
        data_from: t.data_from.map(format_time),
        data_to: t.data_to.map(format_time),
        kube_state_metrics_interval_seconds: t.ksm_interval,
        kube_state_metrics_intervals_seconds: t.ksm_intervals.clone(),
        rows_every_seconds: t.rows_every,
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

pub(super) fn model_rows(by_model: BTreeMap<String, Sums>) -> Vec<ModelRow> {
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
pub(super) fn pool_rows(
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
