//! What to buy for a recommendation: the reservations its prices assume. A reserved pool is
//! priced at the reserved rate for `reserved_nodes` nodes; nobody buys them unless told, and
//! without them the same nodes run at on-demand prices. One line per pool, with the price
//! assumed and the source and date it came from (render writes `purchases.json` and the
//! README's list from these).

use serde::{Deserialize, Serialize};

use crate::catalog::Catalog;
use crate::core::{held_month_usd, Capacity};
use crate::engine::recommend::Recommendation;

pub(crate) const SCHEMA: &str = "gpuplan.purchases/v1";

#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct Purchases {
    pub schema: &'static str,
    pub plan: String,
    pub purchases: Vec<Purchase>,
    /// What the recommendation costs a month more if none of them is bought (the same nodes
    /// at the on-demand rate).
    pub monthly_usd_if_not_bought: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Purchase {
    pub pool: String,
    pub provider: crate::core::Provider,
    pub region: String,
    /// Instance type (AWS) or VM size (Azure).
    pub sku: String,
    pub count: u32,
    /// Reservation term in years.
    pub term_years: u8,
    /// The offering as the price's source names it ("1-year standard, no upfront").
    pub offering: Option<String>,
    /// The effective hourly rate the recommendation assumes, per node.
    pub usd_per_hour: f64,
    pub monthly_usd: f64,
    /// The on-demand rate of the same node: what it costs when not bought.
    pub on_demand_usd_per_hour: Option<f64>,
    pub price_source: String,
    /// The date the source records for the price; `None` when it records none.
    pub price_as_of: Option<String>,
}

/// The reservations `rec` assumes, one line per reserved pool with nodes to buy.
pub fn purchases(rec: &Recommendation, catalog: &Catalog) -> Purchases {
    let mut lines = Vec::new();
    let mut extra: f64 = 0.0;
    for p in &rec.pools {
        let Some(term) = p.capacity.term_years() else {
            continue;
        };
        if p.reserved_nodes == 0 {
            continue;
        }
        let listed = |c| catalog.listed(p.provider, &p.sku, &p.region, c);
        // Only a reserved pool holds reserved nodes: its term's price.
        let reserved = listed(p.capacity);
        let on_demand = listed(Capacity::OnDemand).map(|x| x.usd_per_hour);
        let n = f64::from(p.reserved_nodes);
        let monthly = crate::core::cents(held_month_usd(p.usd_per_node_hour, n));
        if let Some(od) = on_demand {
            extra += held_month_usd(od - p.usd_per_node_hour, n);
        }
        lines.push(Purchase {
            pool: p.name.clone(),
            provider: p.provider,
            region: p.region.clone(),
            sku: p.sku.clone(),
            count: p.reserved_nodes,
            term_years: term,
            offering: reserved.and_then(|r| r.offering.as_deref().map(str::to_owned)),
            usd_per_hour: p.usd_per_node_hour,
            monthly_usd: monthly,
            on_demand_usd_per_hour: on_demand,
            price_source: reserved.map_or_else(String::new, |r| r.source.to_string()),
            price_as_of: reserved.and_then(|r| r.as_of).map(|d| d.to_string()),
        });
    }
    lines.sort_by(|a, b| (&a.region, &a.sku, &a.pool).cmp(&(&b.region, &b.sku, &b.pool)));
    Purchases {
        schema: SCHEMA,
        plan: rec.plan.clone(),
        purchases: lines,
        monthly_usd_if_not_bought: crate::core::cents(extra.max(0.0)),
    }
}
