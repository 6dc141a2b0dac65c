//! The spot model: how much compute interruptions waste, against what spot saves.
//!
//! Assumptions (stated in `gpuplan explain GP009` and in findings):
//! - each node is interrupted as a Poisson process whose rate follows from the band's monthly
//!   interruption probability `p`: `h = -ln(1 - p) / 730` per node-hour (band values in
//!   `providers/assumptions.toml`);
//! - a gang of `n` nodes dies when any node goes, so its rate is `n * h`;
//! - work since the last checkpoint is lost and the job needs `R` hours to be back at work, and
//!   nodes are paid all the while (the surviving nodes wait for the replacement);
//! - expected wall time per checkpoint interval `C` is `e^{λR} (e^{λC} - 1) / λ` (the standard
//!   result for exponential failures with restart, also failing during restart), so the useful
//!   fraction is `C / E[T]`.
//!
//! Spot wins while `1 / useful_fraction < on_demand / spot`: the break-even waste.

/// What spot interruptions do to one workload.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SpotEconomics {
    /// Interruptions per node-hour.
    pub node_hazard: f64,
    /// Interruptions per hour of the whole gang.
    pub gang_hazard: f64,
    /// Share of paid time that is useful work.
    pub useful_fraction: f64,
    /// Paid hours per useful hour (1 / useful fraction).
    pub waste_factor: f64,
}

use crate::core::HOURS_PER_MONTH;

/// A node's interruption rate per hour, from the probability `p` that it is interrupted in a
/// month: `h = -ln(1 - p) / 730`.
pub(crate) fn node_hazard(monthly_interruption: f64) -> f64 {
    -(1.0 - monthly_interruption.clamp(0.0, 0.999_999)).ln() / HOURS_PER_MONTH
}

pub(crate) fn economics(
    monthly_interruption: f64,
    gang: u32,
    checkpoint_minutes: f64,
    restart_minutes: f64,
) -> SpotEconomics {
    let p = monthly_interruption.clamp(0.0, 0.999_999);
    let node_hazard = node_hazard(p);
    let lambda = node_hazard * f64::from(gang.max(1));
    let c = checkpoint_minutes.max(0.0) / 60.0;
    let r = restart_minutes.max(0.0) / 60.0;
    let useful_fraction = if lambda <= 0.0 || c <= 0.0 {
        1.0
    } else {
        let expected = (lambda * r).exp() * (lambda * c).exp_m1() / lambda;
        (c / expected).clamp(0.0, 1.0)
    };
    SpotEconomics {
        node_hazard,
        gang_hazard: lambda,
        useful_fraction,
        waste_factor: if useful_fraction > 0.0 {
            1.0 / useful_fraction
        } else {
            f64::INFINITY
        },
    }
}

/// Default restart time: `acquire * (1 + log2(nodes)) + pull + load` minutes.
pub(crate) fn default_restart_minutes(gang: u32, acquire: f64, pull: f64, load: f64) -> f64 {
    acquire * (1.0 + f64::from(gang.max(1)).log2()) + pull + load
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_checkpoint_loss_without_interruptions() {
        let e = economics(0.0, 8, 60.0, 30.0);
        assert!((e.useful_fraction - 1.0).abs() < 1e-12);
    }

    #[test]
    fn waste_grows_with_gang_size() {
        let one = economics(0.10, 1, 60.0, 30.0);
        let many = economics(0.10, 64, 60.0, 30.0);
        assert!(many.waste_factor > one.waste_factor);
        assert!((many.gang_hazard / one.gang_hazard - 64.0).abs() < 1e-9);
    }

    #[test]
    fn small_hazard_matches_first_order_estimate() {
        // λ(C/2 + R) for small λ: 1 node, 2.5%/month, C = 30 min, R = 35 min
        let e = economics(0.025, 1, 30.0, 35.0);
        let lambda = -(0.975f64).ln() / 730.0;
        let first_order = 1.0 + lambda * (0.25 + 35.0 / 60.0);
        assert!((e.waste_factor - first_order).abs() < 1e-5);
    }

    #[test]
    fn default_restart_grows_with_log_of_gang() {
        assert_eq!(default_restart_minutes(1, 10.0, 20.0, 5.0), 35.0);
        assert_eq!(default_restart_minutes(64, 10.0, 20.0, 5.0), 95.0);
    }
}

