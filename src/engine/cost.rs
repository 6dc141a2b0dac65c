//! What capacity costs. Every price is looked up through the catalog's `Catalog::listed` (its
//! figure for a (SKU, region, capacity), with its source); [`node_hour`] is what a node-hour of
//! that capacity costs, with a caveat when a stand-in (on-demand) had to be used;
//! [`declared_pool`] is what a declared pool costs a month. `check`, `recommend`, `diff`,
//! `review` and `render` all price through these, and turn rates into costs by
//! `core::node_hours_usd`.

use std::sync::Arc;

use crate::catalog::{Catalog, Sku};
use crate::core::{held_month_usd, node_hours_usd, HOURS_PER_MONTH};
use crate::core::{Capacity, Provider};
use crate::plan::Plan;
use crate::plan::Pool;
pub use caveat::{Caveat, StandIn};

mod caveat;

/// An hourly price for a pool's capacity type, where it came from, and a caveat when it is a
/// stand-in.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct HourlyPrice {
    pub usd: f64,
    pub source: Arc<str>,
    pub caveat: Option<Caveat>,
}

/// Price per node-hour of a SKU in a region for a capacity type. A capacity type the catalog
/// has no figure for is priced at on-demand, and says so in `caveat`.
pub(crate) fn node_hour(
    catalog: &Catalog,
    provider: Provider,
    sku: &str,
    region: &str,
    capacity: Capacity,
) -> Option<HourlyPrice> {
    if let Some(p) = catalog.listed(provider, sku, region, capacity) {
        return Some(HourlyPrice {
            usd: p.usd_per_hour,
            source: Arc::clone(&p.source),
            caveat: None,
        });
    }
    let od = catalog.listed(provider, sku, region, Capacity::OnDemand)?;
    let stand_in = match capacity {
        // Capacity Blocks are priced per block, apart from on-demand rates (source articles);
        // only a refresh (DescribeCapacityBlockOfferings) knows them.
        Capacity::CapacityBlock => StandIn::CapacityBlock,
        Capacity::Spot => StandIn::Spot,
        Capacity::Reserved1y | Capacity::Reserved3y => {
            let cloud = crate::cloud::profile(provider);
            StandIn::Reserved {
                reservation: cloud.reservation,
                live_only: cloud.reservations_live_only(),
            }
        }
        Capacity::OnDemand | Capacity::CapacityReservation => return None,
    };
    Some(HourlyPrice {
        usd: od.usd_per_hour,
        source: Arc::clone(&od.source),
        caveat: Some(Caveat {
            stand_in: Some(stand_in),
            block_hours: None,
        }),
    })
}

/// Price per node-hour of a declared pool: its SKU and region at its capacity type.
pub(crate) fn pool_hour(catalog: &Catalog, provider: Provider, pool: &Pool) -> Option<HourlyPrice> {
    node_hour(
        catalog,
        provider,
        pool.sku.get(),
        pool.region.get(),
        pool.capacity(),
    )
}

/// Hours in a month a pool's nodes are paid for: a Capacity Block for the block's length
/// (`block_hours`), paid whether used or not; any other pool for `hours`.
pub(crate) fn paid_hours(pool: &Pool, hours: f64) -> f64 {
    match pool.capacity() {
        Capacity::CapacityBlock => pool
            .block_hours
            .as_ref()
            .map_or(hours, |h| h.get().min(HOURS_PER_MONTH)),
        Capacity::OnDemand
        | Capacity::Spot
        | Capacity::Reserved1y
        | Capacity::Reserved3y
        | Capacity::CapacityReservation => hours,
    }
}

/// A declared Capacity Block whose block price the catalog does not have (offline: only a
/// refresh reads DescribeCapacityBlockOfferings). Its cost is not the on-demand rate a
/// stand-in would give: what uses one says it is unknown instead.
pub(crate) fn block_price_unknown(plan: &Plan, catalog: &Catalog, pool: &Pool) -> bool {
    price_unknown(
        catalog,
        plan.provider(),
        pool.sku.get(),
        pool.region.get(),
        pool.capacity(),
    )
}

