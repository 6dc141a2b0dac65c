//! The review's advice on what to change: right-sizing that fits the GPU, demand that waited
//! (and whether capacity was why), reservations from measured floors, and nodes held empty.

use crate::review::rows::{
    Advice, AdviceKind, IdleNode, PendingPod, ReservationAdvice, ReservationOption, RightSize,
};
use std::collections::{BTreeMap, BTreeSet};

use super::assemble::pool_matches;
use super::numbers::{pool_gpu_second, quantile, round, round4};
use super::says::{AdviceChange, AdviceSays, NotReserved, Slice, Wait};
use super::telemetry::Telemetry;
use crate::catalog::Catalog;
use crate::core::{node_hours_usd, Capacity};
use crate::engine::recommend::Recommendation;
use crate::plan::Plan;

/// Right-size advice that fits: a MIG profile (on a GPU that has MIG) with the compute share
/// the work used and the memory the workload needs; on a GPU without MIG, time-slicing only
/// when that many replicas' memory fits the card. `None` when nothing smaller holds it.
pub(super) fn right_size(
    plan: &Plan,
    rec: &Recommendation,
    catalog: &Catalog,
    w: &crate::plan::Workload,
    eff: f64,
    idle_cost: f64,
) -> Option<(Advice, RightSize)> {
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
    // The SKU and MIG manager of the pool that serves it: its declared pool's, else the
    // recommendation's (whose manager is already the effective one).
    let (sku, manager) = plan
        .workload_pools(name)
        .next()
        .map(|p| (p.sku.get().clone(), plan.pool_mig_manager(p)))
        .or_else(|| {
            rec.pools
                .iter()
                .find(|p| p.workloads.iter().any(|x| x == name))
                .map(|p| (p.sku.clone(), p.mig_manager))
        })?;
    let gpu = catalog.gpu(&catalog.sku(plan.provider(), &sku)?.gpu_model)?;
    let need = crate::engine::memory::need_in_instance(w, catalog)
        .map(|n| n / crate::engine::memory::usable_share(w, catalog).max(0.05));
    let (fraction, slice, sharing) = if let Some(mig) = &gpu.mig {
        let slices = f64::from(mig.compute_slices.max(1));
        // The one chooser, with the effective manager: under AKS only what AKS creates.
        let p = crate::mig::choose(
            mig,
            &crate::engine::memory::slice_need(w, catalog, mig, share),
            manager,
        )?;
        let f = round4(f64::from(p.compute) / slices);
        (
            f,
            Slice::Mig {
                profile: p.name.clone(),
                gpu: gpu.name.clone(),
            },
            crate::core::Sharing::Mig,
        )
    } else {
        // The shares `recommend` would give it; a card it cannot share is no slice.
        let replicas = crate::engine::memory::time_slice_replicas(
            share,
            need,
            gpu.memory_gib,
            catalog.assumptions.time_slicing_memory_headroom,
        );
        if replicas < 2 {
            return None;
        }
        let f = round4(1.0 / f64::from(replicas));
        (
            f,
            Slice::TimeSliced {
                replicas,
                gpu: gpu.name.clone(),
            },
            crate::core::Sharing::TimeSlicing,
        )
    };
    // A slice it already runs on is no right-size (a `gpu_fraction = 0.43` on `3g.40gb`,
    // which is 0.4286 of the GPU, was advised `3g.40gb`).
    let (has, has_share) = what_it_has(plan, name, gpu, now);
    let same_slice = matches!(&slice, Slice::Mig { profile, .. } if has.as_ref() == Some(profile));
    // Nothing smaller than what it has holds its memory; a share within rounding of what
    // it has is what it has.
    if same_slice || fraction >= has_share - 0.005 {
        return None;
    }
    let now = has_share;
    let saving = round(idle_cost * (1.0 - fraction / now.max(1e-9)).max(0.0));
    let fit = RightSize {
        fraction,
        sharing,
        slice: slice.clone(),
    };
    Some((
        Advice {
            kind: AdviceKind::RightSize,
            workload: Some(name.clone()),
            pool: None,
            saving_usd: Some(saving.min(round(idle_cost))),
            message: AdviceSays::RightSize {
                workload: name.clone(),
                busy: eff,
                slice: slice.clone(),
                fraction,
                need,
            },
            change: AdviceChange::RightSize {
                workload: name.clone(),
                fraction,
                slice,
            },
        },
        fit,
    ))
}

