//! Quota repair: known quota is a hard limit, so workloads move to another region, VM family
//! or capacity type (spot has its own quota) until every bucket fits; what cannot move is
//! reported as GP014.

use super::build::{build_cached, BuildCache};
use super::candidate::{Candidate, Rate};
use super::choice::{pool_key, Choice, PoolKey, Share};
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

/// A workload a known quota split: as many of its replicas as the bucket (region, family) can
/// hold stay there on `capacity`, the rest run in another pool.
#[derive(Debug, Clone)]
pub(super) struct QuotaSplit {
    pub(super) workload: String,
    pub(super) bucket: (String, String),
    pub(super) quota: f64,
    pub(super) capacity: Capacity,
}

/// What quota repair changed: the choices it moved (the pool stage ran before it and does not
/// revisit their pools' options) and the workloads it split.
#[derive(Debug, Default)]
pub(super) struct Repair {
    pub(super) moved: Vec<usize>,
    pub(super) splits: Vec<QuotaSplit>,
}

/// One way out of an over-quota bucket: what it changes in the fleet's cost, the choice it
/// moves, where from and to, and (for a split) what stays and what moves.
struct Way<'c> {
    delta: f64,
    i: usize,
    from: PoolKey,
    to: PoolKey,
    c: Candidate<'c>,
    rate: Rate,
    split: Option<[Share; 2]>,
}

/// Known quota is a hard limit: while a bucket is over it, take the cheapest way out — move
/// one workload to another region, VM family or capacity type, or split one, keeping as many
/// of its replicas as the bucket holds and moving the rest (the cheapest feasible mix where
/// spot's quota holds part of a workload) — without pushing the destination over its own
/// quota. What cannot be moved stays, and GP014 reports it.
pub(super) fn repair_quota<'c>(
    cx: &Cx<'_, 'c>,
    groups: &mut Groups,
    choices: &mut Vec<Choice<'_, 'c>>,
) -> Repair {
    let mut repair = Repair::default();
    let (plan, catalog, plan_hours, cache) = (cx.plan, cx.catalog, cx.plan_hours, &cx.cache);
    let quota = |b: &(String, String)| plan.known_quota(catalog, &b.0, &b.1).map(|q| q.0);
    // Each round moves or splits one workload; the bound keeps a plan with no way out finite.
    for _ in 0..choices.len().max(1) * 2 {
        let used = bucket_use(groups, choices, catalog, plan_hours, cache);
        let Some((over, limit, excess)) = used.iter().find_map(|(b, v)| {
            quota(b)
                .filter(|q| *v > q + 1e-9)
                .map(|q| (b.clone(), q, v - q))
        }) else {
            return repair;
        };
        let mut best: Option<Way<'c>> = None;
        let mut offer = |w: Way<'c>| {
            if best.as_ref().is_none_or(|b| w.delta < b.delta - 0.005) {
                best = Some(w);
            }
        };
        for (key, members) in groups.iter() {
            if bucket(&choices[members[0]], key.3) != over {
                continue;
            }
            let here = cost(cx, choices, members);
            for &i in members {
                let ch = &choices[i];
                // The parts of a workload split over AKS profiles or by a quota stay in their
                // family.
                if ch.d.is_part() {
                    continue;
                }
                let rest: Vec<usize> = members.iter().copied().filter(|&j| j != i).collect();
                let leave = here - cost(cx, choices, &rest);
                let anywhere = |_: &PoolKey| true;
                if let Some((d, to, c, rate)) =
                    destination(cx, groups, choices, &used, ch, &over, anywhere)
                {
                    let (from, split) = (key.clone(), None);
                    offer(Way {
                        delta: d - leave,
                        i,
                        from,
                        to,
                        c,
                        rate,
                        split,
                    });
                }
                let Some(stay) = split_point(cx, choices, members, i, excess) else {
                    continue;
                };
                // Kueue fills a team's flavors in the order of its pools (by key), so the part
                // in the first pool holds the warm and kept replicas: each order is priced
                // with the destinations it allows.
                let [staying, moving] = Share::cut(&ch.d, stay);
                let [moving_first, staying_second] = Share::cut(&ch.d, ch.d.peak - stay);
                for (split, before) in [
                    ([staying, moving], false),
                    ([staying_second, moving_first], true),
                ] {
                    let part = ch.part(split[1]);
                    let order = |to: &PoolKey| (to < key) == before;
                    let Some((d, to, c, rate)) =
                        destination(cx, groups, choices, &used, &part, &over, order)
                    else {
                        continue;
                    };
                    let kept = with_member(cx, choices, members, i, &ch.part(split[0])).cost;
                    offer(Way {
                        delta: kept + d - here,
                        i,
                        from: key.clone(),
                        to,
                        c,
                        rate,
                        split: Some(split),
                    });
                }
            }
        }
        let Some(way) = best else {
            return repair;
        };
        apply(groups, choices, &mut repair, way, (over, limit));
    }
    repair
}

/// What the pool of `members` costs, packed as quota repair packs (quickly).
fn cost(cx: &Cx<'_, '_>, choices: &[Choice<'_, '_>], members: &[usize]) -> f64 {
    let Some(&first) = members.first() else {
        return 0.0;
    };
    let ms: Vec<&Choice<'_, '_>> = members.iter().map(|&i| &choices[i]).collect();
    let capacity = choices[first].rate.capacity;
    build_cached(&cx.cache, &ms, capacity, cx.catalog, cx.plan_hours, false).cost
}

