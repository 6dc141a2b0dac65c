//! Alternatives: the other SKUs, regions and capacity types a pool's workloads could use,
//! priced as one valid pool, and the capacity types that were closed, with why.

use super::build::{build_cached, Built};
use super::choice::{estimate, Choice, PoolKey};
use super::explain::idle_gpus;
use super::reason::{AltNote, AltWhat, NotTaken};
use super::types::{Alternative, AlternativeKind};
use super::{rehome, Cx};
use crate::catalog::Catalog;
use crate::core::cents;
use crate::core::Capacity;
use std::collections::BTreeMap;

/// Replicas a pool may hold to take part in single moves (`moves`), and so in the moves
/// an alternative lists.
pub(super) const MOVE_REPLICAS: u32 = 600;

/// Workloads a pool may hold to take part in single moves.
pub(super) const MOVE_MEMBERS: usize = 16;

/// Other SKUs, regions and capacity types every workload of the pool could use, cheapest
/// first, with their cost delta; for a pool that idles GPUs, the cheapest way to fewer of
/// them; and the capacity types that were closed, with why. A pool the pool stage `tried` is
/// priced as that stage judged its options, by the final packing (cached from there); a
/// larger one by the quick packers.
pub(super) fn alternatives(
    cx: &Cx<'_, '_>,
    choices: &[Choice<'_, '_>],
    members: &[usize],
    key: &PoolKey,
    chosen: &Built,
    tried: bool,
) -> Vec<Alternative> {
    let (catalog, plan_hours) = (cx.catalog, cx.plan_hours);
    let first = &choices[members[0]];
    let options = options(choices, members, key, catalog, plan_hours);
    let pack = |to: &PoolKey| -> Option<(Built, u32)> {
        let (b, moved) = packed(cx, choices, members, to, tried)?;
        let gpus = b.nodes_max * moved.first().map_or(0, |(_, c, _)| c.sku.gpu_count);
        Some((b, gpus))
    };
    let mut out = Vec::new();
    for (_, _, to) in options.iter().take(LISTED) {
        let Some((b, gpus)) = pack(to) else { continue };
        let what = AltWhat::Packed {
            nodes: b.nodes_max,
            gpus,
        };
        let at = (to.1.as_str(), to.2.as_str(), to.3);
        out.push(priced(
            at,
            &b,
            chosen,
            gpus,
            AlternativeKind::NextCheapest,
            what,
        ));
    }
    // A pool whose replicas run out of vCPUs or RAM before GPUs pays for GPUs nothing uses.
    // The recommendation stays the cheapest; the trade is listed beside it: the option that
    // idles fewer GPUs for the least money per GPU given back (estimated from node shares,
    // then packed), if it gives back at least half of the idle GPUs and no listed option
    // already provisions fewer.
    let ms: Vec<&Choice<'_, '_>> = members.iter().map(|&i| &choices[i]).collect();
    let chosen_gpus = chosen.nodes_max * first.c.sku.gpu_count;
    let idle = idle_gpus(chosen.stranded.as_ref(), chosen.ts_replicas);
    let listed_fewer = out.iter().any(|a| a.gpus.is_some_and(|g| g < chosen_gpus));
    // Shown where at least a node's worth of GPUs idles, which rounding alone cannot explain.
    let per_node = first.c.sku.gpu_count.max(1);
    if idle >= per_node && !listed_fewer && ms.iter().all(|m| m.d.gang <= 1) {
        let here: f64 = ms
            .iter()
            .map(|m| estimate(&m.d, &m.c, &m.rate, plan_hours))
            .sum();
        let per_gpu = |o: &(f64, f64, PoolKey)| (o.0 - here) / (f64::from(chosen_gpus) - o.1);
        let mut leaner: Vec<&(f64, f64, PoolKey)> = options
            .iter()
            .skip(LISTED)
            .filter(|o| o.1 < f64::from(chosen_gpus) - 0.5)
            .collect();
        leaner.sort_by(|a, b| per_gpu(a).total_cmp(&per_gpu(b)).then(a.1.total_cmp(&b.1)));
        // Estimates and packings disagree most on such pools: pack the few best and keep the
        // one that gives GPUs back cheapest as packed.
        let best = leaner
            .into_iter()
            .take(3)
            .filter_map(|(_, _, to)| {
                let (b, gpus) = pack(to)?;
                // Worth showing when it gives back at least half of the idle GPUs.
                (gpus < chosen_gpus && 2 * (chosen_gpus - gpus) >= idle).then(|| {
                    let per = (b.cost - chosen.cost) / f64::from(chosen_gpus - gpus);
                    (per, to, b, gpus)
                })
            })
            .min_by(|a, b| a.0.total_cmp(&b.0).then(a.3.cmp(&b.3)));
        if let Some((_, to, b, gpus)) = best {
            let fewer = chosen_gpus - gpus;
            let delta = b.cost - chosen.cost;
            let what = AltWhat::FewerGpus {
                nodes: b.nodes_max,
                gpus,
                fewer,
                usd_per_gpu: delta / f64::from(fewer),
            };
            let at = (to.1.as_str(), to.2.as_str(), to.3);
            out.push(priced(
                at,
                &b,
                chosen,
                gpus,
                AlternativeKind::FewerGpus,
                what,
            ));
        }
    }
    out.extend(quota_closed(cx, choices, members, chosen));
    out.extend(spot_shut(&ms, key));
    out
}

