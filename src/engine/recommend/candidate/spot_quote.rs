//! What spot costs a workload on one SKU and region, or why it is no option there.

use crate::catalog::{Catalog, Sku};
use crate::engine::recommend::demand::Demand;
use crate::engine::spot;
use crate::plan::Plan;

/// Why spot is no option for a workload on a SKU and region: closed to the workload, or a
/// fact of the SKU and region.
#[derive(Debug, Clone, PartialEq)]
pub enum SpotNo {
    Closed(crate::engine::recommend::demand::SpotClosed),
    /// No dated spot price.
    PriceUnknown {
        sku: String,
        region: String,
    },
    /// The eviction band is unknown and spot loses at the worst band; the band (label and
    /// monthly interruption) up to which it would win, if any.
    BandUnknown {
        sku: String,
        region: String,
        wins_up_to: Option<(String, f64)>,
    },
}

/// Spot for one workload on one SKU and region, or why it is not an option.
#[derive(Debug, Clone)]
pub struct SpotQuote {
    pub assessment: spot::Assessment,
    /// Expected spot cost per useful node-hour (price x waste), when known; else why not.
    pub effective: Result<f64, SpotNo>,
    /// The band is unknown and spot was judged at the worst band (and still wins).
    pub at_worst_band: bool,
}

pub(super) fn spot_quote(
    catalog: &Catalog,
    plan: &Plan,
    d: &Demand<'_>,
    sku: &Sku,
    region: &str,
    has_price: bool,
) -> SpotQuote {
    let mut assessment = spot::assess(catalog, plan.provider(), d.w, &sku.name, region);
    let mut at_worst_band = false;
    let effective = if let Some(why) = d.spot_closed {
        Err(SpotNo::Closed(why))
    } else if !has_price {
        Err(spot_unknown(sku, region))
    } else {
        match (assessment.spot, assessment.monthly_interruption) {
            (Some(price), Some(p)) => {
                // Stateless work loses only the restart; checkpointed work also the part of
                // an interval since the last checkpoint.
                let c = d.checkpoint_minutes.unwrap_or(1.0);
                let e = spot::economics(p, d.gang, c, assessment.restart_minutes);
                Ok(price * e.waste_factor)
            }
            (Some(price), None) => {
                // Unknown band: judge spot at the worst band. If it still wins it is safe to
                // take; otherwise say from which band on it would.
                let c = d.checkpoint_minutes.unwrap_or(1.0);
                let bands = &catalog.assumptions.band_monthly_interruption;
                let waste_at = |p: f64| spot::economics(p, d.gang, c, assessment.restart_minutes);
                let be = assessment.break_even.unwrap_or(0.0);
                let worst = spot::worst_band(catalog, plan.provider());
                match worst {
                    Some((_, w)) if waste_at(w).waste_factor <= be => {
                        let e = waste_at(w);
                        assessment.monthly_interruption = Some(w);
                        assessment.economics = Some(e);
                        at_worst_band = true;
                        Ok(price * e.waste_factor)
                    }
                    _ => {
                        let label =
                            |b: &(u8, String, String, f64)| spot::band_label(b, plan.provider());
                        let wins_up_to = bands
                            .iter()
                            .filter(|b| waste_at(b.3).waste_factor <= be)
                            .max_by(|a, b| a.3.total_cmp(&b.3));
                        Err(SpotNo::BandUnknown {
                            sku: sku.name.clone(),
                            region: region.to_owned(),
                            wins_up_to: wins_up_to.map(|b| (label(b), b.3)),
                        })
                    }
                }
            }
            (None, _) => Err(spot_unknown(sku, region)),
        }
    };
    SpotQuote {
        assessment,
        effective,
        at_worst_band,
    }
}

/// Spot is not offered where the catalog has no dated spot price: an undated figure is not
/// used, so spot is unknown offline rather than guessed, and not proposed (a saving that
/// rests on no price is not a decision a person can check).
fn spot_unknown(sku: &Sku, region: &str) -> SpotNo {
    SpotNo::PriceUnknown {
        sku: sku.name.clone(),
        region: region.to_owned(),
    }
}
