//! Next quarter from the measured window: per workload, the GPUs and replicas it held
//! (p10, p50, p95, max over the covered windows it ran), a least-squares trend of its daily
//! peaks, and the peak projected to the end of next quarter with a prediction band; from
//! those, the `replicas` and `hours_per_month` `review --write-plan` proposes. The method is
//! stated in `gpuplan explain review`; its figures are in `providers/assumptions.toml`
//! `[review]`.

pub(crate) mod grounds;
mod series;
#[cfg(test)]
mod tests;
mod types;
mod workload;

use std::collections::BTreeMap;

use super::numbers::round;
use super::rows::RightSize;
use super::rows::WorkloadRow;
use super::telemetry::Telemetry;
use super::trend::next_quarter;
use crate::plan::Plan;
use series::{held_series, team_forecast, Axis};
pub(crate) use types::count;
pub use types::Method;
pub(crate) use types::{
    Basis, NextQuarter, Proposal, Trend, Typical, TypicalOf, Withheld, WorkloadForecast, Written,
};
use workload::{workload_forecast, Cx};

pub(crate) fn forecast(
    plan: &Plan,
    t: &Telemetry,
    rows: &[WorkloadRow],
    right_sizes: &BTreeMap<String, RightSize>,
    serving: &[crate::review::serving::ServingRow],
    m: &Method,
) -> NextQuarter {
    let end = t.data_to.unwrap_or(t.to);
    // The data's end is exclusive: a review that ends on 1 January reviewed the fourth quarter
    // and plans the first.
    let (quarter, horizon_t) = next_quarter(end - 1);
    let covered_days = t.covered as f64 / 86_400.0;
    let mut nq = NextQuarter {
        quarter,
        horizon: crate::review::telemetry::format_time(horizon_t),
        horizon_t,
        horizon_days: round((horizon_t - end) as f64 / 86_400.0),
        covered_days: round(covered_days),
        headroom: m.headroom,
        withheld: None,
        workloads: Vec::new(),
        teams: Vec::new(),
        without_data: Vec::new(),
    };
    if covered_days < m.min_days {
        nq.withheld = Some(Withheld {
            covered_days,
            min_days: m.min_days,
        });
        return nq;
    }
    let (by_workload, by_team) = held_series(plan, t);
    let axis = Axis::of(t, end, horizon_t);
    nq.teams = by_team
        .iter()
        .map(|(team, v)| team_forecast(t, team, v, &axis, m))
        .collect();
    let cx = Cx {
        plan,
        t,
        rows,
        right_sizes,
        serving,
        m,
        axis,
        quarter: &nq.quarter,
        covered_days,
    };
    let mut workloads = Vec::new();
    let mut without_data = Vec::new();
    for w in plan.workloads() {
        let name = w.name.get();
        match by_workload
            .get(name.as_str())
            .and_then(|s| workload_forecast(&cx, w, s))
        {
            Some(f) => workloads.push(f),
            None => without_data.push(name.clone()),
        }
    }
    // A team's GPUs are projected from what it held; a service sized by serving metrics
    // needs what its arrivals say, so what that exceeds its held projection by is added (a
    // team whose one service goes 1 -> 10 replicas was projected at 1 GPU).
    for team in &mut nq.teams {
        let added: f64 = workloads
            .iter()
            .filter(|f| f.team == team.team && f.proposed.basis == Basis::Serving)
            .filter_map(|f| {
                let w = plan.workload(&f.workload)?;
                let per = w.gpu_share() * w.gang().max(1) as f64;
                Some((f.projected_replicas - f.held_center).max(0.0) * per)
            })
            .sum();
        if added > 0.005 {
            team.projected_gpus = round(team.projected_gpus + added);
            team.band_low = round(team.band_low + added);
            team.band_high = round(team.band_high + added);
            team.serving_added_gpus = Some(round(added));
            // The chart draws the level the figure is, not the held trend without it.
            team.fit = None;
        }
    }
    nq.workloads = workloads;
    nq.without_data = without_data;
    nq
}
