//! The choice the fleet LP suggests (`bound`): each workload on the kind of node that carries
//! most of its work in the LP's optimum, as one more way to choose that `choose` packs for
//! real beside the others. The LP sees every workload at once, so it puts the shapes that
//! strand a node's GPUs (many vCPUs or much RAM per replica) on sizes that have them, where
//! choosing each workload alone cannot.

use microlp::{ComparisonOp, OptimizationDirection, Problem, SolveOutcome, Variable};

use super::bound::FleetLp;
use super::candidate::Rate;
use super::choice::{fit_key, pool_sharing, Choice};

/// Each choice's (candidate, rate) on the kind the LP gives most of its work, or `None` when
/// the LP did not solve. A choice whose kind it cannot find keeps `fallback`'s pick.
pub(super) fn picks(
    lp: &FleetLp,
    choices: &[Choice<'_, '_>],
    fallback: &[(usize, Rate)],
) -> Option<Vec<(usize, Rate)>> {
    let main = dominant(lp)?;
    Some(
        choices
            .iter()
            .enumerate()
            .map(|(j, ch)| {
                let g = lp.group_of_choice[j];
                main.get(g)
                    .copied()
                    .flatten()
                    .and_then(|k| pick_on(lp, ch, k))
                    .unwrap_or_else(|| fallback[j].clone())
            })
            .collect(),
    )
}

/// The candidate and rate of `ch` on kind `k`: its size, sharing and capacity type, in the
/// region where that is cheapest (then the plan's order).
fn pick_on(lp: &FleetLp, ch: &Choice<'_, '_>, k: usize) -> Option<(usize, Rate)> {
    let (_, sku, sharing, fit, capacity, region) = &lp.keys[k];
    ch.all
        .iter()
        .enumerate()
        .filter(|(_, c)| {
            &c.sku.name == sku
                && region.as_ref().is_none_or(|r| r == &c.region)
                && pool_sharing(&c.fit) == *sharing
                && fit_key(&c.fit, ch.d.mig_manager) == *fit
        })
        .flat_map(|(i, c)| {
            c.rates(&ch.d)
                .into_iter()
                .filter(|r| r.capacity == *capacity)
                .map(move |r| (i, c.region_rank, r))
        })
        .min_by(|a, b| a.2.usd.total_cmp(&b.2.usd).then(a.1.cmp(&b.1)))
        .map(|(i, _, r)| (i, r))
}

/// Per group, the kind its largest share of work is on in the LP restricted to the rows the
/// dual ended with (the same optimum when the dual reached its own).
fn dominant(lp: &FleetLp) -> Option<Vec<Option<usize>>> {
    let (added, in_lp) = lp.columns.as_ref()?;
    // An estate too large for the LP has no solution to follow.
    if !in_lp.iter().any(|&on| on) {
        return None;
    }
    let mut p = Problem::new(OptimizationDirection::Minimize);
    let nodes: Vec<Option<Variable>> = lp
        .kinds
        .iter()
        .zip(in_lp)
        .map(|(kind, &on)| on.then(|| p.add_var(kind.usd, (0.0, f64::INFINITY))))
        .collect();
    let mut work: Vec<Vec<(usize, Variable)>> = Vec::with_capacity(lp.groups.len());
    let mut load: Vec<Vec<Vec<(Variable, f64)>>> = lp
        .kinds
        .iter()
        .map(|k| vec![Vec::new(); k.cap.len()])
        .collect();
    for (g, group) in lp.groups.iter().enumerate() {
        let mut ys = Vec::new();
        for (i, u) in group.uses.iter().enumerate() {
            if !added[g][i] || nodes[u.kind].is_none() {
                continue;
            }
            let y = p.add_var(0.0, (0.0, f64::INFINITY));
            for (terms, &need) in load[u.kind].iter_mut().zip(&u.need) {
                if need > 0.0 {
                    terms.push((y, need));
                }
            }
            ys.push((u.kind, y));
        }
        if !ys.is_empty() {
            let terms: Vec<(Variable, f64)> = ys.iter().map(|&(_, y)| (y, 1.0)).collect();
            p.add_constraint(terms, ComparisonOp::Ge, group.months);
            if group.floor > 0.0 {
                // Every kind of its in the LP counts, as the dual's ν sits in their rows.
                let mut kinds: Vec<usize> = group
                    .uses
                    .iter()
                    .map(|u| u.kind)
                    .filter(|&k| nodes[k].is_some())
                    .collect();
                kinds.sort_unstable();
                kinds.dedup();
                let held: Vec<(Variable, f64)> = kinds
                    .iter()
                    .filter_map(|&k| nodes[k].map(|n| (n, 1.0)))
                    .collect();
                p.add_constraint(held, ComparisonOp::Ge, group.floor);
            }
        }
        work.push(ys);
    }
    for (k, dims) in load.into_iter().enumerate() {
        let Some(n) = nodes[k] else { continue };
        for (j, mut terms) in dims.into_iter().enumerate() {
            if terms.is_empty() {
                continue;
            }
            terms.push((n, -lp.kinds[k].cap[j]));
            p.add_constraint(terms, ComparisonOp::Le, 0.0);
        }
    }
    // Each known quota over its kinds in the LP, as the dual's λ holds it.
    let mut draws: Vec<Vec<(Variable, f64)>> = vec![Vec::new(); lp.quotas.limit.len()];
    for (k, n) in nodes.iter().enumerate() {
        if let (Some(n), Some((b, vcpus))) = (n, lp.quotas.of(k)) {
            draws[b].push((*n, vcpus));
        }
    }
    for (terms, &limit) in draws.into_iter().zip(&lp.quotas.limit) {
        if !terms.is_empty() {
            p.add_constraint(terms, ComparisonOp::Le, limit);
        }
    }
    let sol = match p.solve().ok()? {
        SolveOutcome::Solution(s) => s,
        SolveOutcome::Interrupted(_) => return None,
    };
    Some(
        work.iter()
            .map(|ys| {
                ys.iter()
                    .map(|&(k, y)| (k, sol.var_value(y)))
                    .filter(|(_, v)| *v > 1e-9)
                    .max_by(|a, b| a.1.total_cmp(&b.1).then(b.0.cmp(&a.0)))
                    .map(|(k, _)| k)
            })
            .collect(),
    )
}