/// What a workload has of a GPU: the profile of the MIG pool it is declared on, with that
/// profile's share of `gpu`, else no profile and its own share (`now`), never more than it.
fn what_it_has(
    plan: &Plan,
    name: &str,
    gpu: &crate::catalog::GpuModel,
    now: f64,
) -> (Option<String>, f64) {
    let has = plan
        .workload_pools(name)
        .find_map(|p| p.mig_profile.as_ref().map(|m| m.get().clone()));
    let share = has
        .as_deref()
        .and_then(|p| {
            let mig = gpu.mig.as_ref()?;
            let spec = mig.profile(p)?;
            Some(f64::from(spec.compute) / f64::from(mig.compute_slices.max(1)))
        })
        .unwrap_or(now)
        .min(now);
    (has, share)
}

/// Demand that waited: GPU-hours requested while Pending, split into unscheduled and
/// scheduled-but-starting where kube-state-metrics says which, and capacity blamed only
/// where a pool hosting a waiting workload reached its nodes.max. `None` under a GPU-hour.
pub(super) fn unmet_demand(plan: &Plan, t: &Telemetry, pending: &[PendingPod]) -> Option<Advice> {
    let pending_total: f64 = pending.iter().map(|p| p.gpu_seconds).sum();
    // Pending split by what kube-state-metrics said of each pod: unscheduled, scheduled and
    // starting, or not told apart (no `kube_pod_status_scheduled` for it).
    let unscheduled_total: f64 = pending
        .iter()
        .filter_map(|p| p.unscheduled_gpu_seconds)
        .sum();
    let unknown_total: f64 = pending
        .iter()
        .filter(|p| p.unscheduled_gpu_seconds.is_none())
        .map(|p| p.gpu_seconds)
        .sum();
    let pull_total: f64 = pending.iter().map(|p| p.image_pull_gpu_seconds).sum();
    // Pulls that failed for a minute or more are named; fewer are noise.
    let pulls_failed = pull_total >= 60.0;
    (pending_total >= 3600.0).then(|| Advice {
        kind: AdviceKind::UnmetDemand,
        workload: None,
        pool: None,
        saving_usd: None,
        message: AdviceSays::Pending {
            total: pending_total,
            unscheduled: unscheduled_total,
            unknown: unknown_total,
            pulling: pulls_failed.then_some(pull_total),
        },
        change: {
            let (full, roomy, grew) = pools_while_waiting(plan, t, pending);
            let wait = if unknown_total < 60.0 && unscheduled_total < 60.0 {
                Wait::StartUp
            } else if full.is_empty() && !roomy.is_empty() {
                Wait::NotFull(roomy)
            } else if full.is_empty() && !grew.is_empty() {
                Wait::Booting(grew)
            } else if full.is_empty() {
                Wait::NoPoolAtMax
            } else {
                Wait::Full(full)
            };
            AdviceChange::Pending { wait, pulls_failed }
        },
    })
}

/// Pools by name, with their `nodes.max`.
type Named = Vec<(String, i64)>;

