//! Building a pool: MIG geometry onto GPUs, replicas onto nodes, and the cache of packings
//! (a merge or quota move asks for the same pool many times).

use super::choice::Choice;
use super::nodes::{nodes_for, Packed};
use super::types::{MigConfig, Stranded};
use crate::catalog::Catalog;
use crate::core::Capacity;
use crate::core::{held_month_usd, node_hours_usd};
use indexmap::IndexMap;
/// What a pool comes to once packed.
#[derive(Debug, Clone)]
pub(super) struct Built {
    pub(super) nodes_min: u32,
    pub(super) nodes_max: u32,
    pub(super) cost: f64,
    pub(super) cost_at_max: f64,
    pub(super) usd_per_node_hour: f64,
    pub(super) waste: f64,
    pub(super) mig_layout: Option<IndexMap<String, u32>>,
    pub(super) mig_configs: Vec<MigConfig>,
    /// How many times the nodes `mig_configs` fill are repeated (the availability floor).
    pub(super) mig_node_sets: u32,
    pub(super) ts_replicas: Option<u32>,
    pub(super) stranded: Option<Stranded>,
    /// A reserved pool's nodes' busy hours a month, busiest first (empty for other
    /// capacity): `why` states each node's utilisation against the break-even.
    pub(super) busy: Vec<crate::engine::cost::BusyNode>,
    /// The availability floor when it raised the pool's node count.
    pub(super) availability: Option<u32>,
    /// Nodes bought as reservations (Reserved Instances, Azure reservations): 0 unless the
    /// pool's capacity is reserved.
    pub(super) reserved_nodes: u32,
    /// A Capacity Block's length paid in the month ([`crate::engine::cost::block_paid_hours`]).
    pub(super) block_hours: Option<f64>,
}

/// Per-GPU MIG layouts for `nodes` nodes of `per_node` GPUs: where the packing filled fewer
/// nodes than the pool keeps (its availability floor), the filled nodes' layouts are repeated
/// on the others, so every node can host what the first hosts and a spread one per node
/// finds a place on each.
fn repeat_fillings(configs: Vec<MigConfig>, nodes: u32, per_node: u32) -> (Vec<MigConfig>, u32) {
    let gpus: u32 = configs.iter().map(|c| c.gpus).sum();
    let filled = gpus.div_ceil(per_node).max(1);
    let k = nodes.div_ceil(filled);
    if configs.is_empty() || k <= 1 {
        return (configs, 1);
    }
    let repeated = configs
        .into_iter()
        .map(|c| MigConfig {
            gpus: c.gpus * k,
            ..c
        })
        .collect();
    (repeated, k)
}

/// Packings already computed, by what determines them: the pool and its members' choices.
pub(super) type BuildCache = std::cell::RefCell<std::collections::HashMap<String, Built>>;

/// The cache key of a packing: how thoroughly it is packed, the capacity type, and each
/// member's choice with its replicas (a part of a split workload holds fewer).
pub(super) fn build_key(ms: &[&Choice<'_, '_>], capacity: Capacity, thorough: bool) -> String {
    let mut k = format!("{thorough}|{capacity:?}");
    for m in ms {
        k.push_str(&format!(
            "|{}:{}:{}:{:?}:{}:{}:{}",
            m.d.name, m.c.sku.name, m.c.region, m.c.fit, m.rate.usd, m.d.peak, m.d.floor
        ));
    }
    k
}

