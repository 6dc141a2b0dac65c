//! GPUs held per window by workload and by team, and the days they are projected over.

use std::collections::BTreeMap;

use super::types::{trend, Method, TeamForecast};
use crate::plan::Plan;
use crate::review::numbers::round;
use crate::review::owners::owner;
use crate::review::telemetry::{Telemetry, Windows};
use crate::review::trend::{daily_peaks, hourly, project, request, Projection};

/// Per covered window: GPUs held, replicas held and GPUs busy (observed windows only).
#[derive(Default)]
pub(super) struct Series {
    pub(super) gpus: Windows,
    pub(super) replicas: Windows,
    pub(super) busy: Windows,
}

/// Days on the forecast's axis: day 0 is the first covered day.
pub(super) struct Axis {
    first: i64,
    now: f64,
    horizon: f64,
}

impl Axis {
    pub(super) fn of(t: &Telemetry, end: i64, horizon_t: i64) -> Axis {
        let first = t
            .covered_windows
            .first()
            .map_or(0, |w| w.div_euclid(86_400));
        Axis {
            first,
            now: (end - first * 86_400) as f64 / 86_400.0,
            horizon: (horizon_t - first * 86_400) as f64 / 86_400.0,
        }
    }
    fn x(&self, day: i64) -> f64 {
        (day - self.first) as f64
    }
    /// Daily peaks projected to the horizon.
    pub(super) fn project(&self, daily: &[(i64, f64)], m: &Method) -> Projection {
        let pts: Vec<(f64, f64)> = daily.iter().map(|(d, y)| (self.x(*d), *y)).collect();
        project(&pts, self.now, self.horizon, m.min_trend_days)
    }
}

/// Per workload and per team, GPUs held per window (and a workload's replicas and GPUs busy),
/// from the pods that held any.
pub(super) fn held_series<'p>(
    plan: &'p Plan,
    t: &'p Telemetry,
) -> (BTreeMap<&'p str, Series>, BTreeMap<&'p str, Windows>) {
    let step = t.step.max(1) as f64;
    let mut by_workload: BTreeMap<&str, Series> = BTreeMap::new();
    let mut by_team: BTreeMap<&str, Windows> = BTreeMap::new();
    let mut per_hour: BTreeMap<i64, usize> = BTreeMap::new();
    for w in &t.covered_windows {
        *per_hour.entry(w.div_euclid(3600)).or_default() += 1;
    }
    for p in t.pods.values().flatten() {
        let request = request(p, &per_hour, step);
        if request <= 0.0 {
            continue;
        }
        let team = by_team.entry(p.namespace.as_str()).or_default();
        for (w, a) in &p.allocated {
            team.add(w, a / step);
        }
        let Some(name) = owner(plan, p) else { continue };
        let gang = plan.workload(name).map_or(1, |w| w.gang().max(1)) as f64;
        let s = by_workload.entry(name).or_default();
        for (w, a) in &p.allocated {
            s.gpus.add(w, a / step);
            s.replicas.add(w, a / step / request / gang);
            if !p.unobserved.contains(&w) {
                s.busy.add(w, p.used.get(&w).copied().unwrap_or(0.0) / step);
            }
        }
    }
    (by_workload, by_team)
}

pub(super) fn team_forecast(
    t: &Telemetry,
    team: &str,
    v: &Windows,
    axis: &Axis,
    m: &Method,
) -> TeamForecast {
    let daily = daily_peaks(&hourly(t, v), t.step);
    let p = axis.project(&daily, m);
    TeamForecast {
        team: team.to_owned(),
        peak_gpus: round(daily.iter().map(|d| d.1).fold(0.0, f64::max)),
        trend: trend(&p),
        projected_gpus: round(p.center),
        band_low: round(p.low),
        band_high: round(p.high),
        serving_added_gpus: None,
        daily,
        fit: p.trend.then_some(p.fit).flatten(),
        first_day: axis.first,
    }
}