/// The declared pools hosting a waiting workload, as they stood while its pods waited: full
/// at their maximum, at their maximum with a GPU free, and growing below it (a node was
/// starting).
fn pools_while_waiting(
    plan: &Plan,
    t: &Telemetry,
    pending: &[PendingPod],
) -> (Named, Named, Named) {
    // Nodes of each plan pool seen at once, and their GPU-seconds offered and held, per
    // window: capacity is the wait only where a pool reached its maximum with no GPU
    // free (one at its maximum with GPUs free turned pods away for another reason).
    let mut at_once: BTreeMap<&str, BTreeMap<i64, (u32, f64)>> = BTreeMap::new();
    for n in t.nodes.values() {
        if let Some(pool) = n.plan_pool.as_deref() {
            for (ts, cap) in &n.capacity {
                if *cap > 0.0 {
                    let held = n.allocated.get(&ts).copied().unwrap_or(0.0);
                    let e = at_once.entry(pool).or_default().entry(ts).or_default();
                    e.0 += 1;
                    e.1 += (cap - held).max(0.0);
                }
            }
        }
    }
    let step = t.step.max(1) as f64;
    let waiting: BTreeSet<&str> = pending
        .iter()
        .filter(|p| p.unscheduled_gpu_seconds.is_none_or(|u| u > 0.0))
        .filter_map(|p| p.workload.as_deref())
        .collect();
    let hosts: Vec<_> = plan
        .pools()
        .iter()
        .filter(|p| {
            p.workloads
                .iter()
                .any(|w| waiting.contains(w.get().as_str()))
        })
        .collect();
    // The windows the pods of each pool's workloads waited with no node to take them,
    // where the data says (`kube_pod_status_scheduled`): the pool is judged then, not
    // at any other time.
    let mut waited_at: BTreeMap<&str, BTreeSet<i64>> = BTreeMap::new();
    for p in pending {
        let Some(w) = p.workload.as_deref() else {
            continue;
        };
        let key = (p.team.clone(), p.pod.clone());
        for run in t.pods.get(&key).into_iter().flatten() {
            waited_at.entry(w).or_default().extend(run.waiting.keys());
        }
    }
    let windows = |p: &crate::plan::Pool| -> BTreeSet<i64> {
        p.workloads
            .iter()
            .filter_map(|w| waited_at.get(w.get().as_str()))
            .flatten()
            .copied()
            .collect()
    };
    let at_max = |p: &crate::plan::Pool, free_ok: bool| {
        let max = u32::try_from(p.nodes().max().max(0)).unwrap_or(0);
        let when = windows(p);
        at_once.get(p.name.get().as_str()).is_some_and(|w| {
            w.iter()
                .filter(|(ts, _)| when.is_empty() || when.contains(ts))
                .any(|(_, (n, free))| *n >= max && max > 0 && (free_ok || *free < step))
        })
    };
    // A pool below its maximum that gained a node while its pods waited (or within
    // two windows of the last): the wait was a node starting.
    let booting = |p: &crate::plan::Pool| {
        let when = windows(p);
        let (Some(first), Some(last)) = (when.first(), when.last()) else {
            return false;
        };
        let nodes = |ts: i64| {
            at_once
                .get(p.name.get().as_str())
                .and_then(|w| w.get(&ts))
                .map_or(0, |e| e.0)
        };
        let reach = last + 2 * t.step.max(1);
        let later = (*first..=reach)
            .step_by(usize::try_from(t.step.max(1)).unwrap_or(60))
            .map(nodes)
            .max()
            .unwrap_or(0);
        later > nodes(*first)
    };
    let named = |p: &&crate::core::Sp<crate::plan::Pool>| (p.name.get().clone(), p.nodes().max());
    let full: Vec<(String, i64)> = hosts
        .iter()
        .filter(|p| at_max(p, false))
        .map(named)
        .collect();
    let roomy: Vec<(String, i64)> = hosts
        .iter()
        .filter(|p| at_max(p, true) && !at_max(p, false))
        .map(named)
        .collect();
    let grew: Vec<(String, i64)> = hosts
        .iter()
        .filter(|p| !at_max(p, true) && booting(p))
        .map(named)
        .collect();
    (full, roomy, grew)
}

/// Covered days of data below which no reservation is advised.
const MIN_RESERVATION_DAYS: i64 = 30;

