//! How spot was judged, and why it is shut, in words.

use crate::core::{num, rate};
use crate::engine::recommend::candidate::SpotNo;
use crate::engine::recommend::demand::SpotClosed;
use crate::engine::recommend::reason::{BandSeen, SpotJudgement, SpotWeighing};

/// Why spot is no option for `workload`.
pub(super) fn spot_no(no: &SpotNo, workload: &str) -> String {
    match no {
        SpotNo::Closed(c) => spot_closed(*c, workload),
        SpotNo::PriceUnknown { sku, region } => format!(
            "spot price of `{sku}` in {region} unknown offline (no dated figure; a live refresh fetches it), so spot is not offered"
        ),
        SpotNo::BandUnknown {
            sku,
            region,
            wins_up_to: Some((label, p)),
        } => format!(
            "the eviction band of `{sku}` in {region} is unknown (refresh live data); spot would win up to band {label} ({}% of nodes a month), not at the worst",
            num(p * 100.0)
        ),
        SpotNo::BandUnknown {
            sku,
            region,
            wins_up_to: None,
        } => format!(
            "the eviction band of `{sku}` in {region} is unknown (refresh live data), and spot loses even at the lowest band"
        ),
    }
}

fn spot_closed(c: SpotClosed, name: &str) -> String {
    match c {
        SpotClosed::UserFacing => format!("`{name}` is user-facing: an interruption is an outage"),
        SpotClosed::NotInterruptible => format!("`{name}` is not `interruptible`"),
        SpotClosed::NoCheckpoint => {
            format!("`{name}` has no `checkpoint_minutes`: an interruption loses all its work")
        }
    }
}

fn band(b: &BandSeen) -> &str {
    match b {
        BandSeen::Known(l) => l,
        BandSeen::Unknown => "unknown",
        BandSeen::JudgedAtWorst => "unknown, judged at the worst band",
    }
}

pub(super) fn judgement(j: &SpotJudgement) -> String {
    match j {
        SpotJudgement::NoPrice => "no spot price".to_owned(),
        SpotJudgement::Weighed(w) => spot_weighed(w),
        SpotJudgement::Stateless {
            effective,
            on_demand,
            break_even,
            band: b,
        } => format!(
            "spot {}/useful hour vs on-demand {} (break-even {break_even:.2}x; band {}; stateless: only the restart is lost)",
            rate(*effective),
            rate(*on_demand),
            band(b)
        ),
        SpotJudgement::Shut { workload, why } => {
            format!("spot not open: {}", spot_no(why, workload))
        }
        SpotJudgement::NotAssessed => "spot not assessed".to_owned(),
    }
}

fn spot_weighed(w: &SpotWeighing) -> String {
    format!(
        "spot waste {:.4}x paid per useful hour vs break-even {:.2}x (on-demand {} / spot {}; band {} = {}% of nodes a month, hazard {:.2e}/node-hour, gang {}, checkpoint {} min, restart {} min{}){}",
        w.waste,
        w.break_even,
        rate(w.on_demand),
        rate(w.spot),
        band(&w.band),
        num(w.monthly_interruption * 100.0),
        w.node_hazard,
        w.gang,
        num(w.checkpoint_minutes),
        num(w.restart_minutes),
        if w.restart_is_default { ", default" } else { "" },
        if w.at_worst_band {
            "; wins even at the worst eviction band"
        } else {
            ""
        }
    )
}
