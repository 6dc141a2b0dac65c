//! Choosing: each workload on its cheapest candidate and capacity type alone, and the
//! grouping of choices into pools by segment, SKU, region, capacity and sharing settings.

use super::build::build_cached;
use super::candidate::{Candidate, Rate};
use super::choice::{apply, best_choice, group, pick_of, Choice};
use super::explain::explain_rejections;
use super::merge::merge_aks_profiles;
use super::types::Unsatisfied;
use super::{bound, candidate, demand, guide, improve, Cx, Groups};
use crate::catalog::Catalog;
use crate::plan::Plan;

/// Each workload with demand on its cheapest candidate and capacity type alone, and the
/// workloads no candidate can run, with why.
pub(super) fn first_choices<'p, 'c>(
    plan: &'p Plan,
    catalog: &'c Catalog,
    plan_hours: f64,
) -> (Vec<Choice<'p, 'c>>, Vec<Unsatisfied>) {
    let mut unsatisfied = Vec::new();
    let mut choices = Vec::new();
    // Candidates and the first choice depend on a demand's shape alone, never its name:
    // worked out once per shape.
    type Shared<'c> = (
        std::sync::Arc<Vec<Candidate<'c>>>,
        std::sync::Arc<Vec<candidate::Closed<'c>>>,
    );
    type Found<'c> = Result<(Shared<'c>, Option<(usize, Rate)>), Vec<candidate::Rejection>>;
    let mut by_shape: std::collections::HashMap<String, Found<'c>> =
        std::collections::HashMap::new();
    for d in demand::demands(plan, catalog) {
        if d.peak == 0 {
            continue;
        }
        let found = by_shape.entry(d.shape()).or_insert_with(|| {
            candidate::found(plan, catalog, &d).map(|f| {
                let best = best_choice(&d, &f.open, plan_hours);
                let shared = (std::sync::Arc::new(f.open), std::sync::Arc::new(f.closed));
                (shared, best)
            })
        });
        match found {
            Err(rejections) => unsatisfied.push(explain_rejections(plan, &d, rejections)),
            Ok(((all, closed), best)) => {
                if let Some((i, rate)) = best.clone() {
                    let c = all[i].clone();
                    let all = std::sync::Arc::clone(all);
                    let closed = std::sync::Arc::clone(closed);
                    choices.push(Choice {
                        d,
                        c,
                        rate,
                        all,
                        closed,
                    });
                }
            }
        }
    }
    (choices, unsatisfied)
}

/// How `cheapest_strategy` may choose.
#[derive(Clone, Copy)]
enum Strategy {
    /// Each workload on its cheapest candidate alone.
    Alone,
    /// Each workload on the option that costs least packed on nodes of its own, and local
    /// search from there.
    AlonePacked,
    ImproveAlonePacked,
    /// Local search from there (`improve`).
    Improve(improve::Objective),
    /// Each workload where the fleet LP puts most of its work (`guide`).
    Guided,
}

/// Workloads above which the LP's choice is not packed. On the generated estates of
/// `benches/scale.rs` it made recommend grow faster than the estate (16,000 AWS workloads:
/// 14.1 s, 2.5x per doubling, against 11.3 s and 2.0x without it); openb's 7,064 pods are 135
/// workloads, where it pays.
const GUIDED_CHOICES: usize = 2000;

