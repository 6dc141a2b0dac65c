//! The fleet's pools as reported: each group built, described, named and labelled, with the
//! alternatives it had; and the sizes each pool of several node sizes runs.

use super::alternatives::alternatives;
use super::build::build_cached;
use super::choice::{Choice, FitKey, PoolKey};
use super::demand::Segment;
use super::explain::{describe, name_pools};
use super::types::RecPool;
use super::{Cx, Groups};
use crate::core::{Capacity, Sharing};
use indexmap::IndexMap;
use std::collections::BTreeMap;

/// Each workload's pools (by index: names are final only after `name_pools`) and monthly
/// cost; a workload whose replicas split over several AKS profiles is in more than one.
pub(super) type WorkloadPools = IndexMap<String, (Vec<usize>, f64)>;

/// The final pools, packed thoroughly, named, and each workload's pool and share of its cost
/// (split by the node-hours each asks for).
pub(super) fn final_pools(
    cx: &Cx<'_, '_>,
    groups: &Groups,
    choices: &[Choice<'_, '_>],
    repair: &super::quota::Repair,
    fills: &[super::fill::FillSplit],
) -> (Vec<RecPool>, WorkloadPools) {
    let (plan, catalog, plan_hours, cache) = (cx.plan, cx.catalog, cx.plan_hours, &cx.cache);
    let mut pools = Vec::new();
    let mut families = Vec::with_capacity(groups.len());
    let mut workload_pool = WorkloadPools::new();
    // vCPUs each quota bucket reaches at the fleet's maximum: a cheaper alternative that the
    // bucket could not hold says so.
    let used = super::quota::bucket_use(groups, choices, catalog, plan_hours, cache);
    for (key, members) in groups {
        let ms: Vec<&Choice<'_, '_>> = members.iter().map(|&i| &choices[i]).collect();
        let built = build_cached(cache, &ms, key.3, catalog, plan_hours, true);
        let mut pool = describe(plan, catalog, key, &ms, &built, plan_hours);
        // A pool in a region whose quota is unknown, where another of the plan's regions has a
        // known one, says so: quota repair may have moved work here only because nothing here
        // is known to stop it.
        let (region, family) = super::quota::bucket(ms[0], key.3);
        if plan.known_quota(catalog, &region, &family).is_none()
            && plan
                .regions()
                .any(|r| plan.known_quota(catalog, r, &family).is_some())
        {
            pool.why
                .0
                .push(super::reason::Reason::QuotaUnknown { region, family });
        }
        let tried = super::moves::tried(members, choices);
        pool.considered = alternatives(cx, choices, members, key, &built, tried);
        let own = (
            super::quota::bucket(ms[0], key.3),
            f64::from(built.nodes_max) * f64::from(ms[0].c.sku.vcpus),
        );
        for a in &mut pool.considered {
            let repaired = members.iter().any(|i| repair.moved.contains(i));
            super::alternatives::why_not(a, plan, catalog, &used, &own, tried, repaired);
        }
        // The same nodes on a cheaper capacity type that a known quota closed (spot has a
        // quota of its own): the why-line names it.
        let closed = pool
            .considered
            .iter()
            .find_map(|a| match &a.note.not_taken {
                Some(super::reason::NotTaken::Quota {
                    family,
                    region,
                    quota,
                    fleet,
                    need,
                }) if a.sku == pool.sku
                    && a.region == pool.region
                    && a.capacity != pool.capacity
                    && a.delta_usd.is_some_and(|d| d < 0.0) =>
                {
                    Some(super::reason::Reason::QuotaClosed(
                        super::reason::QuotaClosed {
                            capacity: a.capacity,
                            family: family.clone(),
                            region: region.clone(),
                            quota: *quota,
                            fleet: *fleet,
                            need: *need,
                            saving_lost: -a.delta_usd.unwrap_or(0.0),
                        },
                    ))
                }
                _ => None,
            });
        pool.why.0.extend(closed);
        quota_removed(&mut pool);
        pool.why.0.extend(split_reasons(&repair.splits, &ms, key));
        pool.why.0.extend(fill_reasons(fills, &ms, key));
        // Split the pool's cost over its workloads by the node-hours each asks for.
        let weights: Vec<f64> = ms
            .iter()
            .map(|m| m.c.node_share * f64::from(m.d.gang.max(1)) * m.d.replica_hours(plan_hours))
            .collect();
        let total_w: f64 = weights.iter().sum();
        for (m, wgt) in ms.iter().zip(&weights) {
            let share = if total_w > 0.0 {
                wgt / total_w
            } else {
                1.0 / ms.len() as f64
            };
            let e = workload_pool
                .entry(m.d.name.to_owned())
                .or_insert((Vec::new(), 0.0));
            if !e.0.contains(&pools.len()) {
                e.0.push(pools.len());
            }
            e.1 += built.cost * share;
        }
        families.push(family_of(key, &ms));
        pools.push(pool);
    }
    name_pools(&mut pools, plan.regions().count() > 1);
    label_families(&mut pools, &families);
    (pools, workload_pool)
}

