//! Explanation: each pool's why-line, the names of pools, why a workload could not be
//! placed, and the model text `gpuplan explain recommend` prints.

use super::build::Built;
use super::candidate::{Constraint, Detail};
use super::choice::{Choice, PoolKey};
use super::demand::Demand;
use super::reason::Unmet;
use super::types::{CapacityOption, Nodes, RecPool, Stranded, Unsatisfied};
use crate::catalog::Catalog;
use crate::core::Capacity;
use crate::core::{cents, held_month_usd};
use crate::plan::Plan;
use std::collections::BTreeMap;

mod why;
pub(super) use why::why_line;

/// A pool's GPU capacity idle at peak, in whole GPUs (time-sliced shares summed, rounded
/// down).
pub(super) fn idle_gpus(stranded: Option<&Stranded>, ts_replicas: Option<u32>) -> u32 {
    stranded.map_or(0, |s| s.gpu_units) / ts_replicas.unwrap_or(1).max(1)
}

/// Why no SKU fits: the constraint that rejected the candidates that got furthest.
pub(super) fn explain_rejections(
    plan: &Plan,
    d: &Demand<'_>,
    rejections: &[crate::engine::recommend::candidate::Rejection],
) -> Unsatisfied {
    let deepest = rejections.iter().map(|r| r.constraint).max();
    let Some(constraint) = deepest else {
        return Unsatisfied {
            workload: d.name.to_owned(),
            constraint: "catalog",
            message: Unmet::NoSku {
                provider: plan.provider(),
                workload: d.name.to_owned(),
            },
        };
    };
    // Distinct figures; the report words them and shows the first few.
    let mut examples: Vec<Detail> = Vec::new();
    for r in rejections.iter().filter(|r| r.constraint == constraint) {
        if !examples.contains(&r.detail) {
            examples.push(r.detail.clone());
        }
    }
    Unsatisfied {
        workload: d.name.to_owned(),
        constraint: constraint.as_str(),
        message: Unmet::Rejected {
            regions: plan.regions().map(str::to_owned).collect(),
            workload: d.name.to_owned(),
            constraint,
            examples,
        },
    }
}

pub(super) fn describe(
    plan: &Plan,
    catalog: &Catalog,
    key: &PoolKey,
    ms: &[&Choice<'_, '_>],
    b: &Built,
    plan_hours: f64,
) -> RecPool {
    let c = &ms[0].c;
    let mm = ms[0].d.mig_manager;
    let segment = key.0;
    let sharing = key.4;
    let (labels, taints) = super::marks::labels_and_taints(plan.provider(), segment, key.3);
    let gpu_mem_util = b.ts_replicas.map(|n| {
        crate::engine::memory::time_sliced_cap(n, catalog.assumptions.time_slicing_memory_headroom)
    });
    let why = why_line(catalog, ms, b, key, plan_hours, gpu_mem_util);
    let per_node = c.sku.gpu_count;
    let mut capacity_options = Vec::new();
    if ms.iter().any(|m| m.d.w.user_facing()) && b.nodes_min > 0 {
        capacity_options.push(CapacityOption {
            capacity: Capacity::CapacityReservation,
            monthly_cost_usd: cents(held_month_usd(c.on_demand, f64::from(b.nodes_min))),
            note: super::reason::CapacityNote::FloorReserved {
                nodes: b.nodes_min,
                provider: plan.provider(),
            },
        });
    }
    RecPool {
        name: String::new(),
        provider: plan.provider(),
        region: c.region.clone(),
        sku: c.sku.name.clone(),
        gpu_model: c.gpu.name.clone(),
        gpus_per_node: per_node,
        nodes: Nodes {
            min: b.nodes_min,
            max: b.nodes_max,
        },
        capacity: key.3,
        sharing,
        segment,
        mig_layout: b.mig_layout.clone(),
        mig_configs: if b.mig_layout.is_some() {
            Vec::new()
        } else {
            b.mig_configs.clone()
        },
        mig_node_sets: b.mig_node_sets,
        time_slicing_replicas: b.ts_replicas,
        mig_manager: mm,
        gpu_memory_utilization: gpu_mem_util,
        workloads: ms.iter().map(|m| m.d.name.to_owned()).collect(),
        parts: parts_of(ms),
        monthly_cost_usd: cents(b.cost),
        monthly_cost_at_max_usd: cents(b.cost_at_max),
        usd_per_node_hour: b.usd_per_node_hour,
        spot_waste_factor: (key.3.is_evictable()).then(|| (b.waste * 1e6).round() / 1e6),
        gpus: Nodes {
            min: b.nodes_min * per_node,
            max: b.nodes_max * per_node,
        },
        stranded: b.stranded.clone(),
        labels,
        taints,
        why,
        considered: Vec::new(),
        capacity_options,
        reserved_nodes: b.reserved_nodes,
        block_hours: b.block_hours,
        pool_label: String::new(),
    }
}

/// Each member's part of the pool, a workload's parts in it summed.
fn parts_of(ms: &[&Choice<'_, '_>]) -> Vec<super::PoolPart> {
    let mut out: Vec<super::PoolPart> = Vec::new();
    for m in ms {
        let warm = m.d.floor.max(m.d.kept).min(m.d.peak);
        match out.iter_mut().find(|p| p.workload == m.d.name) {
            Some(p) => {
                p.peak += m.d.peak;
                p.warm += warm;
            }
            None => out.push(super::PoolPart {
                workload: m.d.name.to_owned(),
                peak: m.d.peak,
                warm,
            }),
        }
    }
    out
}

/// DNS-1123 names from what a pool is: segment, GPU, sharing, capacity; numbered on clashes.
/// Names depend on the plan, not on the answer: a plan with several regions always gets
/// the region in its pool names, so a change that moves one pool renames no other.
pub(super) fn name_pools(pools: &mut [RecPool], multi_region: bool) {
    let mut seen: BTreeMap<String, u32> = BTreeMap::new();
    for p in pools.iter_mut() {
        let gpu: String = p
            .gpu_model
            .to_ascii_lowercase()
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .collect();
        let mut name = format!("{}-{}-{}", p.segment.as_str(), gpu, p.sharing.as_str());
        if p.capacity.is_evictable() {
            name.push_str("-spot");
        }
        if multi_region {
            name.push('-');
            name.push_str(&p.region);
        }
        let mut name: String = name
            .chars()
            .filter(|c| c.is_ascii_alphanumeric() || *c == '-')
            .collect();
        name.truncate(60);
        let name_trim = name.trim_matches('-').to_owned();
        let n = seen.entry(name_trim.clone()).or_insert(0);
        *n += 1;
        let final_name = if *n > 1 {
            format!("{name_trim}-{n}")
        } else {
            name_trim
        };
        p.name = final_name;
    }
}

/// The constraint names, for documentation and tests.
pub fn constraint_names() -> Vec<&'static str> {
    [
        Constraint::SkuAllowList,
        Constraint::GpuModelAllowList,
        Constraint::Region,
        Constraint::GpusPerNode,
        Constraint::Mig,
        Constraint::GpuMemory,
        Constraint::HostCpu,
        Constraint::HostMemory,
        Constraint::Interconnect,
        Constraint::Quota,
        Constraint::Precision,
        Constraint::Retired,
    ]
    .iter()
    .map(|c| c.as_str())
    .collect()
}