/// Whether a pool of `capacity` on `sku` in `region` has no price of its own to be costed
/// at: a Capacity Block the catalog lists no block price for. `check`, `diff`, `render` and
/// the guardrail ask this one question.
/// How every output says a Capacity Block has no price here, and where one comes from: one
/// wording in `check`, `diff`, `recommend` and `render` (issue 74: six spellings said it).
pub(crate) fn block_price_unknown_said(provider: Provider) -> String {
    format!(
        "Capacity Block price unknown offline (`catalog refresh --provider {}` reads DescribeCapacityBlockOfferings)",
        provider.as_str()
    )
}

pub(crate) fn price_unknown(
    catalog: &Catalog,
    provider: Provider,
    sku: &str,
    region: &str,
    capacity: Capacity,
) -> bool {
    capacity.is_block()
        && catalog
            .listed(provider, sku, region, Capacity::CapacityBlock)
            .is_none()
}

/// What a Capacity Block bought for `hours` of work a month is paid for in that month: the
/// shortest length sold that covers them, at most the month (a longer block's remaining
/// days serve the next month's run); the work's hours where no sold length covers them.
pub(crate) fn block_paid_hours(provider: Provider, hours: f64) -> f64 {
    crate::cloud::profile(provider)
        .sold_block(hours)
        .map_or(hours, |h| h.min(HOURS_PER_MONTH))
}

/// A Capacity Block's paid window in a month, hours: its `block_hours` (at most the month),
/// else the shortest block sold for the work it was bought for, its longest member's
/// `hours_per_month` (the plan's month when none says), and whether the plan stated it.
/// `None` for other pools.
pub(crate) fn block_window(plan: &Plan, pool: &Pool) -> Option<(f64, bool)> {
    if !pool.capacity().is_block() {
        return None;
    }
    let hours = plan.hours_per_month();
    if let Some(h) = &pool.block_hours {
        return Some((h.get().min(HOURS_PER_MONTH), true));
    }
    // A member that states no hours runs the plan's month (`Plan::workload_hours`, the one
    // reading of a workload's hours).
    let longest = plan
        .pool_workloads(pool)
        .map(|w| plan.workload_hours(w))
        .fold(None, |m: Option<f64>, h| {
            Some(m.map_or(h, |m: f64| m.max(h)))
        })
        .unwrap_or(hours);
    Some((block_paid_hours(plan.provider(), longest), false))
}

/// Monthly cost of a declared pool at a node count.
pub(crate) fn pool_month(
    catalog: &Catalog,
    provider: Provider,
    pool: &Pool,
    nodes: i64,
    hours: f64,
) -> Option<(f64, HourlyPrice)> {
    let p = pool_hour(catalog, provider, pool)?;
    Some((
        node_hours_usd(p.usd, nodes.max(0) as f64, paid_hours(pool, hours)),
        p,
    ))
}

/// What a declared pool costs a month.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PoolCost {
    /// The floor all month, nodes above it for the hours of the workloads that need them
    /// ([`burst_hours`]); a Capacity Block all its nodes for the block's hours.
    pub expected: f64,
    /// Every node of `nodes.max` for the paid hours.
    pub at_max: f64,
    pub price: HourlyPrice,
    /// The hours a node above the floor is paid for at most: a block's hours, else the
    /// plan's month (`at_max` = nodes × these hours × the rate, for an unreserved pool).
    pub paid_hours: f64,
    /// The rate of a node above a reservation's floor (on-demand); the pool's own rate for
    /// any other pool.
    pub above_floor_usd: f64,
    /// Paid hours per useful hour on spot (restart waste); 1 elsewhere.
    pub waste: f64,
}

