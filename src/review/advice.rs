//! The review's advice on what to change: right-sizing that fits the GPU, demand that waited
//! (and whether capacity was why), reservations from measured floors, and nodes held empty.

use std::collections::{BTreeMap, BTreeSet};

use super::assemble::pool_matches;
use super::numbers::{pool_gpu_second, quantile, round, round4};
use super::rows::*;
use super::telemetry::Telemetry;
use crate::catalog::Catalog;
use crate::engine::recommend::Recommendation;
use crate::plan::raw::Capacity;
use crate::plan::Plan;

/// Right-size advice that fits: a MIG profile (on a GPU that has MIG) with the compute share
/// the work used and the memory the workload needs; on a GPU without MIG, time-slicing only
/// when that many replicas' memory fits the card. `None` when nothing smaller holds it.
pub(super) fn right_size(
    plan: &Plan,
    rec: &Recommendation,
    catalog: &Catalog,
    w: &crate::plan::raw::Workload,
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
    let (fraction, change, what, sharing) = if let Some(mig) = &gpu.mig {
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
            format!(
                "[[workload]] name = \"{name}\": gpu_fraction = {f}, sharing = \"mig\" ({} on {})",
                p.name, gpu.name
            ),
            format!("a {} MIG instance", p.name),
            crate::core::Sharing::Mig,
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
            crate::core::Sharing::TimeSlicing,
        )
    };
    if fraction >= now {
        // Nothing smaller than what it has holds its memory.
        return None;
    }
    let saving = round(idle_cost * (1.0 - fraction / now.max(1e-9)).max(0.0));
    let fit = RightSize {
        fraction,
        sharing,
        what: what.clone(),
    };
    Some((Advice {
        kind: AdviceKind::RightSize,
        workload: Some(name.clone()),
        pool: None,
        saving_usd: Some(saving.min(round(idle_cost))),
        message: format!(
            "`{name}` kept what it held busy {:.0}% of the time; {what} ({fraction} of a GPU{}) would have held the same work",
            eff * 100.0,
            need.map(|n| format!(", {n:.1} GiB needed")).unwrap_or_else(|| ", memory need unknown: declare gpu_memory_gib".into())
        ),
        change,
    }, fit))
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
    let pulling = if pull_total >= 60.0 {
        format!(
            " ({:.1} of it failing to pull images: ErrImagePull, ImagePullBackOff)",
            pull_total / 3600.0
        )
    } else {
        String::new()
    };
    (pending_total >= 3600.0).then(|| Advice {
        kind: AdviceKind::UnmetDemand,
        workload: None,
        pool: None,
        saving_usd: None,
        message: if unknown_total < pending_total {
            format!(
                "{:.1} GPU-hours were requested by pods while Pending: {:.1} unscheduled (no node would take them), {:.1} scheduled and starting (image pulls, init containers){pulling}{}",
                pending_total / 3600.0,
                unscheduled_total / 3600.0,
                (pending_total - unscheduled_total - unknown_total).max(0.0) / 3600.0,
                if unknown_total > 0.0 {
                    format!(", {:.1} not told apart (no kube_pod_status_scheduled)", unknown_total / 3600.0)
                } else {
                    String::new()
                }
            )
        } else {
            format!(
                "{:.1} GPU-hours were requested by pods while Pending (unscheduled, or starting: pulling images, waiting for a node; kube_pod_status_scheduled, not exported, would tell them apart)",
                pending_total / 3600.0
            )
        },
        change: {
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
                .filter(|p| p.workloads.iter().any(|w| waiting.contains(w.get().as_str())))
                .collect();
            let at_max = |p: &crate::plan::raw::Pool, free_ok: bool| {
                let max = u32::try_from(p.nodes().max().max(0)).unwrap_or(0);
                at_once.get(p.name.get().as_str()).is_some_and(|w| {
                    w.values()
                        .any(|(n, free)| *n >= max && max > 0 && (free_ok || *free < step))
                })
            };
            let named = |p: &crate::plan::raw::Pool| format!("`{}` ({} nodes)", p.name.get(), p.nodes().max());
            let full: Vec<String> = hosts.iter().filter(|p| at_max(p, false)).map(|p| named(p)).collect();
            let roomy: Vec<String> = hosts
                .iter()
                .filter(|p| at_max(p, true) && !at_max(p, false))
                .map(|p| named(p))
                .collect();
            let pull_fix = if pull_total >= 60.0 {
                "; fix the image pulls first (the image name, the registry's credentials or reach)"
            } else {
                ""
            };
            let what: String = if unknown_total < 60.0 && unscheduled_total < 60.0 {
                "every Pending pod had a node: the wait was start-up, not capacity; pre-pull large images (a DaemonSet or the node image) and check init containers".into()
            } else if full.is_empty() && !roomy.is_empty() {
                format!(
                    "{} reached nodes.max but always had a GPU free then, so capacity was not the wait: look at what kept the pods off the free GPUs (a request larger than one node's free GPUs, the MIG profile or time-slicing share asked for, taints and selectors) before raising it",
                    roomy.join(", ")
                )
            } else if full.is_empty() {
                "no pool reached its nodes.max while they waited: look at scheduling and start-up (quota, taints and selectors, image pulls) before adding capacity, or queue them (Kueue) so the wait is visible".into()
            } else {
                format!(
                    "{} reached nodes.max: raise it or the quota for those workloads, or queue them (Kueue) so the wait is visible",
                    full.join(", ")
                )
            };
            format!("{what}{pull_fix}")
        },
    })
}

/// Covered days of data below which no reservation is advised.
const MIN_RESERVATION_DAYS: i64 = 30;

/// Reservation advice for an on-demand plan pool from the GPUs it held per covered window:
/// at least [`MIN_RESERVATION_DAYS`] covered, and terms up to the plan's `reservation_term`.
pub(super) fn reservation(
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
    for cap in [Capacity::Reserved1y, Capacity::Reserved3y] {
        let term = cap.as_str();
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
            let cloud = crate::cloud::profile(plan.provider());
            format!(
                "no reserved price for {sku} in {region} in the catalog{}",
                if cloud.reservations_live_only {
                    format!(" ({}s are unknown offline; `catalog refresh` fetches them)", cloud.reservation)
                } else {
                    String::new()
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
