//! Filling the idle GPUs of a pool with replicas of a workload of another pool: a split no
//! whole-workload move makes. Two workloads of one segment, 2 replicas of 20 vCPUs and 100 GiB
//! and 3 of 10 vCPUs, packed whole: 3 x NC16as_T4_v3 and 1 x NC64as_T4_v3 with two GPUs idle,
//! $5,813.72 a month; with two of the second's replicas on the idle GPUs, $4,055.88 (the exact
//! solver of `tests/all/oracle.rs` found it).
//!
//! A fill never adds a node to the pool it fills, so no quota bucket draws more than before,
//! and only workloads that may split take part (as quota repair splits: no gang, no
//! availability floor, at least two replicas, not already a part).

use super::build::build_cached;
use super::choice::{Choice, PoolKey, Share};
use super::moves::small;
use super::{rehome, Cx, Groups};

/// Fills this stage makes at most; each lowers the fleet's cost.
const MAX_FILLS: usize = 8;

/// Splits weighed in one round (each packs two pools), so an estate of many small pools
/// stays linear, as `moves::MOVE_TRIALS` bounds single moves.
const FILL_TRIALS: usize = 256;

/// A workload split to fill idle GPUs: its name, and the pool its moved part joined.
#[derive(Debug, Clone)]
pub(super) struct FillSplit {
    pub(super) workload: String,
    pub(super) into: PoolKey,
}

/// While moving part of a workload onto another pool's idle GPUs lowers the fleet's cost
/// (packed for real), the best such split.
pub(super) fn fill_pools(
    cx: &Cx<'_, '_>,
    groups: &mut Groups,
    choices: &mut Vec<Choice<'_, '_>>,
) -> Vec<FillSplit> {
    let (catalog, plan_hours, cache) = (cx.catalog, cx.plan_hours, &cx.cache);
    let mut out = Vec::new();
    for _ in 0..MAX_FILLS {
        let cost = |ms: &[&Choice<'_, '_>], key: &PoolKey| {
            build_cached(cache, ms, key.3, catalog, plan_hours, true)
        };
        let pool = |k: &PoolKey| -> Vec<&Choice<'_, '_>> {
            groups[k].iter().map(|&j| &choices[j]).collect()
        };
        // (saving, workload, the pool it fills, the part that moves, the share that stays)
        let mut best: Option<(f64, usize, PoolKey, Choice<'_, '_>, Share)> = None;
        let mut weighed = 0;
        for (into, members) in groups.iter() {
            if weighed >= FILL_TRIALS {
                break;
            }
            if !small(members, choices) {
                continue;
            }
            let there = cost(&pool(into), into);
            let idle = there.stranded.as_ref().map_or(0, |s| s.gpu_units);
            if idle == 0 {
                continue;
            }
            for (from, others) in groups.iter() {
                if from == into
                    || (from.0, from.3, from.4) != (into.0, into.3, into.4)
                    || !small(others, choices)
                {
                    continue;
                }
                let here = cost(&pool(from), from).cost;
                for &i in others {
                    let ch = &choices[i];
                    let d = &ch.d;
                    if !d.may_split() || d.is_part() {
                        continue;
                    }
                    let Some((c, rate)) = rehome::joining(ch, into, catalog) else {
                        continue;
                    };
                    for k in 1..d.peak.min(idle.saturating_add(1)) {
                        if weighed >= FILL_TRIALS {
                            break;
                        }
                        weighed += 1;
                        let [staying, moving] = Share::cut(d, d.peak - k);
                        // A part keeps the workload's candidates (`Choice::part`).
                        let mut part = ch.part(moving);
                        part.c = c.as_ref().clone();
                        part.rate = rate.clone();
                        let mut filled = pool(into);
                        filled.push(&part);
                        let after_into = cost(&filled, into);
                        // Only idle GPUs are filled: the pool keeps its nodes.
                        if after_into.nodes_max > there.nodes_max {
                            break;
                        }
                        let kept = ch.part(staying);
                        let left: Vec<&Choice<'_, '_>> = others
                            .iter()
                            .map(|&j| if j == i { &kept } else { &choices[j] })
                            .collect();
                        let saving = here + there.cost - cost(&left, from).cost - after_into.cost;
                        if saving > 0.005 && best.as_ref().is_none_or(|b| saving > b.0 + 0.005) {
                            best = Some((saving, i, into.clone(), part, staying));
                        }
                    }
                }
            }
        }
        let Some((_, i, into, part, staying)) = best else {
            break;
        };
        out.push(FillSplit {
            workload: part.d.name.to_owned(),
            into: into.clone(),
        });
        choices[i] = choices[i].part(staying);
        choices.push(part);
        let at = choices.len() - 1;
        groups.entry(into).or_default().push(at);
    }
    out
}