/// The sizes a known quota closed to every workload of the pool (`Choice::closed`) where
/// the pool, packed there, would cost less: at most `LISTED`, cheapest first. Nothing else
/// lists them, since no stage may place work there.
fn quota_closed(
    cx: &Cx<'_, '_>,
    choices: &[Choice<'_, '_>],
    members: &[usize],
    chosen: &Built,
) -> Vec<Alternative> {
    let first = &choices[members[0]];
    let mut out: Vec<Alternative> = Vec::new();
    for k in first.closed.iter() {
        // Each member there on the capacity type that costs the first least alone.
        let Some(capacity) =
            k.c.rates(&first.d)
                .into_iter()
                .map(|r| (estimate(&first.d, &k.c, &r, cx.plan_hours), r.capacity))
                .min_by(|a, b| a.0.total_cmp(&b.0))
                .map(|(_, c)| c)
        else {
            continue;
        };
        let trial: Option<Vec<Choice<'_, '_>>> = members
            .iter()
            .map(|&i| {
                let ch = &choices[i];
                let there = ch
                    .closed
                    .iter()
                    .find(|o| o.c.sku.name == k.c.sku.name && o.c.region == k.c.region)?;
                let rate = there
                    .c
                    .rates(&ch.d)
                    .into_iter()
                    .find(|r| r.capacity == capacity)?;
                Some(ch.with(there.c.clone(), rate))
            })
            .collect();
        let Some(trial) = trial else { continue };
        let refs: Vec<&Choice<'_, '_>> = trial.iter().collect();
        let b = build_cached(&cx.cache, &refs, capacity, cx.catalog, cx.plan_hours, false);
        if b.cost >= chosen.cost - 0.005 {
            continue;
        }
        let gpus = b.nodes_max * k.c.sku.gpu_count;
        let what = AltWhat::QuotaClosed {
            nodes: b.nodes_max,
            gpus,
            quota: k.detail.clone(),
        };
        let at = (k.c.sku.name.as_str(), k.c.region.as_str(), capacity);
        out.push(priced(
            at,
            &b,
            chosen,
            gpus,
            AlternativeKind::QuotaClosed,
            what,
        ));
    }
    out.sort_by(|a, b| {
        a.delta_usd
            .unwrap_or(0.0)
            .total_cmp(&b.delta_usd.unwrap_or(0.0))
            .then_with(|| (&a.sku, &a.region).cmp(&(&b.sku, &b.region)))
    });
    out
}

/// An option packed as `b`, at (SKU, region, capacity type), priced against the pool as
/// `chosen`: what each listed kind of alternative is.
fn priced(
    (sku, region, capacity): (&str, &str, Capacity),
    b: &Built,
    chosen: &Built,
    gpus: u32,
    kind: AlternativeKind,
    what: AltWhat,
) -> Alternative {
    Alternative {
        sku: sku.to_owned(),
        region: region.to_owned(),
        capacity,
        monthly_cost_usd: Some(cents(b.cost)),
        delta_usd: Some(cents(b.cost - chosen.cost)),
        gpus: Some(gpus),
        kind,
        note: AltNote {
            what,
            not_taken: None,
        },
    }
}

/// Spot, where it was not open to a workload of the pool, and why: listed once per pool.
fn spot_shut(ms: &[&Choice<'_, '_>], key: &PoolKey) -> Option<Alternative> {
    if key.3.is_evictable() {
        return None;
    }
    let what = ms.iter().find_map(|m| match &m.c.spot {
        Some(q) => q.effective.as_ref().err().map(|why| AltWhat::SpotShut {
            workload: m.d.name.to_owned(),
            why: why.clone(),
        }),
        None => None,
    })?;
    Some(Alternative {
        sku: key.1.clone(),
        region: key.2.clone(),
        capacity: Capacity::Spot,
        monthly_cost_usd: None,
        delta_usd: None,
        gpus: None,
        kind: AlternativeKind::NotConsidered,
        note: AltNote {
            what,
            not_taken: None,
        },
    })
}