/// Spot against on-demand for one workload on one SKU in one region.
#[derive(Debug, Clone)]
pub struct Assessment {
    pub band: Option<crate::catalog::SpotBand>,
    pub monthly_interruption: Option<f64>,
    pub restart_minutes: f64,
    pub restart_is_default: bool,
    pub checkpoint_minutes: Option<f64>,
    pub on_demand: Option<f64>,
    pub spot: Option<f64>,
    /// On-demand / spot: how many paid hours per useful hour spot can afford.
    pub break_even: Option<f64>,
    pub economics: Option<SpotEconomics>,
}

pub(crate) fn restart_minutes(
    w: &crate::plan::Workload,
    catalog: &crate::catalog::Catalog,
) -> (f64, bool) {
    match &w.restart_minutes {
        Some(r) => (*r.get(), false),
        None => {
            let a = &catalog.assumptions;
            let gang = u32::try_from(w.gang()).unwrap_or(u32::MAX);
            (
                default_restart_minutes(
                    gang,
                    a.node_acquire_minutes,
                    a.image_pull_minutes,
                    a.weight_load_minutes,
                ),
                true,
            )
        }
    }
}

pub(crate) fn assess(
    catalog: &crate::catalog::Catalog,
    provider: crate::core::Provider,
    w: &crate::plan::Workload,
    sku: &str,
    region: &str,
) -> Assessment {
    let pc = catalog.provider(provider);
    let listed = |c| {
        catalog
            .listed(provider, sku, region, c)
            .map(|p| p.usd_per_hour)
    };
    let on_demand = listed(crate::core::Capacity::OnDemand);
    let spot = listed(crate::core::Capacity::Spot);
    let band = pc.and_then(|p| p.band(sku, region)).cloned();
    let monthly_interruption = band
        .as_ref()
        .and_then(|b| catalog.band_interruption(b.index));
    let (restart, is_default) = restart_minutes(w, catalog);
    let checkpoint = w.checkpoint_minutes.as_ref().map(|c| *c.get());
    let gang = u32::try_from(w.gang()).unwrap_or(u32::MAX);
    let economics = match (monthly_interruption, checkpoint) {
        (Some(p), Some(c)) => Some(economics(p, gang, c, restart)),
        _ => None,
    };
    Assessment {
        band,
        monthly_interruption,
        restart_minutes: restart,
        restart_is_default: is_default,
        checkpoint_minutes: checkpoint,
        on_demand,
        spot,
        break_even: match (on_demand, spot) {
            (Some(o), Some(s)) if s > 0.0 => Some(o / s),
            _ => None,
        },
        economics,
    }
}

/// The one figure both `recommend` and GP009 judge spot by when a band is unknown: the
/// highest monthly interruption the catalog assumes for any band (20%+: 30% of nodes a month),
/// with that band's label for the provider. Spot that wins even there is safe to take.
pub(crate) fn worst_band(
    catalog: &crate::catalog::Catalog,
    provider: crate::core::Provider,
) -> Option<(String, f64)> {
    catalog
        .assumptions
        .band_monthly_interruption
        .iter()
        .max_by(|a, b| a.3.total_cmp(&b.3))
        .map(|b| (band_label(b, provider), b.3))
}

/// A band's name as the provider spells it (AWS `>20%`, Azure `20+`), from an assumptions row
/// `(index, AWS label, Azure label, monthly interruption)`.
pub(crate) fn band_label(b: &crate::cloud::BandRow, provider: crate::core::Provider) -> String {
    (crate::cloud::profile(provider).band_label)(b).to_owned()
}