/// Four ways to choose, each packed for real; the cheapest fleet wins. Choosing alone is
/// exact for plans whose workloads never share a pool; the local searches let workloads move
/// to where they complement each other (see `improve`).
pub(super) fn cheapest_strategy(
    cx: &Cx<'_, '_>,
    choices: &mut Vec<Choice<'_, '_>>,
    lp: &bound::FleetLp,
) {
    let (catalog, plan_hours, cache) = (cx.catalog, cx.plan_hours, &cx.cache);
    let greedy: Vec<(usize, Rate)> = choices.iter().map(|ch| pick_of(ch)).collect();
    // Packing each shape's options on their own is one more packing per option: for estates
    // of up to `GUIDED_CHOICES`, as the guided strategy.
    let large = choices.len() > GUIDED_CHOICES;
    let packed = if large {
        greedy.clone()
    } else {
        alone_packed(cx, choices)
    };
    let mut best: Option<(f64, Vec<(usize, Rate)>)> = None;
    for strategy in [
        Strategy::Alone,
        Strategy::AlonePacked,
        Strategy::Improve(improve::Objective::Fluid),
        Strategy::Improve(improve::Objective::Whole),
        Strategy::ImproveAlonePacked,
        Strategy::Guided,
    ] {
        let picks = match strategy {
            Strategy::Alone => greedy.clone(),
            Strategy::AlonePacked | Strategy::ImproveAlonePacked if large => continue,
            Strategy::AlonePacked => packed.clone(),
            Strategy::Improve(objective) => improved(choices, &greedy, cx, objective),
            Strategy::ImproveAlonePacked => {
                improved(choices, &packed, cx, improve::Objective::Whole)
            }
            // A fifth packing of the whole fleet: for estates of up to `GUIDED_CHOICES`.
            Strategy::Guided if choices.len() > GUIDED_CHOICES => continue,
            Strategy::Guided => match guide::picks(lp, choices, &greedy) {
                Some(picks) => picks,
                None => continue,
            },
        };
        apply(choices, &picks);
        let mut groups = group(choices);
        // Only AKS-managed MIG pools (one profile each) form families to merge. Costed
        // without splitting workloads: a split adds choices, and these picks are trials.
        merge_aks_profiles(&mut groups, choices, catalog, plan_hours, false);
        let cost: f64 = groups
            .iter()
            .map(|(key, members)| {
                let ms: Vec<&Choice<'_, '_>> = members.iter().map(|&i| &choices[i]).collect();
                build_cached(cache, &ms, key.3, catalog, plan_hours, false).cost
            })
            .sum();
        if best.as_ref().is_none_or(|(b, _)| cost < b - 0.005) {
            best = Some((cost, picks));
        }
    }
    if let Some((_, picks)) = best {
        apply(choices, &picks);
    }
}

/// Local search (`improve`) from `start`.
fn improved(
    choices: &[Choice<'_, '_>],
    start: &[(usize, Rate)],
    cx: &Cx<'_, '_>,
    objective: improve::Objective,
) -> Vec<(usize, Rate)> {
    let mut opts: Vec<improve::Options<'_, '_>> = choices
        .iter()
        .zip(start)
        .map(|(ch, g)| improve::Options::new(&ch.d, &ch.all, g))
        .collect();
    improve::improve(&mut opts, cx.catalog, cx.plan_hours, objective);
    opts.iter().map(|o| o.options[o.pick].clone()).collect()
}

/// Options per workload that `alone_packed` packs: the cheapest by the fluid estimate.
const ALONE_TRIED: usize = 12;

/// Each workload on the option (candidate and capacity type) that costs least packed on nodes
/// of its own, among its `ALONE_TRIED` cheapest by the fluid estimate. The estimate prices a
/// replica at its share of a node, which a workload too small to fill a large size never pays:
/// two one-replica workloads were both put on a 4-GPU NC64as_T4_v3 ($3,176.96 a month) where
/// an NC8as_T4_v3 and an NC16as_T4_v3 cost $1,427.88, and no single move from there finds it
/// (the exact solver of `tests/all/oracle.rs`). Worked out once per shape.
fn alone_packed(cx: &Cx<'_, '_>, choices: &[Choice<'_, '_>]) -> Vec<(usize, Rate)> {
    let mut by_shape: std::collections::HashMap<String, (usize, Rate)> =
        std::collections::HashMap::new();
    choices
        .iter()
        .map(|ch| {
            by_shape
                .entry(ch.d.shape())
                .or_insert_with(|| {
                    let mut options: Vec<(f64, usize, Rate)> = ch
                        .all
                        .iter()
                        .enumerate()
                        .flat_map(|(i, c)| {
                            c.rates(&ch.d).into_iter().map(move |r| {
                                (super::choice::estimate(&ch.d, c, &r, cx.plan_hours), i, r)
                            })
                        })
                        .collect();
                    options.sort_by(|a, b| a.0.total_cmp(&b.0));
                    options
                        .into_iter()
                        .take(ALONE_TRIED)
                        .map(|(_, i, r)| {
                            let trial = ch.with(ch.all[i].clone(), r.clone());
                            let b = build_cached(
                                &cx.cache,
                                &[&trial],
                                r.capacity,
                                cx.catalog,
                                cx.plan_hours,
                                false,
                            );
                            (b.cost, i, r)
                        })
                        .fold(None, |best: Option<(f64, usize, Rate)>, o| match best {
                            Some(b) if b.0 <= o.0 + 0.005 => Some(b),
                            _ => Some(o),
                        })
                        .map(|(_, i, r)| (i, r))
                        .unwrap_or_else(|| pick_of(ch))
                })
                .clone()
        })
        .collect()
}

/// The pools the choices form; under AKS, profiles merged upwards where that saves nodes.
pub(super) fn pools_of(cx: &Cx<'_, '_>, choices: &mut Vec<Choice<'_, '_>>) -> Groups {
    let mut groups = group(choices);
    merge_aks_profiles(&mut groups, choices, cx.catalog, cx.plan_hours, true);
    groups
}
