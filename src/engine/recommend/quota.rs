//! Quota repair: known quota is a hard limit, so workloads move to another region, VM family
//! or capacity type (spot has its own quota) until every bucket fits; what cannot move is
//! reported as GP014.

use super::build::{build_cached, BuildCache};
use super::candidate::{Candidate, Rate};
use super::choice::{fit_key, pool_sharing, Choice, PoolKey};
use super::types::{Finding, FindingCode, RecPool};
use super::{Cx, Groups};
use crate::catalog::Catalog;
use crate::core::Capacity;
pub(super) use crate::engine::quota::bucket_of;
use crate::plan::Plan;
use std::collections::BTreeMap;

/// The quota bucket a pool draws on: region and VM family (Azure) or quota code (AWS); spot
/// capacity has its own.
pub(super) fn bucket(ch: &Choice<'_, '_>, capacity: Capacity) -> (String, String) {
    bucket_of(ch.c.sku, &ch.c.region, capacity)
}

/// vCPUs each known quota bucket reaches at the pools' maximum.
pub(super) fn bucket_use(
    groups: &BTreeMap<PoolKey, Vec<usize>>,
    choices: &[Choice<'_, '_>],
    catalog: &Catalog,
    plan_hours: f64,
    cache: &BuildCache,
) -> BTreeMap<(String, String), f64> {
    let mut used: BTreeMap<(String, String), f64> = BTreeMap::new();
    for (key, members) in groups {
        let ms: Vec<&Choice<'_, '_>> = members.iter().map(|&i| &choices[i]).collect();
        let b = build_cached(cache, &ms, key.3, catalog, plan_hours, false);
        *used.entry(bucket(ms[0], key.3)).or_default() +=
            f64::from(b.nodes_max) * f64::from(ms[0].c.sku.vcpus);
    }
    used
}

/// Known quota is a hard limit: while a bucket is over it, move the one workload whose move
/// to another region, VM family or capacity type costs least, without pushing the
/// destination over its own quota. What cannot be moved stays, and GP014 reports it. Returns the workloads it
/// moved: the pool stage ran before it and does not revisit their pools' options.
pub(super) fn repair_quota(
    cx: &Cx<'_, '_>,
    groups: &mut Groups,
    choices: &mut [Choice<'_, '_>],
) -> Vec<usize> {
    let mut moved = Vec::new();
    let (plan, catalog, plan_hours, cache) = (cx.plan, cx.catalog, cx.plan_hours, &cx.cache);
    let quota = |b: &(String, String)| plan.known_quota(catalog, &b.0, &b.1).map(|q| q.0);
    let cost = |choices: &[Choice<'_, '_>], key: &PoolKey, members: &[usize]| {
        if members.is_empty() {
            return 0.0;
        }
        let ms: Vec<&Choice<'_, '_>> = members.iter().map(|&i| &choices[i]).collect();
        build_cached(cache, &ms, key.3, catalog, plan_hours, false).cost
    };
    // Each round moves one workload; the bound keeps a plan with no way out finite.
    for _ in 0..choices.len().max(1) * 2 {
        let used = bucket_use(groups, choices, catalog, plan_hours, cache);
        let Some(over) = used
            .iter()
            .find(|(b, v)| quota(b).is_some_and(|q| **v > q + 1e-9))
            .map(|(b, _)| b.clone())
        else {
            return moved;
        };
        let mut best: Option<(f64, usize, PoolKey, PoolKey, Candidate<'_>, Rate)> = None;
        for (key, members) in groups.iter() {
            if bucket(&choices[members[0]], key.3) != over {
                continue;
            }
            for &i in members {
                let ch = &choices[i];
                // The parts of a workload split over AKS profiles stay in their family.
                if ch.d.is_part() {
                    continue;
                }
                let rest: Vec<usize> = members.iter().copied().filter(|&j| j != i).collect();
                let leave = cost(choices, key, members) - cost(choices, key, &rest);
                // Another region or family, or another capacity type (spot's quota is its own
                // bucket: where it is too small, on-demand of the same nodes may fit).
                let options = ch
                    .all
                    .iter()
                    .flat_map(|c| c.rates(&ch.d).into_iter().map(move |r| (c, r)));
                for (c, rate) in options {
                    let trial = ch.with(c.clone(), rate.clone());
                    let dest_bucket = bucket(&trial, rate.capacity);
                    if dest_bucket == over {
                        continue;
                    }
                    let dest = (
                        ch.d.segment,
                        c.sku.name.clone(),
                        c.region.clone(),
                        rate.capacity,
                        pool_sharing(&c.fit),
                        fit_key(&c.fit, ch.d.mig_manager),
                    );
                    let others = groups.get(&dest).cloned().unwrap_or_default();
                    let mut with: Vec<&Choice<'_, '_>> =
                        others.iter().map(|&j| &choices[j]).collect();
                    with.push(&trial);
                    let after = build_cached(cache, &with, dest.3, catalog, plan_hours, false);
                    let before = cost(choices, &dest, &others);
                    if let Some(q) = quota(&dest_bucket) {
                        let before_nodes = if others.is_empty() {
                            0
                        } else {
                            let ms: Vec<&Choice<'_, '_>> =
                                others.iter().map(|&j| &choices[j]).collect();
                            build_cached(cache, &ms, dest.3, catalog, plan_hours, false).nodes_max
                        };
                        let extra = f64::from(after.nodes_max - before_nodes.min(after.nodes_max))
                            * f64::from(c.sku.vcpus);
                        if used.get(&dest_bucket).copied().unwrap_or(0.0) + extra > q + 1e-9 {
                            continue;
                        }
                    }
                    let delta = after.cost - before - leave;
                    if best.as_ref().is_none_or(|b| delta < b.0 - 0.005) {
                        best = Some((delta, i, key.clone(), dest, c.clone(), rate));
                    }
                }
            }
        }
        let Some((_, i, from, to, c, rate)) = best else {
            return moved;
        };
        moved.push(i);
        choices[i].c = c;
        choices[i].rate = rate;
        if let Some(m) = groups.get_mut(&from) {
            m.retain(|&j| j != i);
            if m.is_empty() {
                groups.remove(&from);
            }
        }
        groups.entry(to).or_default().push(i);
    }
    moved
}

pub(super) fn quota_findings(plan: &Plan, catalog: &Catalog, pools: &[RecPool]) -> Vec<Finding> {
    let mut draws = crate::engine::quota::draws(pools.iter().filter_map(|p| {
        Some(crate::engine::quota::Drawing {
            sku: catalog.sku(plan.provider(), &p.sku)?,
            region: &p.region,
            capacity: p.capacity,
            max_nodes: f64::from(p.nodes.max),
            name: &p.name,
        })
    }));
    // By region, then family, as the findings have always been listed.
    draws.sort_by(|a, b| (&a.region, &a.family).cmp(&(&b.region, &b.family)));
    let mut out = Vec::new();
    for crate::engine::quota::Draw {
        region,
        family,
        vcpus,
        ..
    } in draws
    {
        if let Some((limit, from)) = plan.known_quota(catalog, &region, &family) {
            if vcpus > limit {
                out.push(Finding {
                    pool: None,
                    ..Finding::new(
                        FindingCode::Rule(crate::diag::RuleId::GP014),
                        crate::diag::Severity::Error,
                        super::reason::Said::QuotaOver {
                            vcpus,
                            family,
                            region,
                            limit,
                            from,
                        },
                    )
                });
            }
        }
    }
    out
}