/// Thorough builds of these pools that the cache lacks, computed on every core.
pub(super) fn prefetch_thorough(
    cache: &BuildCache,
    jobs: Vec<(Vec<&Choice<'_, '_>>, Capacity)>,
    catalog: &Catalog,
    plan_hours: f64,
) {
    let mut todo: Vec<(String, Vec<&Choice<'_, '_>>, Capacity)> = Vec::new();
    for (ms, capacity) in jobs {
        let key = build_key(&ms, capacity, true);
        if !cache.borrow().contains_key(&key) && todo.iter().all(|t| t.0 != key) {
            todo.push((key, ms, capacity));
        }
    }
    let workers = std::thread::available_parallelism()
        .map_or(1, std::num::NonZeroUsize::get)
        .min(todo.len());
    if workers < 2 {
        return;
    }
    // Largest first, so the last packing to finish is a small one.
    todo.sort_by_key(|t| std::cmp::Reverse(t.1.iter().map(|m| m.d.peak).sum::<u32>()));
    let next = std::sync::atomic::AtomicUsize::new(0);
    let done: Vec<std::sync::Mutex<Option<Built>>> =
        todo.iter().map(|_| std::sync::Mutex::new(None)).collect();
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some((_, ms, capacity)) = todo.get(i) else {
                    break;
                };
                let b = build(ms, *capacity, catalog, plan_hours, true);
                if let Ok(mut slot) = done[i].lock() {
                    *slot = Some(b);
                }
            });
        }
    });
    for ((key, _, _), slot) in todo.into_iter().zip(done) {
        if let Some(b) = slot.into_inner().ok().flatten() {
            cache.borrow_mut().insert(key, b);
        }
    }
}

pub(super) fn build_cached(
    cache: &BuildCache,
    ms: &[&Choice<'_, '_>],
    capacity: Capacity,
    catalog: &Catalog,
    plan_hours: f64,
    thorough: bool,
) -> Built {
    let key = build_key(ms, capacity, thorough);
    if let Some(b) = cache.borrow().get(&key) {
        return b.clone();
    }
    let b = build(ms, capacity, catalog, plan_hours, thorough);
    cache.borrow_mut().insert(key, b.clone());
    b
}

pub(super) fn build(
    ms: &[&Choice<'_, '_>],
    capacity: Capacity,
    catalog: &Catalog,
    plan_hours: f64,
    thorough: bool,
) -> Built {
    let first = &ms[0].c;
    let n = node_counts(ms, catalog, thorough);
    let burst_hours =
        crate::engine::cost::burst_hours(burst_members(ms).map(|b| (b.weight, b.hours)));
    let waste = spot_waste(ms, plan_hours);
    let rate = ms[0].rate.usd;
    let od = first.on_demand;
    let floor_h = f64::from(n.min) * plan_hours;
    let burst_h = f64::from(n.max - n.min) * burst_hours;
    let mut busy = Vec::new();
    let mut reserved_nodes = 0;
    let mut block_hours = None;
    let (cost, cost_at_max, nodes_min) = match capacity {
        Capacity::Reserved1y | Capacity::Reserved3y => {
            // The floor runs all month; each node above it for the hours of the work it
            // carries. Reserve every node that runs past the break-even; the rest on-demand.
            busy = vec![
                crate::engine::cost::BusyNode {
                    hours: plan_hours,
                    steady: true
                };
                n.min as usize
            ];
            busy.extend(crate::engine::cost::burst_profile(
                burst_members(ms),
                n.max - n.min,
            ));
            let r = crate::engine::cost::reserve(&busy, rate, od);
            reserved_nodes = r.nodes;
            let fixed = held_month_usd(rate, f64::from(r.nodes));
            (
                fixed + r.on_demand_hours * od,
                fixed + node_hours_usd(od, f64::from(n.max - r.nodes), plan_hours),
                // A reserved node is paid whether it runs or not: keep it in the pool.
                n.min.max(r.nodes),
            )
        }
        // At its maximum a spot pool's work still restarts after interruptions: the same
        // paid-per-useful-hour factor as the expected figure.
        Capacity::Spot => (
            rate * waste * (floor_h + burst_h),
            node_hours_usd(rate * waste, f64::from(n.max), plan_hours),
            n.min,
        ),
        // A block's nodes are bought together for the shortest length sold that covers the
        // gang's hours, and paid for all of it.
        Capacity::CapacityBlock => {
            // A pool that keeps nodes all month buys a block for the month; one that does
            // not, for the hours of the gangs it carries.
            let covered = if n.min > 0 { plan_hours } else { burst_hours };
            let h = crate::engine::cost::block_paid_hours(first.sku.provider, covered);
            block_hours = Some(h);
            let all = node_hours_usd(rate, f64::from(n.max), h);
            (all, all, n.min)
        }
        Capacity::OnDemand | Capacity::CapacityReservation => (
            rate * (floor_h + burst_h),
            node_hours_usd(rate, f64::from(n.max), plan_hours),
            n.min,
        ),
    };
    let ts = ms.iter().find_map(|m| m.c.fit.shared_replicas());
    Built {
        nodes_min,
        nodes_max: n.max,
        cost,
        // Restarts can make spot work need more node-hours than a month of the maximum.
        cost_at_max: cost_at_max.max(cost),
        usd_per_node_hour: rate,
        waste,
        mig_layout: n.layout,
        mig_configs: n.configs,
        mig_node_sets: n.node_sets,
        ts_replicas: ts,
        availability: n.raised.then_some(n.availability),
        reserved_nodes,
        block_hours,
        stranded: n.stranded,
        busy,
    }
}

