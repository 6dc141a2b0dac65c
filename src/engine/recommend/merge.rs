//! Merges: folding one pool into another where the packed fleet gets cheaper, and AKS
//! profile merges (one MIG profile per pool).

use super::build::{build, build_cached, prefetch_thorough, BuildCache};
use super::candidate::{Candidate, Fit, Rate};
use super::choice::{Choice, FitKey, PoolKey};
use super::demand::Segment;
use super::{aks, candidate, rehome, Cx, Groups};
use crate::catalog::Catalog;
use crate::core::{Capacity, Sharing};
use std::collections::BTreeMap;
/// A merge found: its saving, the pool folded, the pool it joins, and each moved workload's
/// new candidate and rate.
pub(super) type Merge<'c> = (f64, PoolKey, PoolKey, Vec<(usize, Candidate<'c>, Rate)>);

/// Workloads two pools may hold between them for a merge to be judged by the final packing.
pub(super) const THOROUGH_MERGE_MEMBERS: usize = 12;

/// Fold one pool into another of the same segment and capacity type where the packed fleet
/// gets cheaper: its workloads move to the other pool's SKU and region (bigger nodes pack
/// better), or time-sliced replicas join a pool with fewer, larger shares per GPU (one node
/// fewer of rounding). Repeats while a merge saves money; each merge removes a pool.
pub(super) fn merge_pools(cx: &Cx<'_, '_>, groups: &mut Groups, choices: &mut [Choice<'_, '_>]) {
    let (catalog, plan_hours, cache) = (cx.catalog, cx.plan_hours, &cx.cache);
    // First stage: every merge, judged by the quick packers, or by the final packing where
    // the two pools are small (a merge often saves only the node each pool rounds up to).
    // Second stage: merges onto nodes with the same card and at least as many GPUs (bigger
    // nodes pack better), judged by the final packing whatever the pools' size. The quick
    // packers misjudge large pools whose GPU, vCPU and RAM are all nearly full by a few
    // percent either way, more than such a merge saves (openb on AWS: folding the
    // g4dn.12xlarge serving pool into the g4dn.metal one saves 1.3% of the fleet, and the
    // quick packers put the two pools 7% above their packing). The final packing costs more
    // time, so it only judges what the first stage left.
    for final_stage in [false, true] {
        merge_stage(groups, choices, catalog, plan_hours, cache, final_stage);
    }
}

pub(super) fn merge_stage(
    groups: &mut BTreeMap<PoolKey, Vec<usize>>,
    choices: &mut [Choice<'_, '_>],
    catalog: &Catalog,
    plan_hours: f64,
    cache: &BuildCache,
    final_stage: bool,
) {
    let cost_of = |choices: &[Choice<'_, '_>], key: &PoolKey, members: &[usize], thorough: bool| {
        let ms: Vec<&Choice<'_, '_>> = members.iter().map(|&i| &choices[i]).collect();
        build_cached(cache, &ms, key.3, catalog, plan_hours, thorough).cost
    };
    loop {
        let keys: Vec<PoolKey> = groups.keys().cloned().collect();
        // Every merge open now: the pool folded, the pool it joins, the moved workloads'
        // new candidates and rates, the joined pool's members, and how it is judged.
        let mut trials = Vec::new();
        for a in &keys {
            for b in &keys {
                if a == b || a.0 != b.0 || a.3 != b.3 || a.4 != b.4 {
                    continue;
                }
                let sku = |k: &PoolKey| groups[k].first().map(|&i| choices[i].c.sku);
                let onto_same_card = match (sku(a), sku(b)) {
                    (Some(x), Some(y)) => x.gpu_model == y.gpu_model && x.gpu_count <= y.gpu_count,
                    _ => false,
                };
                let small = groups[a].len() + groups[b].len() <= THOROUGH_MERGE_MEMBERS;
                let thorough = small || (final_stage && onto_same_card);
                if final_stage && !thorough {
                    continue;
                }
                // The replicas of `a`, re-homed on `b`'s SKU and region with `b`'s sharing.
                let mut moved = Vec::new();
                for &i in &groups[a] {
                    let Some((c, rate)) = rehome::joining(&choices[i], b, catalog) else {
                        break;
                    };
                    moved.push((i, c.into_owned(), rate));
                }
                if moved.len() != groups[a].len() {
                    continue;
                }
                let mut joined: Vec<Choice<'_, '_>> = Vec::new();
                for &i in &groups[b] {
                    let ch = &choices[i];
                    joined.push(ch.with(ch.c.clone(), ch.rate.clone()));
                }
                for (i, c, rate) in &moved {
                    joined.push(choices[*i].with(c.clone(), rate.clone()));
                }
                trials.push((a, b, moved, joined, thorough));
            }
        }
        // The final packings these merges are judged by take most of the time: pack them
        // side by side first. Each packing is deterministic, so the answer is the same.
        let mut jobs: Vec<(Vec<&Choice<'_, '_>>, Capacity)> = Vec::new();
        for (a, b, _, joined, thorough) in &trials {
            if *thorough {
                let members = |k: &PoolKey| groups[k].iter().map(|&i| &choices[i]).collect();
                jobs.push((members(a), a.3));
                jobs.push((members(b), b.3));
                jobs.push((joined.iter().collect(), b.3));
            }
        }
        prefetch_thorough(cache, jobs, catalog, plan_hours);
        let mut best: Option<Merge<'_>> = None;
        for (a, b, moved, joined, thorough) in trials {
            let before = cost_of(choices, a, &groups[a], thorough)
                + cost_of(choices, b, &groups[b], thorough);
            let refs: Vec<&Choice<'_, '_>> = joined.iter().collect();
            let after = build_cached(cache, &refs, b.3, catalog, plan_hours, thorough).cost;
            let saving = before - after;
            if saving > 0.005 && best.as_ref().is_none_or(|x| saving > x.0) {
                best = Some((saving, a.clone(), b.clone(), moved));
            }
        }
        let Some((_, a, b, moved)) = best else { break };
        for (i, c, rate) in moved {
            choices[i].c = c;
            choices[i].rate = rate;
        }
        if let Some(members) = groups.remove(&a) {
            if let Some(target) = groups.get_mut(&b) {
                target.extend(members);
            }
        }
    }
}

