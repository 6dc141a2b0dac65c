//! What capacity costs per hour and per month, with where the price came from.

use crate::catalog::{Catalog, Sku};
use crate::plan::raw::{Capacity, Pool, Provider};

/// An hourly price for a pool's capacity type, and a caveat when it is a stand-in.
#[derive(Debug, Clone, PartialEq)]
pub struct HourlyPrice {
    pub usd: f64,
    pub caveat: Option<String>,
}

/// Price per node-hour of a SKU in a region for a capacity type.
pub fn node_hour(
    catalog: &Catalog,
    provider: Provider,
    sku: &str,
    region: &str,
    capacity: Capacity,
) -> Option<HourlyPrice> {
    let prices = catalog.provider(provider)?.price(sku, region)?;
    let od = prices.on_demand.as_ref().map(|p| p.usd_per_hour);
    match capacity {
        Capacity::OnDemand | Capacity::CapacityReservation => {
            od.map(|usd| HourlyPrice { usd, caveat: None })
        }
        // Capacity Blocks are priced per block, apart from on-demand rates (source articles);
        // only a refresh (DescribeCapacityBlockOfferings) knows them.
        Capacity::CapacityBlock => match &prices.capacity_block {
            Some(p) => Some(HourlyPrice {
                usd: p.usd_per_hour,
                caveat: None,
            }),
            None => od.map(|usd| HourlyPrice {
                usd,
                caveat: Some(
                    "no Capacity Block price in the catalog (`catalog refresh --provider aws`); on-demand price used"
                        .into(),
                ),
            }),
        },
        Capacity::Spot => match &prices.spot {
            Some(p) => Some(HourlyPrice {
                usd: p.usd_per_hour,
                caveat: None,
            }),
            None => od.map(|usd| HourlyPrice {
                usd,
                caveat: Some("no spot price in the catalog; on-demand price used".into()),
            }),
        },
        Capacity::Reserved1y | Capacity::Reserved3y => {
            let r = if capacity == Capacity::Reserved1y {
                &prices.reserved_1y
            } else {
                &prices.reserved_3y
            };
            match r {
                Some(p) => Some(HourlyPrice {
                    usd: p.usd_per_hour,
                    caveat: None,
                }),
                None => od.map(|usd| {
                    HourlyPrice {
                    usd,
                    caveat: Some(
                        "no reserved price in the catalog (refresh live data); on-demand price used"
                            .into(),
                    ),
                }
                }),
            }
        }
    }
}

/// Monthly cost of a declared pool at a node count.
pub fn pool_month(
    catalog: &Catalog,
    provider: Provider,
    pool: &Pool,
    nodes: i64,
    hours: f64,
) -> Option<(f64, HourlyPrice)> {
    let p = node_hour(
        catalog,
        provider,
        pool.sku.get(),
        pool.region.get(),
        pool.capacity(),
    )?;
    Some((p.usd * nodes.max(0) as f64 * hours, p))
}

/// GPUs one node of a SKU provides (partitioned sizes count their share).
pub fn gpus_per_node(sku: &Sku) -> f64 {
    f64::from(sku.gpu_count) * sku.gpu_partition
}

pub use crate::core::{rate, usd};