/// A pool's node counts at its floor and peak, with the MIG geometry that got them there.
struct Counts {
    min: u32,
    max: u32,
    layout: Option<IndexMap<String, u32>>,
    configs: Vec<MigConfig>,
    node_sets: u32,
    stranded: Option<Stranded>,
    availability: u32,
    /// The availability floor raised the pool above what its work packs into.
    raised: bool,
}

fn node_counts(ms: &[&Choice<'_, '_>], catalog: &Catalog, thorough: bool) -> Counts {
    let first = &ms[0].c;
    // A pool's members share its fit key, and so their MIG manager.
    let mm = ms[0].d.mig_manager;
    let peaks: Vec<u32> = ms.iter().map(|m| m.d.peak).collect();
    let floors: Vec<u32> = ms.iter().map(|m| m.d.floor).collect();
    let Packed {
        nodes: nodes_max,
        layout,
        configs,
        stranded,
    } = nodes_for(ms, &peaks, first.sku, first.gpu, catalog, mm, thorough);
    let nodes_min = if floors == peaks {
        nodes_max
    } else if floors.iter().all(|&f| f == 0) {
        0
    } else {
        nodes_for(ms, &floors, first.sku, first.gpu, catalog, mm, thorough).nodes
    };
    let nodes_min = nodes_min.min(nodes_max);
    // User-facing work keeps its availability floor of nodes, at the floor and the peak:
    // paid every hour, so the cost says what one node failure not being an outage costs.
    let availability = ms.iter().map(|m| m.d.availability).max().unwrap_or(0);
    let raised = availability > nodes_min;
    let packed_max = nodes_max;
    let (min, max) = (nodes_min.max(availability), nodes_max.max(availability));
    let (configs, node_sets) = if max > packed_max {
        repeat_fillings(configs, max, first.sku.gpu_count.max(1))
    } else {
        (configs, 1)
    };
    Counts {
        min,
        max,
        layout,
        configs,
        node_sets,
        stranded,
        availability,
        raised,
    }
}

/// Each member's steady and bursting node weights, with the hours they run.
fn burst_members<'a>(
    ms: &'a [&Choice<'_, '_>],
) -> impl Iterator<Item = crate::engine::cost::BurstMember> + 'a {
    ms.iter().flat_map(|m| {
        crate::engine::cost::BurstMember::replicas(
            m.c.node_share * f64::from(m.d.gang.max(1)),
            m.d.floor,
            m.d.kept,
            m.d.peak,
            m.d.hours,
            m.d.w.peak_duty(),
        )
    })
}

/// Spot waste differs by workload (gang, checkpoints): weighted by the node-hours each asks.
fn spot_waste(ms: &[&Choice<'_, '_>], plan_hours: f64) -> f64 {
    let (mut wsum, mut wtot) = (0.0, 0.0);
    for m in ms {
        let h = m.c.node_share * f64::from(m.d.gang.max(1)) * m.d.replica_hours(plan_hours);
        wsum += m.rate.waste * h;
        wtot += h;
    }
    if wtot > 0.0 {
        wsum / wtot
    } else {
        1.0
    }
}
