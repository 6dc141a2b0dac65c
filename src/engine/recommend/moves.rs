//! Moving one workload at a time between pools, judged by the final packing.
//!
//! Merges move whole pools, so one member that cannot go (a replica larger than the other
//! pool's node) keeps every other member where it is; and the fluid search that chose the
//! SKUs prices a reservation per workload, so it never sees what two reserved pools gain by
//! trading a workload. Both leave nodes on the table that a single move recovers: on openb
//! (AWS), 51 time-sliced serving replicas of 6 vCPUs leave four g4dn.metal nodes for one more
//! g6.48xlarge in the L4 pool, $5,396 a month less.
//!
//! Only pools of up to `MOVE_REPLICAS` replicas of up to `MOVE_MEMBERS` workloads take part:
//! the final packing of a pool of thousands of replicas, or of a hundred replica shapes,
//! costs a hundred times more, and a move there shifts its cost by less than the packing's
//! own rounding. `MOVE_TRIALS` bounds the moves weighed at once, so an estate of many small
//! pools stays linear.

use super::alternatives::{MOVE_MEMBERS, MOVE_REPLICAS};
use super::build::{build_cached, prefetch_thorough};
use super::candidate::{Candidate, Rate};
use super::choice::{Choice, PoolKey};
use super::{alternatives, rehome, Cx, Groups};
use crate::catalog::Catalog;
use crate::core::Capacity;
use std::collections::{BTreeMap, BTreeSet};

/// Moves weighed in one round (each packs up to two pools).
const MOVE_TRIALS: usize = 256;

/// Whether a pool is small enough for its moves to be judged by the final packing.
pub(super) fn small(members: &[usize], choices: &[Choice<'_, '_>]) -> bool {
    members.len() <= MOVE_MEMBERS
        && members.iter().map(|&i| choices[i].d.peak).sum::<u32>() <= MOVE_REPLICAS
}

/// Moves this stage may make: each one lowers the fleet's cost, so it ends anyway; the cap
/// bounds its time on a plan whose pools trade many small savings.
const MAX_MOVES: usize = 16;

/// One move open now: the workload (an index into the choices), the pool it leaves, the
/// pool it joins, and its candidate and rate there.
type Trial<'c> = (usize, PoolKey, PoolKey, Candidate<'c>, Rate);

/// The best single move between small pools, while one lowers the fleet's cost as packed.
pub(super) fn move_workloads(cx: &Cx<'_, '_>, groups: &mut Groups, choices: &mut [Choice<'_, '_>]) {
    let (catalog, plan_hours, cache) = (cx.catalog, cx.plan_hours, &cx.cache);
    for _ in 0..MAX_MOVES {
        let mut trials = trials(groups, choices, catalog);
        if trials.is_empty() {
            return;
        }
        let cost = |ms: &[&Choice<'_, '_>], capacity| {
            build_cached(cache, ms, capacity, catalog, plan_hours, true).cost
        };
        let pool = |k: &PoolKey| -> Vec<&Choice<'_, '_>> {
            groups[k].iter().map(|&j| &choices[j]).collect()
        };
        // Each moving workload's pool without it: the same whichever pool it would join.
        let mut left: BTreeMap<usize, Vec<&Choice<'_, '_>>> = BTreeMap::new();
        for (i, a, ..) in &trials {
            left.entry(*i).or_insert_with(|| {
                groups[a]
                    .iter()
                    .filter(|&&j| j != *i)
                    .map(|&j| &choices[j])
                    .collect()
            });
        }
        // The final packings take most of the time: pack them side by side first. A pool
        // does not get cheaper for holding more, so only a workload whose leaving saves a
        // node where it is can pay for a move: the pools it would join are packed for those
        // only.
        let involved: BTreeSet<&PoolKey> = trials.iter().flat_map(|(_, a, b, ..)| [a, b]).collect();
        let mut jobs: Vec<(Vec<&Choice<'_, '_>>, Capacity)> = Vec::new();
        for key in &involved {
            jobs.push((pool(key), key.3));
        }
        for (i, a, ..) in &trials {
            jobs.push((left[i].clone(), a.3));
        }
        prefetch_thorough(cache, jobs, catalog, plan_hours);
        let here: BTreeMap<&PoolKey, f64> = involved
            .into_iter()
            .map(|k| (k, cost(&pool(k), k.3)))
            .collect();
        // Workloads whose leaving saves where they are.
        let pays: BTreeSet<usize> = trials
            .iter()
            .filter(|(i, a, ..)| cost(&left[i], a.3) < here[a] - 0.005)
            .map(|t| t.0)
            .collect();
        // Those on their candidate in the pool they would join.
        let moved: Vec<Option<Choice<'_, '_>>> = trials
            .iter()
            .map(|(i, _, _, c, rate)| {
                pays.contains(i)
                    .then(|| choices[*i].with(c.clone(), rate.clone()))
            })
            .collect();
        let joined = |k: usize| -> Option<Vec<&Choice<'_, '_>>> {
            let m = moved[k].as_ref()?;
            let mut ms = pool(&trials[k].2);
            ms.push(m);
            Some(ms)
        };
        let mut jobs: Vec<(Vec<&Choice<'_, '_>>, Capacity)> = Vec::new();
        for (k, (.., b, _, _)) in trials.iter().enumerate() {
            if let Some(ms) = joined(k) {
                jobs.push((ms, b.3));
            }
        }
        prefetch_thorough(cache, jobs, catalog, plan_hours);
        let mut best: Option<(f64, usize)> = None;
        for (k, (i, a, b, ..)) in trials.iter().enumerate() {
            let Some(ms) = joined(k) else { continue };
            let before = here[a] + here[b];
            let after = cost(&left[i], a.3) + cost(&ms, b.3);
            let saving = before - after;
            if saving > 0.005 && best.is_none_or(|(s, _)| saving > s) {
                best = Some((saving, k));
            }
        }
        let Some((_, k)) = best else { return };
        let (i, a, b, c, rate) = trials.swap_remove(k);
        choices[i].c = c;
        choices[i].rate = rate;
        if let Some(members) = groups.get_mut(&a) {
            members.retain(|&j| j != i);
        }
        if let Some(members) = groups.get_mut(&b) {
            members.push(i);
        }
    }
}

