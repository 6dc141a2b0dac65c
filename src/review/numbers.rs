//! The review's number conventions (rounding, ratios, quantiles) and GPU-second prices.

use serde::Serialize;

use crate::catalog::Catalog;
use crate::engine::recommend::Recommendation;
use crate::plan::Plan;

/// Share of held time in `CrashLoopBackOff` from which a workload's idleness is its crash,
/// not its size: no right-size, no consolidation.
pub(crate) const CRASHLOOP_SHARE: f64 = 0.1;

/// Rounded to a hundredth, without a negative zero.
pub(in crate::review) fn round(x: f64) -> f64 {
    let r = (x * 100.0).round() / 100.0;
    if r == 0.0 {
        0.0
    } else {
        r
    }
}

pub(in crate::review) fn round4(x: f64) -> f64 {
    let r = (x * 10_000.0).round() / 10_000.0;
    if r == 0.0 {
        0.0
    } else {
        r
    }
}

pub(in crate::review) fn ratio(used: f64, alloc: f64) -> Option<f64> {
    (alloc > 0.0).then(|| round4(used / alloc))
}

/// Price of one GPU-second of a declared pool: its node price for its capacity type over its
/// GPUs.
pub(in crate::review) fn pool_gpu_second(
    plan: &Plan,
    catalog: &Catalog,
    pool: &crate::plan::Pool,
) -> Option<f64> {
    let price = crate::engine::cost::pool_hour(catalog, plan.provider(), pool)?;
    let gpus = catalog.sku(plan.provider(), pool.sku.get())?.gpu_count;
    (gpus > 0).then(|| price.usd / f64::from(gpus) / 3600.0)
}

/// Price of one GPU-second for a workload: its declared pool when it runs on one (that is
/// what is paid today), else its recommended pool.
pub(in crate::review) fn gpu_second_price(
    plan: &Plan,
    rec: &Recommendation,
    catalog: &Catalog,
    workload: &str,
) -> Option<f64> {
    if let Some(pool) = plan.workload_pools(workload).next() {
        return pool_gpu_second(plan, catalog, pool);
    }
    rec.pools
        .iter()
        .find(|p| p.workloads.iter().any(|w| w == workload))
        .filter(|p| p.gpus_per_node > 0)
        .map(|p| p.usd_per_node_hour / f64::from(p.gpus_per_node) / 3600.0)
}

/// A value at quantile `q` of `v` (nearest rank; `v` need not be sorted).
pub(in crate::review) fn quantile(v: &[f64], q: f64) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let i = ((q * s.len() as f64).ceil() as usize).clamp(1, s.len()) - 1;
    s[i]
}

/// A series summarised: its 10th, 50th and 95th percentiles and its maximum.
#[derive(Debug, Clone, Copy, Serialize, PartialEq, schemars::JsonSchema)]
pub struct Quantiles {
    pub p10: f64,
    pub p50: f64,
    pub p95: f64,
    pub max: f64,
}

impl Quantiles {
    pub(crate) fn of(v: &[f64]) -> Quantiles {
        Quantiles {
            p10: round(quantile(v, 0.10)),
            p50: round(quantile(v, 0.50)),
            p95: round(quantile(v, 0.95)),
            max: round(v.iter().copied().fold(0.0, f64::max)),
        }
    }
}
