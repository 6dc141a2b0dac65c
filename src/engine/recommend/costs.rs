//! The recommendation assembled: each workload's and team's monthly cost, the findings the
//! fleet raises (budget, quota, unproven MIG packings, idle GPUs), the comparison with the
//! declared pools and the data it rests on.

use super::choice::Choice;
use super::compare::compare;
use super::explain::idle_gpus;
use super::finish::WorkloadPools;
use super::quota::quota_findings;
use super::reason::Said;
use super::types::{
    AlternativeKind, Finding, FindingCode, RecPool, Recommendation, TeamCost, Unsatisfied,
    WorkloadCost,
};
use super::{candidate, Cx};
use crate::catalog::Catalog;
use crate::core::cents;
use crate::plan::Plan;
use indexmap::IndexMap;
use std::collections::BTreeMap;

pub(super) fn assemble(
    cx: &Cx<'_, '_>,
    pools: Vec<RecPool>,
    workload_pool: &WorkloadPools,
    choices: &[Choice<'_, '_>],
    unsatisfied: Vec<Unsatisfied>,
) -> Recommendation {
    let (plan, catalog, plan_hours) = (cx.plan, cx.catalog, cx.plan_hours);
    let mut workloads = Vec::new();
    let mut teams: BTreeMap<String, f64> = BTreeMap::new();
    // Replica-hours per workload, summed over its parts (a workload split over several pools
    // has a choice per part): one pass, not one per workload.
    let mut replica_hours_of: IndexMap<&str, f64> = IndexMap::new();
    for c in choices {
        *replica_hours_of.entry(c.d.name).or_default() += c.d.replica_hours(plan_hours);
    }
    let mut sizes = super::finish::node_sizes(&pools);
    for w in plan.workloads() {
        let (names, cost) = workload_pool
            .get(w.name.get().as_str())
            .map_or((Vec::new(), 0.0), |(ps, c)| {
                (ps.iter().map(|&i| pools[i].name.clone()).collect(), *c)
            });
        let tokens = w.tokens_per_second.as_ref().map(|t| *t.get());
        let replica_hours = replica_hours_of.get(w.name.get().as_str()).copied();
        let per_million = match (tokens, replica_hours) {
            (Some(t), Some(h)) if t > 0.0 && h > 0.0 => Some(cost / (t * 3600.0 * h / 1e6)),
            _ => None,
        }
        .filter(|x| x.is_finite());
        *teams.entry(w.team.get().clone()).or_default() += cost;
        workloads.push(WorkloadCost {
            workload: w.name.get().clone(),
            team: w.team.get().clone(),
            pool: names.first().cloned(),
            also_pools: names.iter().skip(1).cloned().collect(),
            node_sizes: sizes.remove(w.name.get().as_str()).unwrap_or_default(),
            monthly_cost_usd: cents(cost),
            usd_per_million_tokens: per_million.map(|x| (x * 10_000.0).round() / 10_000.0),
        });
    }
    let total: f64 = pools.iter().map(|p| p.monthly_cost_usd).sum();
    // The budget (GP017) is the rule's to judge, at the plan's line, with its help
    // (`rules::settle_recommendation`).
    let mut findings = Vec::new();
    findings.extend(quota_findings(plan, catalog, &pools));
    findings.extend(notes(plan, catalog, &pools));
    let comparison = compare(plan, catalog, &pools, &workloads, &unsatisfied, total);
    Recommendation {
        workloads,
        teams: teams
            .into_iter()
            .map(|(team, c)| TeamCost {
                team,
                monthly_cost_usd: cents(c),
            })
            .collect(),
        unsatisfied,
        comparison,
        findings,
        ..Recommendation::of(plan, catalog, pools)
    }
}

/// The recommender's own notes on its pools: a MIG packing not proven optimal, and a pool
/// whose GPUs idle because its replicas run out of vCPUs or RAM first.
fn notes(plan: &Plan, catalog: &Catalog, pools: &[RecPool]) -> Vec<Finding> {
    let mut findings = Vec::new();
    for p in pools {
        if let Some(s) = &p.stranded {
            if !s.optimal_packing {
                findings.push(Finding {
                    pool: Some(p.name.clone()),
                    ..Finding::new(
                        FindingCode::MigPacking,
                        crate::diag::Severity::Note,
                        Said::PackingNotProven {
                            pool: p.name.clone(),
                            gpus: p.gpus.max,
                            lower_bound: s.packing_lower_bound_gpus.unwrap_or(0),
                        },
                    )
                });
            }
        }
    }
    // A spot gang is re-acquired whole after an interruption (source article: a large
    // homogeneous allocation of a scarce size is hardest to get back exactly then), and
    // nothing here knows whether it can be: said for every spot pool holding a gang.
    for p in pools.iter().filter(|p| p.capacity.is_evictable()) {
        for w in &p.workloads {
            let Some(wl) = plan.workload(w) else { continue };
            let nodes = u32::try_from(wl.gang()).unwrap_or(0);
            if nodes < 2 {
                continue;
            }
            findings.push(Finding {
                pool: Some(p.name.clone()),
                workload: Some(w.clone()),
                ..Finding::new(
                    FindingCode::SpotGang,
                    crate::diag::Severity::Note,
                    Said::SpotGang {
                        pool: p.name.clone(),
                        workload: w.clone(),
                        nodes,
                        sku: p.sku.clone(),
                        region: p.region.clone(),
                        score: catalog.provider(p.provider).and_then(|pc| {
                            pc.spot_placement
                                .get(&(p.gpu_model.clone(), p.region.clone()))
                                .map(|(s, src)| (*s, p.gpu_model.clone(), src.to_string()))
                        }),
                    },
                )
            });
        }
    }
    for p in pools {
        // Pools are named only now; the option was found while they were built.
        if let Some(a) = p
            .considered
            .iter()
            .find(|a| a.kind == AlternativeKind::FewerGpus)
        {
            // What pods may request on one of its nodes, so the claim can be checked.
            let room = catalog
                .sku(plan.provider(), &p.sku)
                .map(|sku| candidate::allocatable(sku, catalog));
            findings.push(Finding {
                pool: Some(p.name.clone()),
                ..Finding::new(
                    FindingCode::IdleGpus,
                    crate::diag::Severity::Note,
                    Said::IdleGpus {
                        pool: p.name.clone(),
                        room,
                        idle: idle_gpus(p.stranded.as_ref(), p.time_slicing_replicas),
                        gpus: p.gpus.max,
                        sku: a.sku.clone(),
                        region: a.region.clone(),
                        option_gpus: a.gpus.unwrap_or(0),
                        more_usd: a.delta_usd.unwrap_or(0.0),
                    },
                )
            });
        }
    }
    findings
}