/// Each workload of a small pool that could join another small pool of its segment, capacity
/// and sharing, on the candidate it would take there (at most `MOVE_TRIALS`).
fn trials<'c>(groups: &Groups, choices: &[Choice<'_, 'c>], catalog: &Catalog) -> Vec<Trial<'c>> {
    let keys: Vec<PoolKey> = groups
        .iter()
        .filter(|(_, m)| small(m, choices))
        .map(|(k, _)| k.clone())
        .collect();
    let mut trials: Vec<Trial<'_>> = Vec::new();
    for a in &keys {
        // A pool's sole member moving is a merge, which the merge stage judged.
        if groups[a].len() < 2 {
            continue;
        }
        for b in &keys {
            if a == b || a.0 != b.0 || a.3 != b.3 || a.4 != b.4 {
                continue;
            }
            for &i in &groups[a] {
                let ch = &choices[i];
                // The parts of a workload split over AKS profiles stay in their family.
                if ch.d.is_part() {
                    continue;
                }
                let Some((c, rate)) = rehome::joining(ch, b, catalog) else {
                    continue;
                };
                if trials.len() < MOVE_TRIALS {
                    trials.push((i, a.clone(), b.clone(), c.into_owned(), rate));
                }
            }
        }
    }
    trials
}

/// Each pool on the cheapest of the options its alternatives list (`alternatives::options`),
/// where that pool, packed for real, costs less than the pool as it is. Workloads choose their
/// SKU from the node share a replica takes, as if pools packed perfectly; a small pool pays
/// for its last node whole, and on a node of another size it may not: two replicas of 16
/// vCPUs on a g4dn.metal pay for eight GPUs, on a g4dn.12xlarge for four. A pool whose
/// option is a pool that already exists is a merge, which the merge stage judged.
///
/// Only pools that `small` admits are tried: on a pool of hundreds of nodes the last node's
/// rounding is a small part of its cost, and packing every option for real would cost more
/// time than the rest of the recommender.
pub(super) fn rehome_pools(cx: &Cx<'_, '_>, groups: &mut Groups, choices: &mut [Choice<'_, '_>]) {
    // A pool that moves frees its key, which another pool skipped as a merge may now take.
    for _ in 0..MAX_PASSES {
        if !rehome_pass(cx, groups, choices) {
            return;
        }
    }
}

/// Passes over the pools `rehome_pools` makes at most; each pass that moves a pool lowers the
/// fleet's cost.
const MAX_PASSES: usize = 4;

/// Pairs of pools `rehome_pairs` weighs in one pass.
const PAIR_TRIALS: usize = 64;

/// Two small pools of one segment, capacity type and sharing moved together onto a size
/// neither has, where that packs cheaper than the two apart. A merge folds one pool into
/// the other's size and a rehome moves one pool; neither finds a third size that holds both:
/// one replica of 20 vCPUs and 100 GiB on an NC24ads_A100_v4 and three one-GPU replicas on
/// NC8as_T4_v3 nodes, $4,328.17 a month, all fit one NC64as_T4_v3 at $3,176.96 (the exact
/// solver of `tests/all/oracle.rs`).
pub(super) fn rehome_pairs(cx: &Cx<'_, '_>, groups: &mut Groups, choices: &mut [Choice<'_, '_>]) {
    for _ in 0..MAX_PASSES {
        if !pair_pass(cx, groups, choices) {
            return;
        }
    }
}

/// A pair of pools moved together: the saving, the two pools, where they go, and each
/// member's candidate and rate there.
type PairMove<'c> = (
    f64,
    PoolKey,
    PoolKey,
    PoolKey,
    Vec<(usize, Candidate<'c>, Rate)>,
);