/// The other SKUs, regions and capacity types every member of the pool could use, as
/// (estimated cost, estimated GPUs, the pool there), cheapest estimate first. The members as
/// moved are made again for the few options that get packed: kept for every option, a large
/// pool's moved members (one candidate each, for every SKU, region and capacity type) were
/// the recommender's peak memory.
pub(super) fn options(
    choices: &[Choice<'_, '_>],
    members: &[usize],
    key: &PoolKey,
    catalog: &Catalog,
    plan_hours: f64,
) -> Vec<(f64, f64, PoolKey)> {
    let first = &choices[members[0]];
    let mut options: Vec<(f64, f64, PoolKey)> = Vec::new();
    for c0 in first.all.iter() {
        for r0 in c0.rates(&first.d) {
            if c0.sku.name == key.1 && c0.region == key.2 && r0.capacity == key.3 {
                continue;
            }
            let Some((to, moved)) = rehome::rehomed(
                choices,
                members,
                &c0.sku.name,
                &c0.region,
                r0.capacity,
                catalog,
            ) else {
                continue;
            };
            let mut est = 0.0;
            let mut gpus = 0.0;
            for (i, c, rate) in &moved {
                let d = &choices[*i].d;
                est += estimate(d, c, rate, plan_hours);
                gpus += f64::from(d.peak)
                    * f64::from(d.gang.max(1))
                    * c.node_share
                    * f64::from(c.sku.gpu_count);
            }
            options.push((est, gpus, to));
        }
    }
    options.sort_by(|a, b| a.0.total_cmp(&b.0).then_with(|| a.2.cmp(&b.2)));
    options
}

/// The pool's members on the option `to`, packed (`thorough`: by the final packing), with
/// each member's candidate and rate there; None when a member cannot go there.
pub(super) fn packed<'a, 'c>(
    cx: &Cx<'_, '_>,
    choices: &'a [Choice<'_, 'c>],
    members: &[usize],
    to: &PoolKey,
    thorough: bool,
) -> Option<(Built, rehome::Moved<'a, 'c>)> {
    let (_, moved) = rehome::rehomed(choices, members, &to.1, &to.2, to.3, cx.catalog)?;
    let trial: Vec<Choice<'_, '_>> = moved
        .iter()
        .map(|(i, c, rate)| choices[*i].with(c.as_ref().clone(), rate.clone()))
        .collect();
    let refs: Vec<&Choice<'_, '_>> = trial.iter().collect();
    let b = build_cached(&cx.cache, &refs, to.3, cx.catalog, cx.plan_hours, thorough);
    Some((b, moved))
}

/// Options the alternatives pack and list, and the pool stage tries (`moves::rehome_pools`).
pub(super) const LISTED: usize = 3;

/// Why a cheaper alternative was not taken, appended to its note: the quota bucket it draws
/// on could not hold it beside the rest of the fleet; the pool is too large for the pool
/// stage to try its options (`tried` is false); or the fleet as a whole is cheaper as chosen:
/// the option is a pool the fleet has, which the merge stage judged (shared nodes, merges,
/// reservations), while the alternative is priced as this pool alone.
pub(super) fn why_not(
    a: &mut Alternative,
    plan: &crate::plan::Plan,
    catalog: &Catalog,
    used: &BTreeMap<(String, String), f64>,
    own: &((String, String), f64),
    tried: bool,
    repaired: bool,
) {
    if a.kind != AlternativeKind::NextCheapest || !a.delta_usd.is_some_and(|d| d < 0.0) {
        return;
    }
    let Some(sku) = catalog.sku(plan.provider(), &a.sku) else {
        return;
    };
    // Only spot draws on a bucket of its own; every other capacity type on the SKU's family.
    let bucket = super::quota::bucket_of(sku, &a.region, a.capacity);
    let nodes = a.gpus.map_or(0, |g| g.div_ceil(sku.gpu_count.max(1)));
    let need = f64::from(nodes) * f64::from(sku.vcpus);
    // What the rest of the fleet already draws from that bucket (this pool's own use counted
    // only where it stays).
    let mut fleet = used.get(&bucket).copied().unwrap_or(0.0);
    if own.0 == bucket {
        fleet -= own.1;
    }
    let lost = match plan.known_quota(catalog, &bucket.0, &bucket.1) {
        Some((quota, _)) if fleet + need > quota + 1e-9 => NotTaken::Quota {
            family: bucket.1,
            region: bucket.0,
            quota,
            fleet: fleet.max(0.0),
            need,
        },
        _ if !tried => NotTaken::NotTried {
            members: MOVE_MEMBERS,
            replicas: MOVE_REPLICAS,
        },
        // Quota repair runs after the pool stage: a workload it moved here off a pool over its
        // quota took the cheapest place that quota allowed one workload at a time, and nothing
        // weighs this pool's options again.
        _ if repaired => NotTaken::Repaired,
        _ => NotTaken::FleetCheaper,
    };
    a.note.not_taken = Some(lost);
}