/// The family's workloads re-homed on AKS profiles by the exact search (`aks::assign`), when
/// its packed pools cost less than `separate`; whether it applied. With `split`, a workload's
/// replicas may spread over several of the family's pools (its extra parts become choices of
/// their own, appended to `choices`).
#[allow(clippy::too_many_arguments)]
fn exact_aks(
    groups: &mut BTreeMap<PoolKey, Vec<usize>>,
    choices: &mut Vec<Choice<'_, '_>>,
    catalog: &Catalog,
    plan_hours: f64,
    keys: &[PoolKey],
    members: &[usize],
    separate: f64,
    split: bool,
) -> bool {
    let first = &choices[members[0]].c;
    let (Some(spec), sku) = (first.gpu.mig.as_ref(), first.sku) else {
        return false;
    };
    let profiles: Vec<&crate::catalog::MigProfile> = spec
        .aks_profiles
        .iter()
        .filter_map(|p| spec.profile(p))
        .collect();
    let per_node: Vec<u32> = profiles
        .iter()
        .map(|p| crate::mig::per_gpu(spec, &p.name) * sku.gpu_count)
        .collect();
    let fits: Vec<Vec<bool>> = members
        .iter()
        .map(|&i| {
            let need = choices[i].d.slice_need(spec);
            profiles.iter().map(|p| need.held_by(p)).collect()
        })
        .collect();
    let ms: Vec<aks::Member> = members
        .iter()
        .map(|&i| aks::Member {
            peak: choices[i].d.peak,
            floor: choices[i].d.floor,
        })
        .collect();
    // Under AKS's single strategy every MIG pod asks for `nvidia.com/gpu`, so any pool of
    // the family can run any replica it holds; a gang starts together and stays whole.
    let splittable: Vec<bool> = members
        .iter()
        .map(|&i| split && choices[i].d.gang <= 1)
        .collect();
    let Some(assignment) = aks::assign(&ms, &per_node, &fits, &splittable) else {
        return false;
    };
    // The pools of the assignment, packed for real: one choice per part of a member.
    let mut by_profile: BTreeMap<usize, Vec<(usize, Choice<'_, '_>)>> = BTreeMap::new();
    for (&i, parts) in members.iter().zip(&assignment) {
        for &(k, peak, floor) in parts {
            let ch = &choices[i];
            let mut c = ch.c.clone();
            c.fit = Fit::Mig {
                profile: profiles[k].clone(),
            };
            let (ca, ma) = candidate::allocatable(c.sku, catalog);
            c.node_share = candidate::node_share(&c.fit, c.sku, c.gpu, &ch.d, ca, ma);
            let mut part = ch.with(c, ch.rate.clone());
            part.d.peak = peak;
            part.d.floor = floor;
            by_profile.entry(k).or_default().push((i, part));
        }
    }
    let exact: f64 = by_profile
        .values()
        .map(|v| {
            let refs: Vec<&Choice<'_, '_>> = v.iter().map(|(_, c)| c).collect();
            build(&refs, keys[0].3, catalog, plan_hours, false).cost
        })
        .sum();
    if exact + 0.005 >= separate {
        return false;
    }
    for k in keys {
        groups.remove(k);
    }
    let mut placed: std::collections::BTreeSet<usize> = std::collections::BTreeSet::new();
    for (k, v) in by_profile {
        let key = (
            keys[0].0,
            keys[0].1.clone(),
            keys[0].2.clone(),
            keys[0].3,
            Sharing::Mig,
            FitKey::Mig(Some(profiles[k].name.clone())),
        );
        let mut idx = Vec::new();
        for (i, part) in v {
            if placed.insert(i) {
                // The member's first part takes its place; its candidates stay with it.
                choices[i].c = part.c;
                choices[i].d = part.d;
                idx.push(i);
            } else {
                idx.push(choices.len());
                choices.push(part);
            }
        }
        groups.entry(key).or_default().extend(idx);
    }
    true
}

