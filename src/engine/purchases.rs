//! What to buy for a recommendation: the reservations and Capacity Blocks its prices assume.
//! A reserved pool is priced at the reserved rate for `reserved_nodes` nodes, a block pool at
//! the block's price for its length; nobody buys them unless told, and without them the same
//! nodes run at on-demand prices. One line per pool, as finance files it: the offering,
//! platform, tenancy, scope, payment, term, count, hourly and total commitment, and the
//! monthly saving against on-demand, with the price's source and date (render writes
//! `purchases.json` and the README's list from these).

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
    /// What is bought: `reservation` (Reserved Instances, Azure reservations) or
    /// `capacity-block` (EC2 Capacity Blocks for ML). Older files hold reservations only.
    #[serde(default)]
    pub kind: PurchaseKind,
    /// The operating system the price is for, as the provider's purchase names it
    /// (`Linux/UNIX`, EC2's `InstancePlatform`; `Linux` for Azure).
    #[serde(default)]
    pub platform: String,
    /// EC2 tenancy (`default`: shared hardware); Azure reservations have none.
    #[serde(default)]
    pub tenancy: Option<String>,
    /// Where the purchase applies: a regional Reserved Instance (any zone of the region, no
    /// capacity held), an Azure reservation's shared scope, a Capacity Block's one zone.
    #[serde(default)]
    pub scope: String,
    /// How it is paid: the upfront option the price is for.
    #[serde(default)]
    pub payment: String,
    /// Hours the commitment runs: the term (8,760 a year) or the block's length.
    #[serde(default)]
    pub term_hours: f64,
    /// `count` x `usd_per_hour` x `term_hours`: what is committed over the whole term.
    #[serde(default)]
    pub total_commitment_usd: f64,
    /// What buying saves a month against the same nodes on demand; `None` without an
    /// on-demand price.
    #[serde(default)]
    pub monthly_saving_usd: Option<f64>,
}

/// What a purchase line buys.
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum PurchaseKind {
    /// Reserved Instances or an Azure reservation: a rate for a term of years.
    #[default]
    Reservation,
    /// EC2 Capacity Blocks for ML: nodes for a block of days, paid up front.
    CapacityBlock,
}

/// How a reservation is paid, from the offering its price is for: EC2's standard offerings
/// name their upfront option, else the cloud's profile says (an Azure reservation costs the
/// same paid upfront or monthly).
fn payment(provider: crate::core::Provider, offering: Option<&str>) -> String {
    match offering {
        Some(o) if o.contains("all upfront") => {
            "all upfront (the hourly rate is the upfront fee spread over the term)"
        }
        Some(o) if o.contains("partial upfront") => {
            "partial upfront, the rest hourly (the rate shown includes the upfront fee spread over the term)"
        }
        Some(o) if o.contains("no upfront") => "no upfront, hourly over the term",
        _ => crate::cloud::profile(provider).purchase.reservation_payment,
    }
    .to_owned()
}

