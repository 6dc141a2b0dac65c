//! What the forecast says: per workload and team, what was held, the trend and the proposal.

use serde::Serialize;

use crate::plan::Count;
use crate::review::numbers::{round4, Quantiles};
use crate::review::trend::{Fit, Projection};

/// How the forecast is made: minimum data, headroom and the consolidation target.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Method {
    /// Share added above the projected peak for `replicas.max`.
    pub headroom: f64,
    /// Covered days below which nothing is proposed.
    pub min_days: f64,
    /// Covered days below which no trend is fitted (the level is flat).
    pub min_trend_days: usize,
    /// Busy share per replica a consolidated idle workload is sized to, when the workload
    /// states no `utilization`.
    pub consolidation_target: f64,
    /// Efficiency below which a workload is idle (GP025's threshold).
    pub low_utilization: f64,
    /// Nodes user-facing work keeps at least (`user_facing_min_nodes`): its warm replicas,
    /// one a node, are never proposed below it.
    pub user_facing_min_nodes: u32,
}

/// The least-squares trend of daily peaks.
#[derive(Debug, Clone, Copy, Serialize, PartialEq, schemars::JsonSchema)]
pub struct Trend {
    pub slope_per_day: f64,
    pub r2: f64,
    pub days: usize,
    /// Whether the slope is the forecast (significant at 95% over enough days).
    pub used: bool,
}

pub(super) fn trend(p: &Projection) -> Option<Trend> {
    p.fit.map(|f| Trend {
        slope_per_day: round4(f.slope),
        r2: round4(f.r2),
        days: f.n,
        used: p.trend,
    })
}

/// What `--write-plan` writes for one workload.
#[derive(Debug, Clone, Serialize, PartialEq, schemars::JsonSchema)]
pub struct Proposal {
    pub min: i64,
    pub max: i64,
    /// Written as one integer (a fixed count stays fixed when it was steady).
    pub fixed: bool,
    /// The measured hours, where they differ from the plan's.
    pub hours_per_month: Option<i64>,
    /// What it runs on average over those hours, where it runs below `max` (the plan's
    /// `typical_replicas`): the replicas it held on average (its busy GPUs' worth at the
    /// target when consolidated, what its arrivals needed when serving metrics sized it),
    /// grown as its peak is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub typical_replicas: Option<f64>,
    /// Where `typical_replicas` came from: the measured figure it is, the growth applied
    /// and the bound it was held to, so its comment names what it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub typical: Option<Typical>,
    /// A smaller slice for an idle workload: its `gpu_fraction` and `sharing`.
    pub gpu_fraction: Option<f64>,
    pub sharing: Option<crate::core::Sharing>,
    /// The GPU model its serving capacity was measured on, where the plan let it run on
    /// others: written as its `gpu_models`, since the replicas sized there are that GPU's
    /// (its KV cache and speed), not another's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_models: Option<String>,
    /// How `max` was sized.
    pub basis: Basis,
}

/// A `typical_replicas` and the figures it is: `measured` x `growth`, within the proposal's
/// `min` and `max` (`bounded` where it was held to one).
#[derive(Debug, Clone, Copy, Serialize, PartialEq, schemars::JsonSchema)]
pub struct Typical {
    pub value: f64,
    /// What was measured: the replicas it held on average over its running hours, or where
    /// it is consolidated, its busy GPUs' worth at the target.
    pub measured: f64,
    pub of: TypicalOf,
    /// The growth of the projection that decided `max` (its projected peak over the peak
    /// seen); 1 without a trend.
    pub growth: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bounded: Option<i64>,
}

/// What a `typical_replicas` measures.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum TypicalOf {
    /// Replicas held on average over its running hours: hours x this is what ran.
    Held,
    /// Its GPUs busy on average, in replicas busy at `target`: fewer replicas, each busier.
    BusyAtTarget { target: f64 },
}

/// How a proposal's replicas were sized.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Basis {
    /// The held peak's significant trend to the horizon, plus headroom.
    Trend,
    /// The held peak as seen (no significant trend), plus headroom.
    Flat,
    /// Busy below the idle threshold: never grown.
    Idle,
    /// Fewer replicas, each busy at the target share.
    Consolidated,
    /// The replicas vLLM serving metrics say each hour needed.
    Serving,
    /// Serving metrics missed the objective every hour: never sized down.
    Saturated,
}

impl Basis {
    pub fn as_str(self) -> &'static str {
        match self {
            Basis::Trend => "trend",
            Basis::Flat => "flat",
            Basis::Idle => "idle",
            Basis::Consolidated => "consolidated",
            Basis::Serving => "serving",
            Basis::Saturated => "saturated",
        }
    }
}

