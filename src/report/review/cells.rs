//! How the review's tables write a figure: hours, shares, efficiencies.

pub(super) fn hours(gpu_seconds: f64) -> String {
    format!("{:.1}", gpu_seconds / 3600.0)
}

pub(super) fn pct(x: Option<f64>) -> String {
    x.map_or("-".to_owned(), |e| format!("{:.1}%", e * 100.0))
}

/// An efficiency read in part from time-sliced cards, marked for [`SHARED_CARD`].
pub(super) fn card(eff: String, shared: bool) -> String {
    if shared && eff != "-" {
        format!("{eff} (card)")
    } else {
        eff
    }
}

pub(super) const SHARED_CARD: &str = "(card): read in part from time-sliced GPUs, where dcgm-exporter reports one activity per card: the figure is the card's, shared among its pods by allocation, not each pod's own.";

/// Unrequested GPU-hours, with the MIG slices no instance covered named apart.
pub(super) fn unrequested(idle: f64, stranded: f64) -> String {
    if stranded >= 36.0 {
        format!(
            "{} (of which {} in MIG slices no instance covers)",
            hours(idle),
            hours(stranded)
        )
    } else {
        hours(idle)
    }
}
