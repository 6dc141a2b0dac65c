//! `gpuplan recommend`: the cheapest fleet that honours every constraint of a plan.
//!
//! 1. Each workload's demand ([`demand`]) is matched against every SKU and region of the
//!    plan ([`candidate`]); a SKU that cannot run it is rejected with the constraint that
//!    failed.
//! 2. Each workload takes the candidate and capacity type with the lowest expected monthly
//!    cost (ties: the plan's region order, then catalog order); local searches and the fleet
//!    LP ([`bound`], [`guide`]) propose other choices, and the one whose pools pack cheapest
//!    wins. The LP's optimum is also the lower bound the recommendation states.
//! 3. Workloads that chose the same SKU, region, capacity type and sharing settings, and may
//!    share a pool (their [`demand::Segment`]), form one pool. With `mig_manager = "aks"` a pool
//!    has one MIG profile, and profiles are merged upwards when that saves nodes.
//! 4. Single workloads move between pools, and small pools to another node size, where the
//!    final packing says the fleet gets cheaper (`moves`): the choice in step 2 assumes
//!    pools pack perfectly and prices a reservation per workload.
//! 5. Each pool is packed: MIG instances onto GPUs optimally ([`crate::mig::pack`]), then
//!    replicas or prepared GPUs onto nodes ([`pack`]); the minimum covers the warm floor, the
//!    maximum the peak.
//! 6. Costs per pool, workload and team, the alternatives considered, and today's declared
//!    pools for comparison.

pub mod candidate;
mod declared;
pub mod demand;
mod improve;
pub mod pack;
mod rehome;

mod aks;
mod alternatives;
pub mod bound;
mod build;
mod choice;
mod choose;
mod compare;
mod costs;
mod explain;
mod fill;
mod fillings;
mod finish;
mod guide;
mod marks;
mod merge;
mod moves;
mod nodes;
mod quota;
pub mod reason;
mod types;

use build::BuildCache;
use choice::PoolKey;
use choose::{cheapest_strategy, first_choices, pools_of};
use costs::assemble;
use finish::final_pools;
use merge::merge_pools;
use moves::{move_workloads, rehome_pairs, rehome_pools};
use quota::repair_quota;
use std::collections::BTreeMap;

use crate::catalog::Catalog;
use crate::core::cents;
use crate::plan::Plan;

pub use declared::declared;
pub use explain::constraint_names;
pub use finish::node_sizes;
pub(crate) use types::SCHEMA;
pub use types::{
    Alternative, CapacityOption, Change, Comparison, DataUsed, Finding, FindingCode, LowerBound,
    MigConfig, Nodes, PoolPart, RecPool, Recommendation, Stranded, TeamCost, Unsatisfied,
    WorkloadCost,
};

/// What every stage reads: the plan, the catalog in force, the plan's hours a month, and the
/// packings built so far (a merge or quota move asks for a pool many times).
struct Cx<'p, 'c> {
    plan: &'p Plan,
    catalog: &'c Catalog,
    plan_hours: f64,
    cache: BuildCache,
}

/// Pools as the stages pass them: each pool's key and the indices of its members' choices.
type Groups = BTreeMap<PoolKey, Vec<usize>>;

/// The catalog with the plan's own figures in place of the catalog's: a plan that states its
/// DaemonSets' CPU overrides the allowance for it.
fn plan_catalog(plan: &Plan, catalog: &Catalog) -> Option<Catalog> {
    let v = plan.daemonset_cpu()?;
    (v != catalog.assumptions.daemonset_cpu).then(|| Catalog {
        assumptions: crate::catalog::Assumptions {
            daemonset_cpu: v,
            ..catalog.assumptions.clone()
        },
        ..catalog.clone()
    })
}

/// The whole recommendation for a plan, stage by stage.
pub fn recommend(plan: &Plan, catalog: &Catalog) -> Recommendation {
    let own;
    let catalog = match plan_catalog(plan, catalog) {
        Some(c) => {
            own = c;
            &own
        }
        None => catalog,
    };
    let cx = Cx {
        plan,
        catalog,
        plan_hours: plan.hours_per_month(),
        cache: BuildCache::default(),
    };
    let (mut choices, unsatisfied) = first_choices(plan, catalog, cx.plan_hours);
    // The fleet LP over every workload's candidates: the bound the output states, and one
    // more way to choose.
    let lp = bound::FleetLp::new(&choices, plan, catalog, cx.plan_hours);
    cheapest_strategy(&cx, &mut choices, &lp);
    let mut groups = pools_of(&cx, &mut choices);
    merge_pools(&cx, &mut groups, &mut choices);
    move_workloads(&cx, &mut groups, &mut choices);
    rehome_pools(&cx, &mut groups, &mut choices);
    rehome_pairs(&cx, &mut groups, &mut choices);
    let fills = fill::fill_pools(&cx, &mut groups, &mut choices);
    let repair = repair_quota(&cx, &mut groups, &mut choices);
    let (pools, workload_pool) = final_pools(&cx, &groups, &choices, &repair, &fills);
    let mut rec = assemble(&cx, pools, &workload_pool, &choices, unsatisfied);
    rec.lower_bound = lp.bound.map(|b| LowerBound {
        monthly_cost_usd: cents(b.monthly_usd),
        gap: ((rec.total_monthly_cost_usd / b.monthly_usd - 1.0) * 1e4).round() / 1e4,
        optimal: b.solved,
    });
    rec
}

#[cfg(test)]
mod tests;