/// The monthly cost of a declared pool, the one formula `check` (GP013, GP017), recommend's
/// comparison, `render --declared` and `diff` use.
pub(crate) fn declared_pool(plan: &Plan, catalog: &Catalog, pool: &Pool) -> Option<PoolCost> {
    let hours = plan.hours_per_month();
    let mut price = pool_hour(catalog, plan.provider(), pool)?;
    let (min, max) = (
        pool.nodes().min().max(0) as f64,
        pool.nodes().max().max(0) as f64,
    );
    // A block with no stated length lasts as long as the work it was bought for: its
    // longest member's `hours_per_month` (the plan's month when none says), and the price
    // says so.
    let mut block_hours = None;
    if let Some((h, false)) = block_window(plan, pool) {
        block_hours = Some(h);
        price.caveat = Some(Caveat {
            stand_in: price.caveat.take().and_then(|c| c.stand_in),
            block_hours: Some(h),
        });
    }
    // Nodes above a reservation's floor are not reserved: they run at the on-demand rate.
    let reserved = pool.capacity().is_reserved();
    let od = if reserved {
        node_hour(
            catalog,
            plan.provider(),
            pool.sku.get(),
            pool.region.get(),
            Capacity::OnDemand,
        )
        .map_or(price.usd, |p| p.usd)
    } else {
        price.usd
    };
    let window = block_hours.unwrap_or_else(|| paid_hours(pool, hours));
    let at_max = if reserved {
        held_month_usd(price.usd, min) + node_hours_usd(od, (max - min).max(0.0), hours)
    } else {
        node_hours_usd(price.usd, max, window)
    };
    // Restart waste is spot's, at its maximum as in the expected figure; a spot pool costed
    // at on-demand (no spot price) has none.
    let waste = if pool.capacity().is_evictable() && price.caveat.is_none() {
        declared_spot_waste(plan, catalog, pool)
    } else {
        1.0
    };
    let at_max = at_max * waste;
    let expected = if pool.capacity().is_block() {
        // A block's instances are bought together: every one is paid for the whole block.
        at_max
    } else {
        // The pool's own floor is its `nodes.min`, whatever its workloads' minimums: the
        // nodes above it carry each member's GPUs at peak, for that member's hours. Each
        // member's GPUs up to what it keeps run its hours, those above, to its peak, their
        // share of them (`typical_replicas`); the floor runs all month and carries the
        // longest-running of them first.
        let floor_gpus = catalog
            .sku(plan.provider(), pool.sku.get())
            .map_or(0.0, |s| min * gpus_per_node(s));
        let mut members: Vec<(f64, f64)> = plan
            .pool_workloads(pool)
            .flat_map(|w| {
                let (peak, hours) = (peak_gpus(w), plan.workload_hours(w));
                let kept = peak_gpus_at(w, i64::from(w.kept_min()));
                [(kept, hours), (peak - kept, hours * w.peak_duty())]
            })
            .collect();
        let burst = burst_hours(above_floor(&mut members, floor_gpus));
        // `max`/`min` rather than `clamp`, which panics should a bad plan ever reach here with
        // min > max.
        let needed = super::holds::peak_nodes(catalog, plan, pool)
            .map_or(0.0, |n| f64::from(n.nodes))
            .max(min)
            .min(max);
        let above = (needed - min).max(0.0) * burst;
        // The reserved floor is paid every hour of the month; nodes above it run on-demand
        // for their hours, as `recommend` prices its own reserved pools.
        let paid = if reserved {
            held_month_usd(price.usd, min) + od * above
        } else {
            price.usd * (min * hours + above)
        };
        paid * waste
    };
    Some(PoolCost {
        expected,
        at_max,
        price,
        paid_hours: if reserved { hours } else { window },
        above_floor_usd: od,
        waste,
    })
}

/// The GPUs a workload holds at its peak: replicas x GPUs each x gang nodes. A declared
/// pool's members are weighed by it, for burst hours and for spot waste alike.
fn peak_gpus(w: &crate::plan::Workload) -> f64 {
    peak_gpus_at(w, w.replicas().max())
}

/// The GPUs `replicas` of a workload hold (counted in gangs, as `Workload::replicas` counts them).
fn peak_gpus_at(w: &crate::plan::Workload, replicas: i64) -> f64 {
    replicas.max(0) as f64 * w.gpu_share() * w.gang().max(1) as f64
}