/// Reservation advice for an on-demand plan pool from the GPUs it held per covered window:
/// at least [`MIN_RESERVATION_DAYS`] covered, and terms up to the plan's `reservation_term`.
pub(super) fn reservation(
    plan: &Plan,
    catalog: &Catalog,
    p: &crate::plan::Pool,
    gpus: f64,
    held: Option<&BTreeMap<i64, f64>>,
    t: &Telemetry,
    covered: i64,
) -> Option<ReservationAdvice> {
    if !p.capacity().is_on_demand() || gpus <= 0.0 || covered < 86_400 {
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
    let od = catalog.listed(plan.provider(), sku, region, Capacity::OnDemand)?;
    let month = crate::core::HOURS_PER_MONTH * nodes as f64;
    let mut options = Vec::new();
    // A reservation commits for a year or more: less than a month of covered data is no
    // basis for one, and a term longer than the plan allows is not advised.
    let days = covered as f64 / 86_400.0;
    let enough = covered >= MIN_RESERVATION_DAYS * 86_400;
    let plan_term = plan.reservation_term();
    for cap in [Capacity::Reserved1y, Capacity::Reserved3y] {
        let term = cap.as_str();
        if !enough || !plan_term.allows(cap) {
            continue;
        }
        if let Some(r) = catalog.listed(plan.provider(), sku, region, cap) {
            options.push(ReservationOption {
                term,
                usd_per_month: round(node_hours_usd(r.usd_per_hour, 1.0, month)),
                saving_usd_per_month: round(node_hours_usd(
                    od.usd_per_hour - r.usd_per_hour,
                    1.0,
                    month,
                )),
                break_even_utilization: round4(r.usd_per_hour / od.usd_per_hour),
                source: r.source.to_string(),
            });
        }
    }
    let note = options.is_empty().then(|| {
        if !enough {
            NotReserved::TooFewDays {
                days,
                needed: MIN_RESERVATION_DAYS,
            }
        } else if plan_term == crate::core::ReservationTerm::None {
            NotReserved::TermNone
        } else {
            NotReserved::NoPrice {
                sku: sku.clone(),
                region: region.clone(),
                provider: plan.provider(),
            }
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
        on_demand_usd_per_month: round(node_hours_usd(od.usd_per_hour, 1.0, month)),
        options,
        note,
    })
}

/// Empty stretches shorter than this are churn between pods, not a node held empty.
const EMPTY_STRETCH: i64 = 3_600;

/// Per node: GPU-seconds offered and not requested by running pods, and time with nothing
/// requested at all; costed at the matched plan pool's price per GPU. A node empty for more
/// than a day is advice: the autoscaler is not removing it, or the pool floor holds it.
pub(super) fn idle_nodes(
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
        let mut stranded = 0.0;
        for (ts, cap) in &n.capacity {
            if *cap <= 0.0 {
                continue;
            }
            let alloc = n.allocated.get(&ts).copied().unwrap_or(0.0);
            // A MIG node is paid for as whole cards: slices no instance holds idle too.
            let paid = n.paid.get(&ts).copied().unwrap_or(*cap).max(*cap);
            idle += (paid - alloc).max(0.0);
            stranded += paid - cap;
            if alloc <= 0.0 {
                let secs = (cap / n.gpus.max(1e-9)).round() as i64;
                empty += secs;
                if last.is_some_and(|l| ts - l > t.step) {
                    close_stretch(&mut stretch, &mut held_empty, &mut longest);
                }
                stretch += secs;
                last = Some(ts);
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
                kind: AdviceKind::EmptyNode,
                workload: None,
                pool: pool.map(|p| p.name.get().clone()),
                saving_usd: price.map(|p| round(held_empty as f64 * p * n.cards.max(n.gpus))),
                message: AdviceSays::EmptyNode {
                    node: name.clone(),
                    label: n.pool.clone(),
                    days,
                    longest_seconds: longest,
                },
                change: match pool {
                    Some(p) if p.nodes().min() > 0 => AdviceChange::LowerMin {
                        pool: p.name.get().clone(),
                        min: p.nodes().min(),
                    },
                    _ => AdviceChange::ScaleDown,
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
            stranded_gpu_seconds: round(stranded),
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
mod tests;