/// What node sizes of one pool have in common: its key without the SKU, with the GPU model.
type FamilyKey = (Segment, String, String, Capacity, Sharing, FitKey);

/// The pool of several node sizes a pool of one size belongs to, if it may join one: whole
/// GPUs or time-sliced shares (every node of the label must advertise the same resource
/// the same way), on capacity any size can be bought as, with no gang (whose members must
/// start on identical nodes in one placement group). MIG pools never join: a layout is a
/// node size's own, and Karpenter cannot offer MIG instances.
fn family_of(key: &PoolKey, ms: &[&Choice<'_, '_>]) -> Option<FamilyKey> {
    let fit_joins = match &key.5 {
        FitKey::Whole | FitKey::Shared(..) => true,
        FitKey::Mig(_) | FitKey::Server => false,
    };
    let capacity_joins = match key.3 {
        Capacity::OnDemand | Capacity::Spot | Capacity::Reserved1y | Capacity::Reserved3y => true,
        Capacity::CapacityReservation | Capacity::CapacityBlock => false,
    };
    let gang = ms.iter().any(|m| m.d.gang > 1);
    (fit_joins && capacity_joins && !gang).then(|| {
        (
            key.0,
            ms[0].c.gpu.name.clone(),
            key.2.clone(),
            key.3,
            key.4,
            key.5.clone(),
        )
    })
}

/// Each pool's `gpuplan.io/pool` label: the name of the first pool of its family, or its
/// own name.
fn label_families(pools: &mut [RecPool], families: &[Option<FamilyKey>]) {
    let mut first: BTreeMap<&FamilyKey, String> = BTreeMap::new();
    for (p, f) in pools.iter_mut().zip(families) {
        p.pool_label = match f {
            Some(f) => first.entry(f).or_insert_with(|| p.name.clone()).clone(),
            None => p.name.clone(),
        };
    }
}

/// For each workload on a pool whose label spans several node sizes, the sizes the
/// recommendation placed it on: its pods require them, so each shape runs on the size that
/// was chosen and priced for it (Kueue admits it to that size's flavor, Karpenter starts that
/// size for it), and no shape takes a size planned for another.
pub fn node_sizes(pools: &[RecPool]) -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for p in pools {
        if !p.one_of_several_sizes(pools) {
            continue;
        }
        for w in &p.workloads {
            let sizes = out.entry(w.clone()).or_default();
            if !sizes.contains(&p.sku) {
                sizes.push(p.sku.clone());
            }
        }
    }
    out
}

/// Cheaper sizes a known quota closed altogether (`quota-closed` alternatives, cheapest
/// first): the why-line says how many and what the cheapest would save, and the list keeps
/// the first `alternatives::LISTED`.
fn quota_removed(pool: &mut RecPool) {
    let quota_closed =
        |a: &super::types::Alternative| a.kind == super::types::AlternativeKind::QuotaClosed;
    let sizes = pool.considered.iter().filter(|a| quota_closed(a)).count();
    if let Some(a) = pool.considered.iter().find(|a| quota_closed(a)) {
        let reason = super::reason::Reason::QuotaRemoved(super::reason::QuotaRemoved {
            sizes,
            sku: a.sku.clone(),
            region: a.region.clone(),
            saving: -a.delta_usd.unwrap_or(0.0),
        });
        pool.why.0.push(reason);
    }
    let mut kept = 0;
    pool.considered.retain(|a| {
        kept += usize::from(quota_closed(a));
        !quota_closed(a) || kept <= super::alternatives::LISTED
    });
}

/// The parts of workloads split to fill idle GPUs (`fill`) that this pool holds.
fn fill_reasons(
    fills: &[super::fill::FillSplit],
    ms: &[&Choice<'_, '_>],
    key: &PoolKey,
) -> Vec<super::reason::Reason> {
    ms.iter()
        .filter_map(|m| {
            let f = fills.iter().find(|f| f.workload == m.d.name)?;
            Some(super::reason::Reason::FillSplit(super::reason::FillSplit {
                workload: f.workload.clone(),
                here: m.d.peak,
                planned: m.d.planned_peak(),
                filled: &f.into == key,
            }))
        })
        .collect()
}

/// Why a pool holds only part of a workload that a known quota split (`quota::repair_quota`):
/// one line per split member, saying which quota holds which part.
fn split_reasons(
    splits: &[super::quota::QuotaSplit],
    ms: &[&Choice<'_, '_>],
    key: &PoolKey,
) -> Vec<super::reason::Reason> {
    let bucket = super::quota::bucket(ms[0], key.3);
    ms.iter()
        .filter_map(|m| {
            let s = splits.iter().find(|s| s.workload == m.d.name)?;
            Some(super::reason::Reason::QuotaSplit(
                super::reason::QuotaSplit {
                    workload: s.workload.clone(),
                    here: m.d.peak,
                    planned: m.d.planned_peak(),
                    capacity: s.capacity,
                    family: s.bucket.1.clone(),
                    region: s.bucket.0.clone(),
                    quota: s.quota,
                    within: bucket == s.bucket,
                    pool_region: m.c.region.clone(),
                },
            ))
        })
        .collect()
}
