//! The comparison with the plan's declared pools: what they cost today against what their
//! workloads cost in the recommended pools.

use super::reason::ChangeNote;
use super::types::{Change, Comparison, RecPool, Unsatisfied, WorkloadCost};
use crate::catalog::Catalog;
use crate::core::cents;
use crate::plan::Plan;

/// Today's declared pools against the recommendation.
pub(super) fn compare(
    plan: &Plan,
    catalog: &Catalog,
    pools: &[RecPool],
    workload_costs: &[WorkloadCost],
    unsatisfied: &[Unsatisfied],
    recommended: f64,
) -> Option<Comparison> {
    if plan.pools().is_empty() {
        return None;
    }
    let mut today = 0.0;
    let mut changes = Vec::new();
    let (mut uncompared, mut not_compared) = (0.0, Vec::new());
    for p in plan.pools() {
        // A Capacity Block without a block price is not costed at on-demand here: a block is
        // bought at its own price, so a saving against on-demand would be one nobody gets.
        let block_unknown = crate::engine::cost::block_price_unknown(plan, catalog, p);
        let priced =
            crate::engine::cost::declared_pool(plan, catalog, p).filter(|_| !block_unknown);
        let cost = priced.as_ref().map(|c| c.expected);
        // A stand-in price (a reservation with no reserved rate, costed at on-demand) is said
        // so: the comparison never shows on-demand as what a reservation saves.
        let caveat = priced.and_then(|c| c.price.caveat);
        let mut moves: Vec<String> = Vec::new();
        for w in &p.workloads {
            if let Some(rp) = pools.iter().find(|rp| rp.workloads.contains(w.get())) {
                if !moves.contains(&rp.name) {
                    moves.push(rp.name.clone());
                }
            }
        }
        // Workloads the recommendation could not place (quota, memory, allow-lists): the pool
        // that runs them today is not idle, and no saving is claimed for it.
        let blocked: Vec<&Unsatisfied> = unsatisfied
            .iter()
            .filter(|u| p.workloads.iter().any(|w| w.get() == &u.workload))
            .collect();
        let cost = cost.filter(|_| blocked.is_empty() || !moves.is_empty());
        today += cost.unwrap_or(0.0);
        let (sku, region) = (p.sku.get().clone(), p.region.get().clone());
        let note = match (&cost, moves.is_empty()) {
            (None, true) if !blocked.is_empty() => ChangeNote::Keep {
                blocked: blocked
                    .iter()
                    .map(|u| (u.workload.clone(), u.message.clone()))
                    .collect(),
            },
            (None, _) if block_unknown => ChangeNote::BlockPriceUnknown { sku, region },
            (None, _) => ChangeNote::NoPrice { sku, region },
            (Some(_), true) => ChangeNote::Delete { caveat },
            (Some(_), false) => ChangeNote::Moves {
                to: moves.clone(),
                caveat,
            },
        };
        // What the pool's workloads cost where they are recommended to run.
        let recommended_here: f64 = workload_costs
            .iter()
            .filter(|w| p.workloads.iter().any(|x| x.get() == &w.workload))
            .map(|w| w.monthly_cost_usd)
            .sum();
        if cost.is_none() {
            // Neither side of an unpriced pool enters the totals, so the saving compares like
            // with like and the per-pool savings add up to it.
            uncompared += recommended_here;
            not_compared.push(p.name.get().clone());
        }
        changes.push(Change {
            declared_pool: p.name.get().clone(),
            today_monthly_cost_usd: cost.map(cents),
            recommended_monthly_cost_usd: cents(recommended_here),
            saving_usd: cost.map(|c| cents(c - recommended_here)),
            moves_to: moves,
            note,
        });
    }
    let compared = recommended - uncompared;
    Some(Comparison {
        today_monthly_cost_usd: cents(today),
        recommended_monthly_cost_usd: cents(compared),
        saving_usd: cents(today - compared),
        changes,
        not_compared,
    })
}