/// Paid hours per useful hour on a declared spot pool, as `recommend` prices its own spot
/// pools: each member's restart waste (its band, else the worst band; its gang, checkpoint
/// and restart time; stateless work loses only the restart), weighted by the GPU-hours it
/// asks for. 1.0 when nothing is known to weigh.
fn declared_spot_waste(plan: &Plan, catalog: &Catalog, pool: &Pool) -> f64 {
    let worst = crate::engine::spot::worst_band(catalog, plan.provider()).map(|w| w.1);
    let (mut weight, mut weighted) = (0.0, 0.0);
    for w in plan.pool_workloads(pool) {
        let a = crate::engine::spot::assess(
            catalog,
            plan.provider(),
            w,
            pool.sku.get(),
            pool.region.get(),
        );
        let Some(p) = a.monthly_interruption.or(worst) else {
            continue;
        };
        let gang = u32::try_from(w.gang().max(1)).unwrap_or(u32::MAX);
        let e = crate::engine::spot::economics(
            p,
            gang,
            a.checkpoint_minutes.unwrap_or(1.0),
            a.restart_minutes,
        );
        let g = peak_gpus(w) * plan.workload_hours(w);
        if g > 0.0 && e.waste_factor.is_finite() {
            weight += g;
            weighted += g * e.waste_factor;
        }
    }
    if weight > 0.0 {
        weighted / weight
    } else {
        1.0
    }
}

/// The hours a pool's nodes above its floor run a month: each member's hours, weighted by the
/// burst capacity it asks for (`(weight, hours)` per member: its replicas above its floor in
/// nodes or GPUs). Each node-hour is paid once, by the work that needs it: for a pool of one
/// replica per node the burst costs exactly the sum of (replicas above the floor x hours), so
/// ten 30-hour replicas beside one 700-hour replica pay 1,000 node-hours, not 11 x 700.
/// Recommended pools (`build`) and declared pools (`declared_pool`) both use it.
pub(crate) fn burst_hours(members: impl IntoIterator<Item = (f64, f64)>) -> f64 {
    let (mut weight, mut weighted) = (0.0, 0.0);
    for (w, h) in members {
        if w > 0.0 && h.is_finite() {
            weight += w;
            weighted += w * h;
        }
    }
    if weight > 0.0 {
        weighted / weight
    } else {
        0.0
    }
}

/// What runs above a pool's floor: `(weight, hours)` members with the floor's `floor` weight
/// taken from the longest-running first (the floor runs every hour of the month, so it
/// carries the work that runs most).
fn above_floor(members: &mut [(f64, f64)], floor: f64) -> Vec<(f64, f64)> {
    members.sort_by(|a, b| b.1.total_cmp(&a.1));
    let mut left = floor;
    members
        .iter()
        .map(|&(w, h)| {
            let taken = w.min(left).max(0.0);
            left -= taken;
            (w - taken, h)
        })
        .collect()
}

/// One member's share of the nodes above a pool's floor: its weight (replicas above its
/// floor, in nodes or GPUs), the hours they run a month, and whether they run steadily for
/// those hours (minimum replicas) or are a peak (replicas above the minimum, which a
/// reservation never covers: a peak is what on-demand and spot are for).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct BurstMember {
    pub weight: f64,
    pub hours: f64,
    pub steady: bool,
}

/// Replicas that run steadily: what a workload keeps when idle (`min`), at least its pool's
/// floor, never more than its `peak`.
pub(crate) fn steady_replicas(min: u32, floor: u32, peak: u32) -> u32 {
    min.max(floor).min(peak)
}

impl BurstMember {
    /// A workload's replicas above its pool's floor: `floor` of them are kept all month (the
    /// pool's floor, not in the stack); those from there up to `min` (what it keeps when
    /// idle) run its `hours` steadily; those above, to `peak`, are its peak. `per` is what a
    /// replica weighs (its share of a node, or of a GPU). `recommend` and GP023 stack
    /// members by this one rule. The peak runs `duty` of the hours on average (its
    /// `typical_replicas`, [`crate::plan::Workload::peak_duty`]; 1 without one).
    pub(crate) fn replicas(
        per: f64,
        floor: u32,
        min: u32,
        peak: u32,
        hours: f64,
        duty: f64,
    ) -> [Self; 2] {
        let steady = steady_replicas(min, floor, peak);
        [
            BurstMember {
                weight: per * f64::from(steady.saturating_sub(floor)),
                hours,
                steady: true,
            },
            BurstMember {
                weight: per * f64::from(peak.saturating_sub(steady)),
                hours: hours * duty,
                steady: false,
            },
        ]
    }
}

