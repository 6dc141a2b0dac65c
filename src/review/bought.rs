//! The reservations bought, against what ran: `review --purchases purchases.json` reads the
//! list `render` wrote (`gpuplan.purchases/v1`) and, per line, how much of the reserved GPUs
//! the pods on that pool's nodes held over the covered windows. A reservation is paid every
//! hour; below its break-even fill (reserved rate / on-demand rate) on-demand would have cost
//! less.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::assemble::pool_matches;
use super::numbers::{round, round4};
use super::telemetry::Telemetry;
use crate::catalog::Catalog;
use crate::core::node_hours_usd;
use crate::engine::purchases::Purchase;

/// The largest purchase list read: a list of reservations is kilobytes.
const MAX_BYTES: u64 = 4 << 20;

#[derive(Deserialize)]
struct File {
    schema: String,
    purchases: Vec<Purchase>,
}

/// The purchase list at `path`, or why not.
pub(crate) fn read(path: &Path) -> Result<Vec<Purchase>, super::ReviewError> {
    let shown = crate::core::shown(path);
    let bytes = crate::fsio::read_as(path, MAX_BYTES, crate::fsio::Input::RegularOrPipe).map_err(
        |source| super::ReviewError::Read {
            file: shown.clone(),
            source,
        },
    )?;
    let f: File = serde_json::from_slice(&bytes).map_err(|e| super::ReviewError::At {
        file: shown.clone(),
        line: e.line(),
        column: Some(e.column()),
        message: format!(
            "expected the purchase list `gpuplan render` writes (purchases.json): {e}"
        ),
    })?;
    if f.schema != crate::engine::purchases::SCHEMA {
        return Err(super::ReviewError::At {
            file: shown,
            line: 1,
            column: None,
            message: format!(
                "schema `{}`: expected `{}` (the purchases.json `gpuplan render` writes)",
                f.schema,
                crate::engine::purchases::SCHEMA
            ),
        });
    }
    Ok(f.purchases)
}

/// One reservation bought, against what its pool's nodes held.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct PurchaseFill {
    pub pool: String,
    pub region: String,
    pub sku: String,
    pub count: u32,
    pub term_years: u8,
    /// GPUs the reservation covers: its nodes x the SKU's GPUs.
    pub reserved_gpus: f64,
    /// Nodes of the pool seen in the data (its node pool label), most at once.
    pub nodes_seen: u32,
    /// Reserved GPU-seconds over the covered windows, and those pods held (at most the
    /// reserved GPUs in any window).
    pub reserved_gpu_seconds: f64,
    pub held_gpu_seconds: f64,
    pub fill: f64,
    /// Reserved rate / on-demand rate: a fill below it would have cost less on demand.
    pub break_even_fill: Option<f64>,
    /// What the unfilled part cost at the reserved rate over the covered windows.
    pub unfilled_usd: f64,
}

/// Each purchase's fill from the pods on its pool's nodes.
pub(crate) fn fill(t: &Telemetry, catalog: &Catalog, bought: &[Purchase]) -> Vec<PurchaseFill> {
    let step = t.step.max(1) as f64;
    // A Capacity Block is paid for its own days, not the review's window: only reservations
    // are filled over the covered windows.
    bought
        .iter()
        .filter(|b| b.kind == crate::engine::purchases::PurchaseKind::Reservation)
        .map(|b| {
            let per_node = catalog
                .sku(b.provider, &b.sku)
                .map_or(1.0, |s| f64::from(s.gpu_count.max(1)));
            let reserved = f64::from(b.count) * per_node;
            let nodes: Vec<_> = t
                .nodes
                .values()
                .filter(|n| {
                    n.plan_pool.as_deref() == Some(b.pool.as_str())
                        || n.pool.as_deref().is_some_and(|l| pool_matches(l, &b.pool))
                })
                .collect();
            let mut held = 0.0;
            let mut seen: std::collections::BTreeMap<i64, u32> = Default::default();
            for w in &t.covered_windows {
                let gpus: f64 = nodes
                    .iter()
                    .map(|n| n.allocated.get(w).copied().unwrap_or(0.0) / step)
                    .sum();
                held += gpus.min(reserved) * step;
                for n in &nodes {
                    if n.capacity.get(w).is_some_and(|c| *c > 0.0) {
                        *seen.entry(*w).or_default() += 1;
                    }
                }
            }
            let total = reserved * t.covered as f64;
            let fill = if total > 0.0 { held / total } else { 0.0 };
            PurchaseFill {
                pool: b.pool.clone(),
                region: b.region.clone(),
                sku: b.sku.clone(),
                count: b.count,
                term_years: b.term_years,
                reserved_gpus: reserved,
                nodes_seen: seen.values().copied().max().unwrap_or(0),
                reserved_gpu_seconds: round(total),
                held_gpu_seconds: round(held),
                fill: round4(fill),
                break_even_fill: b
                    .on_demand_usd_per_hour
                    .filter(|od| *od > 0.0)
                    .map(|od| round4(b.usd_per_hour / od)),
                unfilled_usd: round(
                    node_hours_usd(
                        b.usd_per_hour,
                        (1.0 - fill).max(0.0) * f64::from(b.count),
                        t.covered as f64,
                    ) / 3600.0,
                ),
            }
        })
        .collect()
}
