//! What capacity costs: the one place a price is looked up. [`listed`] is the catalog's figure
//! for a (SKU, region, capacity) with its source; [`node_hour`] is what a node-hour of that
//! capacity costs, with a caveat when a stand-in (on-demand) had to be used; [`declared_pool`]
//! is what a declared pool costs a month. `check`, `recommend`, `diff`, `review` and `render`
//! all price through these.

use std::sync::Arc;

use crate::catalog::{Catalog, Price, Sku};
use crate::core::HOURS_PER_MONTH;
use crate::plan::raw::{Capacity, Pool, Provider};
use crate::plan::Plan;

/// An hourly price for a pool's capacity type, where it came from, and a caveat when it is a
/// stand-in.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct HourlyPrice {
    pub usd: f64,
    pub source: Arc<str>,
    pub caveat: Option<String>,
}

/// The catalog's own figure for a capacity type, with no stand-in: `None` when the catalog
/// has none (a reservation price offline, a Capacity Block price before a refresh).
pub(crate) fn listed<'c>(
    catalog: &'c Catalog,
    provider: Provider,
    sku: &str,
    region: &str,
    capacity: Capacity,
) -> Option<&'c Price> {
    let prices = catalog.provider(provider)?.price(sku, region)?;
    match capacity {
        Capacity::OnDemand | Capacity::CapacityReservation => prices.on_demand.as_ref(),
        Capacity::Spot => prices.spot.as_ref(),
        Capacity::Reserved1y => prices.reserved_1y.as_ref(),
        Capacity::Reserved3y => prices.reserved_3y.as_ref(),
        Capacity::CapacityBlock => prices.capacity_block.as_ref(),
    }
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
    if let Some(p) = listed(catalog, provider, sku, region, capacity) {
        return Some(HourlyPrice {
            usd: p.usd_per_hour,
            source: Arc::clone(&p.source),
            caveat: None,
        });
    }
    let od = listed(catalog, provider, sku, region, Capacity::OnDemand)?;
    let caveat = match capacity {
        // Capacity Blocks are priced per block, apart from on-demand rates (source articles);
        // only a refresh (DescribeCapacityBlockOfferings) knows them.
        Capacity::CapacityBlock => {
            "no Capacity Block price in the catalog (`catalog refresh --provider aws`); on-demand price used"
        }
        Capacity::Spot => "spot price unknown offline (no dated figure; a live refresh fetches it): costed at on-demand, no saving assumed",
        Capacity::Reserved1y | Capacity::Reserved3y => {
            match provider {
                Provider::Azure => "reserved price unknown (Azure reservations are unknown offline; a live refresh fetches them): costed at on-demand, no saving assumed",
                Provider::Aws => "reserved price unknown (no Reserved Instance for this type and region in the catalog): costed at on-demand, no saving assumed",
            }
        }
        Capacity::OnDemand | Capacity::CapacityReservation => return None,
    };
    Some(HourlyPrice {
        usd: od.usd_per_hour,
        source: Arc::clone(&od.source),
        caveat: Some(caveat.into()),
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
    match (pool.capacity(), &pool.block_hours) {
        (Capacity::CapacityBlock, Some(h)) => h.get().min(HOURS_PER_MONTH),
        _ => hours,
    }
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
    Some((p.usd * nodes.max(0) as f64 * paid_hours(pool, hours), p))
}

/// What a declared pool costs a month.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PoolCost {
    /// The floor all month, nodes above it for the longest `hours_per_month` of its
    /// workloads; a Capacity Block all its nodes for the block's hours.
    pub expected: f64,
    /// Every node of `nodes.max` for the paid hours.
    pub at_max: f64,
    pub price: HourlyPrice,
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
    // A block with no stated length is costed for the plan's month, and the price says so.
    if pool.capacity() == Capacity::CapacityBlock && pool.block_hours.is_none() {
        let unknown = format!(
            "the block's length is not in the plan (`block_hours`): costed for {} hours",
            crate::core::num(hours)
        );
        price.caveat = Some(match price.caveat.take() {
            Some(c) => format!("{c}; {unknown}"),
            None => unknown,
        });
    }
    let at_max = price.usd * max * paid_hours(pool, hours);
    let expected = if pool.capacity() == Capacity::CapacityBlock {
        // A block's instances are bought together: every one is paid for the whole block.
        at_max
    } else {
        let burst_hours = plan
            .pool_workloads(pool)
            .map(|w| {
                w.hours_per_month
                    .as_ref()
                    .map_or(hours, |h| *h.get())
                    .min(hours)
            })
            .fold(0.0, f64::max);
        price.usd * (min * hours + (max - min).max(0.0) * burst_hours)
    };
    Some(PoolCost {
        expected,
        at_max,
        price,
    })
}

/// GPUs one node of a SKU provides (partitioned sizes count their share).
pub(crate) fn gpus_per_node(sku: &Sku) -> f64 {
    f64::from(sku.gpu_count) * sku.gpu_partition
}