/// AKS pools carry one MIG profile. Where workloads of one segment chose different profiles
/// on the same SKU, region and capacity, re-home them exactly (`exact_aks`, splitting
/// workloads across profiles when `split`), or else run them all on the largest profile when
/// that needs fewer nodes than separate pools.
pub(super) fn merge_aks_profiles(
    groups: &mut BTreeMap<PoolKey, Vec<usize>>,
    choices: &mut Vec<Choice<'_, '_>>,
    catalog: &Catalog,
    plan_hours: f64,
    split: bool,
) {
    let mut families: BTreeMap<(Segment, String, String, Capacity), Vec<PoolKey>> = BTreeMap::new();
    for key in groups.keys() {
        if let FitKey::Mig(Some(_)) = &key.5 {
            families
                .entry((key.0, key.1.clone(), key.2.clone(), key.3))
                .or_default()
                .push(key.clone());
        }
    }
    for keys in families.into_values().filter(|k| k.len() > 1) {
        let members: Vec<usize> = keys.iter().flat_map(|k| groups[k].clone()).collect();
        let separate: f64 = keys
            .iter()
            .map(|k| {
                let ms: Vec<&Choice<'_, '_>> = groups[k].iter().map(|&i| &choices[i]).collect();
                build(&ms, k.3, catalog, plan_hours, false).cost
            })
            .sum();
        if exact_aks(
            groups, choices, catalog, plan_hours, &keys, &members, separate, split,
        ) {
            continue;
        }
        // The largest profile (memory slices, then compute) holds every member.
        let Some(big) = members
            .iter()
            .filter_map(|&i| choices[i].c.fit.mig_profile().cloned())
            .max_by_key(|p| (p.memory_slices, p.compute))
        else {
            continue;
        };
        let mut upsized: Vec<Choice<'_, '_>> = Vec::new();
        for &i in &members {
            let ch = &choices[i];
            let mut c = ch.c.clone();
            c.fit = Fit::Mig {
                profile: big.clone(),
            };
            let (ca, ma) = candidate::allocatable(c.sku, catalog);
            c.node_share = candidate::node_share(&c.fit, c.sku, c.gpu, &ch.d, ca, ma);
            upsized.push(ch.with(c, ch.rate.clone()));
        }
        let refs: Vec<&Choice<'_, '_>> = upsized.iter().collect();
        let merged = build(&refs, keys[0].3, catalog, plan_hours, false).cost;
        if merged + 0.005 < separate {
            for k in &keys {
                groups.remove(k);
            }
            let key = (
                keys[0].0,
                keys[0].1.clone(),
                keys[0].2.clone(),
                keys[0].3,
                Sharing::Mig,
                FitKey::Mig(Some(big.name.clone())),
            );
            for (&i, up) in members.iter().zip(upsized) {
                choices[i].c = up.c;
            }
            groups.insert(key, members);
        }
    }
}