/// One pass over pairs of pools; whether any pair moved.
fn pair_pass(cx: &Cx<'_, '_>, groups: &mut Groups, choices: &mut [Choice<'_, '_>]) -> bool {
    let (catalog, plan_hours, cache) = (cx.catalog, cx.plan_hours, &cx.cache);
    let keys: Vec<PoolKey> = groups
        .iter()
        .filter(|(_, m)| tried(m, choices))
        .map(|(k, _)| k.clone())
        .collect();
    let mut best: Option<PairMove<'_>> = None;
    let mut weighed = 0;
    for (n, a) in keys.iter().enumerate() {
        for b in &keys[n + 1..] {
            if (a.0, a.3, a.4) != (b.0, b.3, b.4) || weighed >= PAIR_TRIALS {
                continue;
            }
            let both: Vec<usize> = groups[a].iter().chain(&groups[b]).copied().collect();
            if !small(&both, choices) {
                continue;
            }
            weighed += 1;
            let cost = |k: &PoolKey| {
                let ms: Vec<&Choice<'_, '_>> = groups[k].iter().map(|&i| &choices[i]).collect();
                build_cached(cache, &ms, k.3, catalog, plan_hours, true).cost
            };
            let apart = cost(a) + cost(b);
            let Some((together, to, moved)) = cheapest_listed(cx, groups, choices, &both, a) else {
                continue;
            };
            let saving = apart - together;
            if saving > 0.005 && best.as_ref().is_none_or(|x| saving > x.0) {
                let moved = moved
                    .into_iter()
                    .map(|(i, c, rate)| (i, c.into_owned(), rate))
                    .collect();
                best = Some((saving, a.clone(), b.clone(), to, moved));
            }
        }
    }
    let Some((_, a, b, to, moved)) = best else {
        return false;
    };
    let mut members = groups.remove(&a).unwrap_or_default();
    members.extend(groups.remove(&b).unwrap_or_default());
    for (i, c, rate) in moved {
        choices[i].c = c;
        choices[i].rate = rate;
    }
    groups.insert(to, members);
    true
}

/// Whether the pool stage tries a pool's listed options: it is `small`, and none of its
/// members is one part of a workload split over AKS profiles (the parts stay together).
pub(super) fn tried(members: &[usize], choices: &[Choice<'_, '_>]) -> bool {
    small(members, choices) && members.iter().all(|&i| !choices[i].d.is_part())
}

/// The cheapest of the options `members` (a pool keyed `key`, or two pools together) list
/// that is not a pool already, packed for real: its cost, key and the members moved there.
fn cheapest_listed<'a, 'c>(
    cx: &Cx<'_, '_>,
    groups: &Groups,
    choices: &'a [Choice<'_, 'c>],
    members: &[usize],
    key: &PoolKey,
) -> Option<(f64, PoolKey, rehome::Moved<'a, 'c>)> {
    let mut best: Option<(f64, PoolKey, rehome::Moved<'a, 'c>)> = None;
    for (_, _, to) in alternatives::options(choices, members, key, cx.catalog, cx.plan_hours)
        .into_iter()
        .take(alternatives::LISTED)
    {
        if groups.contains_key(&to) {
            continue;
        }
        let Some((built, moved)) = alternatives::packed(cx, choices, members, &to, true) else {
            continue;
        };
        if best.as_ref().is_none_or(|b| built.cost < b.0) {
            best = Some((built.cost, to, moved));
        }
    }
    best
}

/// One pass over the pools; whether any moved.
fn rehome_pass(cx: &Cx<'_, '_>, groups: &mut Groups, choices: &mut [Choice<'_, '_>]) -> bool {
    let (catalog, plan_hours, cache) = (cx.catalog, cx.plan_hours, &cx.cache);
    let keys: Vec<PoolKey> = groups.keys().cloned().collect();
    let mut moved_any = false;
    for a in keys {
        let Some(members) = groups.get(&a).cloned() else {
            continue;
        };
        if !tried(&members, choices) {
            continue;
        }
        let ms: Vec<&Choice<'_, '_>> = members.iter().map(|&i| &choices[i]).collect();
        let here = build_cached(cache, &ms, a.3, catalog, plan_hours, true).cost;
        let Some((_, to, moved)) = cheapest_listed(cx, groups, choices, &members, &a)
            .filter(|(cost, ..)| *cost < here - 0.005)
        else {
            continue;
        };
        let moved: Vec<(usize, Candidate<'_>, Rate)> = moved
            .into_iter()
            .map(|(i, c, rate)| (i, c.into_owned(), rate))
            .collect();
        for (i, c, rate) in moved {
            choices[i].c = c;
            choices[i].rate = rate;
        }
        groups.remove(&a);
        groups.insert(to, members);
        moved_any = true;
    }
    moved_any
}