impl Proposal {
    /// Its `replicas` as the plan writes them: one integer when fixed.
    pub fn count(&self) -> Count {
        if self.fixed {
            Count::Fixed(self.max)
        } else {
            Count::Range {
                min: self.min,
                max: self.max,
            }
        }
    }
}

#[derive(Debug, Clone, Serialize, PartialEq, schemars::JsonSchema)]
pub struct WorkloadForecast {
    pub workload: String,
    pub team: String,
    /// GPUs (physical-GPU shares) and replicas held over the covered windows it ran.
    pub gpus_held: Quantiles,
    pub replicas_held: Quantiles,
    /// Replicas held on average over the hours it ran.
    pub replicas_mean: f64,
    /// Measured running hours per month (the share of covered windows it held GPUs).
    pub hours_per_month: f64,
    /// Of daily peak replicas.
    pub trend: Option<Trend>,
    /// Peak replicas at the horizon, with the 95% band: of replicas held, or of replicas
    /// needed where serving metrics sized the workload (`proposed.basis` `serving`).
    pub projected_replicas: f64,
    pub band_low: f64,
    pub band_high: f64,
    /// The held replicas' projected peak, whichever projection is shown: a team's GPUs are
    /// projected from what was held, and a service serving metrics sized adds what its need
    /// exceeds this by.
    #[serde(skip)]
    pub held_center: f64,
    /// Today's `replicas` as written, e.g. `{ min = 2, max = 6 }`.
    pub current: String,
    pub proposed: Proposal,
    /// Used when the right-size is not taken (check would refuse it): the consolidated count.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub without_right_size: Option<Proposal>,
    /// The figures behind it, in one line (the TOML comment `--write-plan` writes).
    #[schemars(with = "String")]
    pub figures: super::grounds::Grounds,
    /// The slice a right-size takes, when the proposal right-sizes.
    #[serde(skip)]
    pub right_size: Option<crate::review::says::Slice>,
    /// What `--write-plan` wrote of it, where this run wrote a plan: `proposed` is then what
    /// the written plan says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub written: Option<Written>,
    /// The forecast's proposal where the written plan did not take it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_written: Option<Proposal>,
}

/// What `review --write-plan` wrote of a workload's proposal in this run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Written {
    /// As proposed.
    AsProposed,
    /// Without its right-size, which `check` refused: the count without it.
    WithoutRightSize,
    /// Its replicas as written: its pools cannot grow to hold the proposal, or span regions
    /// the data did not cover (the run's warnings say which).
    #[serde(rename = "left_as_written")]
    Unchanged,
}

#[derive(Debug, Clone, Serialize, PartialEq, schemars::JsonSchema)]
pub struct TeamForecast {
    pub team: String,
    /// The highest daily peak of GPUs held in the window.
    pub peak_gpus: f64,
    pub trend: Option<Trend>,
    /// GPUs at the horizon, with the 95% band.
    pub projected_gpus: f64,
    pub band_low: f64,
    pub band_high: f64,
    /// GPUs its services need above what they held, where serving metrics sized them: added
    /// to the projection of GPUs held, so the team's figure and its workloads' agree.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub serving_added_gpus: Option<f64>,
    /// Daily peaks (day since 1970, GPUs), for the chart.
    #[serde(skip)]
    pub daily: Vec<(i64, f64)>,
    #[serde(skip)]
    pub fit: Option<Fit>,
    #[serde(skip)]
    pub first_day: i64,
}

/// Why nothing is proposed: the data covers `covered_days`, fewer than `min_days`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Withheld {
    pub covered_days: f64,
    pub min_days: f64,
}

#[derive(Debug, Clone, Serialize, PartialEq, schemars::JsonSchema)]
pub struct NextQuarter {
    /// The quarter planned for, e.g. `2027-Q1`, and its end.
    pub quarter: String,
    pub horizon: String,
    #[serde(skip)]
    pub horizon_t: i64,
    /// Days from the end of the data to the horizon.
    pub horizon_days: f64,
    pub covered_days: f64,
    pub headroom: f64,
    /// Why nothing is proposed (too little data), when so.
    #[schemars(with = "Option<String>")]
    pub withheld: Option<Withheld>,
    pub workloads: Vec<WorkloadForecast>,
    pub teams: Vec<TeamForecast>,
    /// Plan workloads with no GPU held in the window: left as they are.
    pub without_data: Vec<String>,
}

/// A count as the plan writes it: `3`, or `{ min = 1, max = 6 }`.
pub(crate) fn count(c: Count) -> String {
    match c {
        Count::Fixed(n) => n.to_string(),
        Count::Range { min, max } => format!("{{ min = {min}, max = {max} }}"),
    }
}