/// The cheapest place for `ch` (a workload's choice, or the part of it a split moves) outside
/// bucket `over`, in a pool `allowed`, where its own bucket's quota holds it: what the
/// destination pool costs more with it, its key, and the candidate and rate it takes there.
fn destination<'c>(
    cx: &Cx<'_, 'c>,
    groups: &Groups,
    choices: &[Choice<'_, 'c>],
    used: &BTreeMap<(String, String), f64>,
    ch: &Choice<'_, 'c>,
    over: &(String, String),
    allowed: impl Fn(&PoolKey) -> bool,
) -> Option<(f64, PoolKey, Candidate<'c>, Rate)> {
    let (plan, catalog, plan_hours, cache) = (cx.plan, cx.catalog, cx.plan_hours, &cx.cache);
    let mut best: Option<(f64, PoolKey, Candidate<'c>, Rate)> = None;
    // Another region or family, or another capacity type (spot's quota is its own bucket:
    // where it is too small, on-demand of the same nodes may fit).
    let options = ch
        .all
        .iter()
        .flat_map(|c| c.rates(&ch.d).into_iter().map(move |r| (c, r)));
    for (c, rate) in options {
        let trial = ch.with(c.clone(), rate.clone());
        let dest_bucket = bucket(&trial, rate.capacity);
        if &dest_bucket == over {
            continue;
        }
        let dest = pool_key(&ch.d, c, rate.capacity);
        if !allowed(&dest) {
            continue;
        }
        let others = groups.get(&dest).cloned().unwrap_or_default();
        let mut with: Vec<&Choice<'_, '_>> = others.iter().map(|&j| &choices[j]).collect();
        with.push(&trial);
        let after = build_cached(cache, &with, dest.3, catalog, plan_hours, false);
        if let Some(q) = plan.known_quota(catalog, &dest_bucket.0, &dest_bucket.1) {
            let before_nodes = if others.is_empty() {
                0
            } else {
                let ms: Vec<&Choice<'_, '_>> = others.iter().map(|&j| &choices[j]).collect();
                build_cached(cache, &ms, dest.3, catalog, plan_hours, false).nodes_max
            };
            let extra = f64::from(after.nodes_max - before_nodes.min(after.nodes_max))
                * f64::from(c.sku.vcpus);
            if used.get(&dest_bucket).copied().unwrap_or(0.0) + extra > q.0 + 1e-9 {
                continue;
            }
        }
        let delta = after.cost - cost(cx, choices, &others);
        if best.as_ref().is_none_or(|b| delta < b.0 - 0.005) {
            best = Some((delta, dest, c.clone(), rate));
        }
    }
    best
}

/// The pool of `members` with member `i` replaced by `part`, packed as quota repair packs.
fn with_member(
    cx: &Cx<'_, '_>,
    choices: &[Choice<'_, '_>],
    members: &[usize],
    i: usize,
    part: &Choice<'_, '_>,
) -> super::build::Built {
    let ms: Vec<&Choice<'_, '_>> = members
        .iter()
        .map(|&j| if j == i { part } else { &choices[j] })
        .collect();
    build_cached(
        &cx.cache,
        &ms,
        part.rate.capacity,
        cx.catalog,
        cx.plan_hours,
        false,
    )
}

/// Where member `i` of the pool `members` may split to bring its bucket `excess` vCPUs down:
/// the most replicas it can keep there. `None` for a workload that cannot split: a gang (its
/// nodes start together), one replica, work with an availability floor (each pool would keep
/// its own), or one the bucket cannot hold even one replica of.
fn split_point(
    cx: &Cx<'_, '_>,
    choices: &[Choice<'_, '_>],
    members: &[usize],
    i: usize,
    excess: f64,
) -> Option<u32> {
    let d = &choices[i].d;
    if !d.may_split() {
        return None;
    }
    let vcpus = f64::from(choices[i].c.sku.vcpus);
    // Nodes at peak, which the quota counts, follow the replicas alone.
    let nodes = |keep: u32| {
        let [staying, _] = Share::cut(d, keep);
        f64::from(with_member(cx, choices, members, i, &choices[i].part(staying)).nodes_max)
    };
    let now = nodes(d.peak) * vcpus;
    let fits = |keep: u32| now - nodes(keep) * vcpus >= excess - 1e-9;
    // Nodes grow with replicas: the most that fit, by bisection.
    let (mut lo, mut hi) = (0u32, d.peak - 1);
    while lo < hi {
        let mid = (lo + hi).div_ceil(2);
        if fits(mid) {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    (lo >= 1 && fits(lo)).then_some(lo)
}

/// Takes `way`: moves its choice, or splits it into the replicas that stay and a new choice
/// for the rest.
fn apply<'c>(
    groups: &mut Groups,
    choices: &mut Vec<Choice<'_, 'c>>,
    repair: &mut Repair,
    way: Way<'c>,
    (over, limit): ((String, String), f64),
) {
    let Way {
        i,
        from,
        to,
        c,
        rate,
        split,
        ..
    } = way;
    let moving = match split {
        None => {
            if let Some(m) = groups.get_mut(&from) {
                m.retain(|&j| j != i);
                if m.is_empty() {
                    groups.remove(&from);
                }
            }
            i
        }
        Some([staying, moving]) => {
            let part = choices[i].part(moving);
            choices[i] = choices[i].part(staying);
            repair.splits.push(QuotaSplit {
                workload: part.d.name.to_owned(),
                bucket: over,
                quota: limit,
                capacity: from.3,
            });
            choices.push(part);
            choices.len() - 1
        }
    };
    choices[moving].c = c;
    choices[moving].rate = rate;
    repair.moved.push(i);
    if moving != i {
        repair.moved.push(moving);
    }
    groups.entry(to).or_default().push(moving);
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
