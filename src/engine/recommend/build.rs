//! Building a pool: MIG geometry onto GPUs, replicas onto nodes, and the cache of packings
//! (a merge or quota move asks for the same pool many times).

use super::*;

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
/// member's choice.
pub(super) fn build_key(ms: &[&Choice<'_, '_>], capacity: Capacity, thorough: bool) -> String {
    let mut k = format!("{thorough}|{capacity:?}");
    for m in ms {
        k.push_str(&format!(
            "|{}:{}:{}:{:?}:{}",
            m.d.name, m.c.sku.name, m.c.region, m.c.fit, m.rate.usd
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
            let fixed = f64::from(r.nodes) * rate * HOURS_PER_MONTH;
            (
                fixed + r.on_demand_hours * od,
                fixed + f64::from(n.max - r.nodes) * od * plan_hours,
                // A reserved node is paid whether it runs or not: keep it in the pool.
                n.min.max(r.nodes),
            )
        }
        // At its maximum a spot pool's work still restarts after interruptions: the same
        // paid-per-useful-hour factor as the expected figure.
        Capacity::Spot => (
            rate * waste * (floor_h + burst_h),
            rate * waste * f64::from(n.max) * plan_hours,
            n.min,
        ),
        // A block's nodes are bought together for the shortest length sold that covers the
        // gang's hours, and paid for all of it.
        Capacity::CapacityBlock => {
            let h = crate::engine::cost::block_paid_hours(first.sku.provider, burst_hours);
            block_hours = Some(h);
            let all = rate * f64::from(n.max) * h;
            (all, all, n.min)
        }
        Capacity::OnDemand | Capacity::CapacityReservation => (
            rate * (floor_h + burst_h),
            rate * f64::from(n.max) * plan_hours,
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
            m.d.w.kept_min(),
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

/// The final pools, packed thoroughly, named, and each workload's pool and share of its cost
/// (split by the node-hours each asks for).
/// Each workload's pools (by index: names are final only after `name_pools`) and monthly
/// cost; a workload whose replicas split over several AKS profiles is in more than one.
pub(super) type WorkloadPools = IndexMap<String, (Vec<usize>, f64)>;

pub(super) fn final_pools(
    cx: &Cx<'_, '_>,
    groups: &Groups,
    choices: &[Choice<'_, '_>],
    repaired: &[usize],
) -> (Vec<RecPool>, WorkloadPools) {
    let (plan, catalog, plan_hours, cache) = (cx.plan, cx.catalog, cx.plan_hours, &cx.cache);
    let mut pools = Vec::new();
    let mut families = Vec::with_capacity(groups.len());
    let mut workload_pool = WorkloadPools::new();
    // vCPUs each quota bucket reaches at the fleet's maximum: a cheaper alternative that the
    // bucket could not hold says so.
    let used = super::quota::bucket_use(groups, choices, catalog, plan_hours, cache);
    for (key, members) in groups {
        let ms: Vec<&Choice<'_, '_>> = members.iter().map(|&i| &choices[i]).collect();
        let built = build_cached(cache, &ms, key.3, catalog, plan_hours, true);
        let mut pool = describe(plan, catalog, key, &ms, &built, plan_hours);
        // A pool in a region whose quota is unknown, where another of the plan's regions has a
        // known one, says so: quota repair may have moved work here only because nothing here
        // is known to stop it.
        let (region, family) = super::quota::bucket(ms[0], key.3);
        if plan.known_quota(catalog, &region, &family).is_none()
            && plan
                .regions()
                .any(|r| plan.known_quota(catalog, r, &family).is_some())
        {
            pool.why
                .0
                .push(super::reason::Reason::QuotaUnknown { region, family });
        }
        let tried = super::moves::tried(members, choices);
        pool.considered = alternatives(cx, choices, members, key, &built, tried);
        let own = (
            super::quota::bucket(ms[0], key.3),
            f64::from(built.nodes_max) * f64::from(ms[0].c.sku.vcpus),
        );
        for a in &mut pool.considered {
            let repaired = members.iter().any(|i| repaired.contains(i));
            super::alternatives::why_not(a, plan, catalog, &used, &own, tried, repaired);
        }
        // The same nodes on a cheaper capacity type that a known quota closed (spot has a
        // quota of its own): the why-line names it.
        let closed = pool
            .considered
            .iter()
            .find_map(|a| match &a.note.not_taken {
                Some(super::reason::NotTaken::Quota {
                    family,
                    region,
                    quota,
                    need,
                    ..
                }) if a.sku == pool.sku
                    && a.region == pool.region
                    && a.capacity != pool.capacity
                    && a.delta_usd.is_some_and(|d| d < 0.0) =>
                {
                    Some(super::reason::Reason::QuotaClosed {
                        capacity: a.capacity,
                        family: family.clone(),
                        region: region.clone(),
                        quota: *quota,
                        need: *need,
                        saving_lost: -a.delta_usd.unwrap_or(0.0),
                    })
                }
                _ => None,
            });
        pool.why.0.extend(closed);
        // Split the pool's cost over its workloads by the node-hours each asks for.
        let weights: Vec<f64> = ms
            .iter()
            .map(|m| m.c.node_share * f64::from(m.d.gang.max(1)) * m.d.replica_hours(plan_hours))
            .collect();
        let total_w: f64 = weights.iter().sum();
        for (m, wgt) in ms.iter().zip(&weights) {
            let share = if total_w > 0.0 {
                wgt / total_w
            } else {
                1.0 / ms.len() as f64
            };
            let e = workload_pool
                .entry(m.d.name.to_owned())
                .or_insert((Vec::new(), 0.0));
            if !e.0.contains(&pools.len()) {
                e.0.push(pools.len());
            }
            e.1 += built.cost * share;
        }
        families.push(family_of(key, &ms));
        pools.push(pool);
    }
    name_pools(&mut pools, plan.regions().count() > 1);
    label_families(&mut pools, &families);
    (pools, workload_pool)
}

/// What node sizes of one pool have in common: its key without the SKU, with the GPU model.
type FamilyKey = (Segment, String, String, Capacity, Sharing, FitKey);

/// The pool of several node sizes a pool of one size belongs to, if it may join one: whole
/// GPUs or time-sliced shares (every node of the label must advertise the same resource
/// the same way), on capacity any size can be bought as, with no gang (whose members must
/// start on identical nodes in one placement group). MIG pools never join: a layout is a
/// node size's own, and Karpenter cannot offer MIG instances.
fn family_of(key: &PoolKey, ms: &[&Choice<'_, '_>]) -> Option<FamilyKey> {
    let fit_joins = match &key.5 {
        FitKey::Whole | FitKey::Shared(..) => true,
        FitKey::Mig(_) | FitKey::Server => false,
    };
    let capacity_joins = match key.3 {
        Capacity::OnDemand | Capacity::Spot | Capacity::Reserved1y | Capacity::Reserved3y => true,
        Capacity::CapacityReservation | Capacity::CapacityBlock => false,
    };
    let gang = ms.iter().any(|m| m.d.gang > 1);
    (fit_joins && capacity_joins && !gang).then(|| {
        (
            key.0,
            ms[0].c.gpu.name.clone(),
            key.2.clone(),
            key.3,
            key.4,
            key.5.clone(),
        )
    })
}

/// Each pool's `gpuplan.io/pool` label: the name of the first pool of its family, or its
/// own name.
fn label_families(pools: &mut [RecPool], families: &[Option<FamilyKey>]) {
    let mut first: BTreeMap<&FamilyKey, String> = BTreeMap::new();
    for (p, f) in pools.iter_mut().zip(families) {
        p.pool_label = match f {
            Some(f) => first.entry(f).or_insert_with(|| p.name.clone()).clone(),
            None => p.name.clone(),
        };
    }
}

/// For each workload on a pool whose label spans several node sizes, the sizes the
/// recommendation placed it on: its pods require them, so each shape runs on the size that
/// was chosen and priced for it (Kueue admits it to that size's flavor, Karpenter starts that
/// size for it), and no shape takes a size planned for another.
pub fn node_sizes(pools: &[RecPool]) -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for p in pools {
        if !p.one_of_several_sizes(pools) {
            continue;
        }
        for w in &p.workloads {
            let sizes = out.entry(w.clone()).or_default();
            if !sizes.contains(&p.sku) {
                sizes.push(p.sku.clone());
            }
        }
    }
    out
}