/// The reservations `rec` assumes, one line per reserved pool with nodes to buy.
pub fn purchases(rec: &Recommendation, catalog: &Catalog) -> Purchases {
    let mut lines = Vec::new();
    let mut extra: f64 = 0.0;
    for p in &rec.pools {
        if let Some(line) = block(p, catalog) {
            extra += line.monthly_saving_usd.unwrap_or(0.0);
            lines.push(line);
            continue;
        }
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
        let offering = reserved.and_then(|r| r.offering.as_deref().map(str::to_owned));
        let term_hours = 8760.0 * f64::from(term);
        lines.push(Purchase {
            pool: p.name.clone(),
            provider: p.provider,
            region: p.region.clone(),
            sku: p.sku.clone(),
            count: p.reserved_nodes,
            term_years: term,
            payment: payment(p.provider, offering.as_deref()),
            offering,
            usd_per_hour: p.usd_per_node_hour,
            monthly_usd: monthly,
            on_demand_usd_per_hour: on_demand,
            price_source: reserved.map_or_else(String::new, |r| r.source.to_string()),
            price_as_of: reserved.and_then(|r| r.as_of).map(|d| d.to_string()),
            kind: PurchaseKind::Reservation,
            platform: platform(p.provider),
            tenancy: tenancy(p.provider),
            scope: crate::cloud::profile(p.provider)
                .purchase
                .reservation_scope
                .to_owned(),
            term_hours,
            total_commitment_usd: crate::core::cents(crate::core::node_hours_usd(
                p.usd_per_node_hour,
                n,
                term_hours,
            )),
            monthly_saving_usd: on_demand
                .map(|od| crate::core::cents(held_month_usd(od - p.usd_per_node_hour, n))),
        });
    }
    lines.sort_by(|a, b| {
        (&a.region, &a.sku, &a.pool, a.kind).cmp(&(&b.region, &b.sku, &b.pool, b.kind))
    });
    Purchases {
        schema: SCHEMA,
        plan: rec.plan.clone(),
        purchases: lines,
        monthly_usd_if_not_bought: crate::core::cents(extra.max(0.0)),
    }
}

/// The operating system the catalog's prices are for, as the cloud's purchase names it.
fn platform(provider: crate::core::Provider) -> String {
    crate::cloud::profile(provider).purchase.platform.to_owned()
}

/// The tenancy of the prices, where the cloud's purchase has one.
fn tenancy(provider: crate::core::Provider) -> Option<String> {
    crate::cloud::profile(provider)
        .purchase
        .tenancy
        .map(str::to_owned)
}

/// A Capacity Block pool as a purchase line: its nodes for the block's length, at the
/// block's price; `None` for other pools and for a block whose price is unknown (offline:
/// nothing priced, nothing listed as if it were).
fn block(p: &crate::engine::recommend::RecPool, catalog: &Catalog) -> Option<Purchase> {
    if !p.capacity.is_block() {
        return None;
    }
    let price = catalog.listed(p.provider, &p.sku, &p.region, Capacity::CapacityBlock)?;
    // Bought for the length sold (an all-month gang's 840 h), though a month pays its 730.
    let hours = p.block_hours?;
    let hours = crate::cloud::profile(p.provider)
        .sold_block(hours)
        .unwrap_or(hours);
    let n = f64::from(p.nodes.max);
    let on_demand = catalog
        .listed(p.provider, &p.sku, &p.region, Capacity::OnDemand)
        .map(|x| x.usd_per_hour);
    let total = crate::core::cents(crate::core::node_hours_usd(price.usd_per_hour, n, hours));
    Some(Purchase {
        pool: p.name.clone(),
        provider: p.provider,
        region: p.region.clone(),
        sku: p.sku.clone(),
        count: p.nodes.max,
        term_years: 0,
        offering: Some(format!("Capacity Block, {} h", crate::core::num(hours))),
        usd_per_hour: price.usd_per_hour,
        monthly_usd: p.monthly_cost_usd,
        on_demand_usd_per_hour: on_demand,
        price_source: price.source.to_string(),
        price_as_of: price.as_of.map(|d| d.to_string()),
        kind: PurchaseKind::CapacityBlock,
        platform: platform(p.provider),
        tenancy: tenancy(p.provider),
        scope: "one availability zone (the offering's)".to_owned(),
        // EC2 `CapacityBlockOffering.upfrontFee`: "the total price to be paid up front".
        payment: "all upfront, at purchase".to_owned(),
        term_hours: hours,
        total_commitment_usd: total,
        // The same node-hours on demand, less the block; a block is bought for hours, not
        // months, so the saving is over the hours it pays in a month.
        monthly_saving_usd: on_demand.map(|od| {
            crate::core::cents(
                crate::core::node_hours_usd(od, n, hours.min(crate::core::HOURS_PER_MONTH))
                    - p.monthly_cost_usd,
            )
        }),
    })
}