/// One node above a pool's floor: the hours a month it runs, and whether only steady work
/// runs on it (so a reservation may cover it).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct BusyNode {
    pub hours: f64,
    pub steady: bool,
}

impl BusyNode {
    /// Whether a reservation at `reserved` costs less than this node's busy hours at
    /// `on_demand` (by more than a cent, so a tie is not committed to); a node carrying a
    /// peak never is.
    pub(crate) fn worth_reserving(&self, reserved: f64, on_demand: f64) -> bool {
        self.steady && self.hours * on_demand > held_month_usd(reserved, 1.0) + 0.01
    }
}

/// The busy hours of each node above a pool's floor: the members' burst capacity stacked
/// over `nodes` nodes, steady work first and longest-running first within it, each node
/// taking the hours of the work it carries. The profile sums to `nodes` x [`burst_hours`],
/// so reserving some of these nodes and paying the rest on-demand pays each node-hour once.
pub(crate) fn burst_profile(
    members: impl IntoIterator<Item = BurstMember>,
    nodes: u32,
) -> Vec<BusyNode> {
    let mut ms: Vec<BurstMember> = members
        .into_iter()
        .filter(|m| m.weight > 0.0 && m.hours.is_finite())
        .collect();
    let total: f64 = ms.iter().map(|m| m.weight).sum();
    if nodes == 0 || total <= 0.0 {
        return vec![
            BusyNode {
                hours: 0.0,
                steady: false
            };
            nodes as usize
        ];
    }
    ms.sort_by(|a, b| b.steady.cmp(&a.steady).then(b.hours.total_cmp(&a.hours)));
    // Each node carries `total / nodes` of the weight; its hours are the weighted mean of
    // the hours over its slice of the stack.
    let per = total / f64::from(nodes);
    let mut out = Vec::with_capacity(nodes as usize);
    let (mut i, mut left) = (0usize, ms[0].weight);
    for _ in 0..nodes {
        let (mut need, mut acc, mut steady) = (per, 0.0, true);
        while need > 1e-9 * per && i < ms.len() {
            let take = left.min(need);
            acc += take * ms[i].hours;
            steady &= ms[i].steady;
            need -= take;
            left -= take;
            if left <= 1e-9 * per {
                i += 1;
                left = ms.get(i).map_or(0.0, |m| m.weight);
            }
        }
        out.push(BusyNode {
            hours: acc / per,
            steady,
        });
    }
    out
}

/// Which of a pool's nodes a reservation should pay for, and the node-hours left on-demand.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Reserve {
    /// Nodes worth reserving: steady nodes whose busy hours beat the break-even.
    pub nodes: u32,
    /// Node-hours of the nodes not reserved, paid on-demand.
    pub on_demand_hours: f64,
    /// Reserved rate / on-demand rate: the share of the month a node must run for a
    /// reservation (paid every hour of the month) to cost less than on-demand.
    pub break_even: f64,
}

/// Reserve the k-th node when its busy hours exceed the break-even utilisation: a
/// reservation is paid all [`HOURS_PER_MONTH`] hours at `reserved`, on-demand only the busy
/// hours at `on_demand`. `busy` is each node's month (the floor's nodes at the plan's month,
/// then [`burst_profile`]); a node that carries a peak is never reserved. `recommend` sizes
/// its reserved pools by it and GP023 holds a declared reservation to it, so they agree.
pub(crate) fn reserve(busy: &[BusyNode], reserved: f64, on_demand: f64) -> Reserve {
    let break_even = if on_demand > 0.0 {
        reserved / on_demand
    } else {
        f64::INFINITY
    };
    let mut nodes = 0u32;
    let mut on_demand_hours = 0.0;
    for n in busy {
        if n.worth_reserving(reserved, on_demand) {
            nodes += 1;
        } else {
            on_demand_hours += n.hours;
        }
    }
    Reserve {
        nodes,
        on_demand_hours,
        break_even,
    }
}

/// GPUs one node of a SKU provides (partitioned sizes count their share).
pub(crate) fn gpus_per_node(sku: &Sku) -> f64 {
    f64::from(sku.gpu_count) * sku.gpu_partition
}

#[cfg(test)]
mod tests;
