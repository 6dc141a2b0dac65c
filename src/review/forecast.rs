//! Next quarter from the measured window: per workload, the GPUs and replicas it held
//! (p10, p50, p95, max over the covered windows it ran), a least-squares trend of its daily
//! peaks, and the peak projected to the end of next quarter with a prediction band; from
//! those, the `replicas` and `hours_per_month` `review --write-plan` proposes. The method is
//! stated in `gpuplan explain review`; its figures are in `providers/assumptions.toml`
//! `[review]`.

use std::collections::BTreeMap;

use serde::Serialize;

use super::advice::RightSize;
use super::analysis::{quantile, round, round4};
use super::owners::owner;
use super::rows::WorkloadRow;
use super::telemetry::{Telemetry, Windows};
use super::trend::{daily_peaks, hourly, next_quarter, project, request, Fit, Projection};
use crate::plan::raw::Count;
use crate::plan::Plan;

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
}

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

/// The least-squares trend of daily peaks.
#[derive(Debug, Clone, Copy, Serialize, PartialEq, schemars::JsonSchema)]
pub struct Trend {
    pub slope_per_day: f64,
    pub r2: f64,
    pub days: usize,
    /// Whether the slope is the forecast (significant at 95% over enough days).
    pub used: bool,
}

fn trend(p: &Projection) -> Option<Trend> {
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
    /// A smaller slice for an idle workload: its `gpu_fraction` and `sharing`.
    pub gpu_fraction: Option<f64>,
    pub sharing: Option<crate::core::Sharing>,
    /// How `max` was sized.
    pub basis: Basis,
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
    /// Measured running hours per month (the share of covered windows it held GPUs).
    pub hours_per_month: f64,
    /// Of daily peak replicas.
    pub trend: Option<Trend>,
    /// Peak replicas at the horizon, with the 95% band: of replicas held, or of replicas
    /// needed where serving metrics sized the workload (`proposed.basis` `serving`).
    pub projected_replicas: f64,
    pub band_low: f64,
    pub band_high: f64,
    /// Today's `replicas` as written, e.g. `{ min = 2, max = 6 }`.
    pub current: String,
    pub proposed: Proposal,
    /// Used when the right-size is not taken (check would refuse it): the consolidated count.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub without_right_size: Option<Proposal>,
    /// The figures behind it, in one line (the TOML comment `--write-plan` writes).
    pub figures: String,
    #[serde(skip)]
    pub right_size_what: Option<String>,
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
    /// Daily peaks (day since 1970, GPUs), for the chart.
    #[serde(skip)]
    pub daily: Vec<(i64, f64)>,
    #[serde(skip)]
    pub fit: Option<Fit>,
    #[serde(skip)]
    pub first_day: i64,
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
    pub withheld: Option<String>,
    pub workloads: Vec<WorkloadForecast>,
    pub teams: Vec<TeamForecast>,
    /// Plan workloads with no GPU held in the window: left as they are.
    pub without_data: Vec<String>,
}

/// Per covered window: GPUs held, replicas held and GPUs busy (observed windows only).
#[derive(Default)]
struct Series {
    gpus: Windows,
    replicas: Windows,
    busy: Windows,
}

/// A count as the plan writes it: `3`, or `{ min = 1, max = 6 }`.
pub(crate) fn count(c: Count) -> String {
    match c {
        Count::Fixed(n) => n.to_string(),
        Count::Range { min, max } => format!("{{ min = {min}, max = {max} }}"),
    }
}

/// Days on the forecast's axis: day 0 is the first covered day.
struct Axis {
    first: i64,
    now: f64,
    horizon: f64,
}

impl Axis {
    fn of(t: &Telemetry, end: i64, horizon_t: i64) -> Axis {
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
    fn project(&self, daily: &[(i64, f64)], m: &Method) -> Projection {
        let pts: Vec<(f64, f64)> = daily.iter().map(|(d, y)| (self.x(*d), *y)).collect();
        project(&pts, self.now, self.horizon, m.min_trend_days)
    }
}

/// What every workload's forecast is read against.
struct Cx<'a> {
    plan: &'a Plan,
    t: &'a Telemetry,
    rows: &'a [WorkloadRow],
    right_sizes: &'a BTreeMap<String, RightSize>,
    serving: &'a [super::serving::ServingRow],
    m: &'a Method,
    axis: Axis,
    quarter: &'a str,
    covered_days: f64,
}

pub(crate) fn forecast(
    plan: &Plan,
    t: &Telemetry,
    rows: &[WorkloadRow],
    right_sizes: &BTreeMap<String, RightSize>,
    serving: &[super::serving::ServingRow],
    m: &Method,
) -> NextQuarter {
    let end = t.data_to.unwrap_or(t.to);
    // The data's end is exclusive: a review that ends on 1 January reviewed the fourth quarter
    // and plans the first.
    let (quarter, horizon_t) = next_quarter(end - 1);
    let covered_days = t.covered as f64 / 86_400.0;
    let mut nq = NextQuarter {
        quarter,
        horizon: super::telemetry::format_time(horizon_t),
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
        nq.withheld = Some(format!(
            "the data covers {covered_days:.1} day(s); sizing next quarter needs at least {} covered days",
            m.min_days
        ));
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
    nq.workloads = workloads;
    nq.without_data = without_data;
    nq
}

/// Per workload and per team, GPUs held per window (and a workload's replicas and GPUs busy),
/// from the pods that held any.
fn held_series<'p>(
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
    for p in t.pods.values() {
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

fn team_forecast(t: &Telemetry, team: &str, v: &Windows, axis: &Axis, m: &Method) -> TeamForecast {
    let daily = daily_peaks(&hourly(t, v), t.step);
    let p = axis.project(&daily, m);
    TeamForecast {
        team: team.to_owned(),
        peak_gpus: round(daily.iter().map(|d| d.1).fold(0.0, f64::max)),
        trend: trend(&p),
        projected_gpus: round(p.center),
        band_low: round(p.low),
        band_high: round(p.high),
        daily,
        fit: p.trend.then_some(p.fit).flatten(),
        first_day: axis.first,
    }
}

/// What a workload held over the hours it ran: the figures its proposal is sized from.
struct Held {
    gpus: Quantiles,
    /// Replicas held per running hour, and their quantiles.
    reps: Vec<f64>,
    replicas: Quantiles,
    /// GPUs busy per running hour.
    busy: Vec<f64>,
    /// The share of windows with samples it ran in, and its hours a month from that.
    share: f64,
    hours: f64,
    /// Its daily peaks of replicas held, projected.
    p: Projection,
}

impl Held {
    /// `None` when it held no GPU in a window with samples.
    fn of(cx: &Cx<'_>, s: &Series) -> Option<Held> {
        let t = cx.t;
        let (gpus_h, reps_h, busy_h) = (
            hourly(t, &s.gpus),
            hourly(t, &s.replicas),
            hourly(t, &s.busy),
        );
        // Hours it held GPUs; whether it ran at all is read from the windows with samples.
        let running: Vec<i64> = gpus_h
            .iter()
            .filter(|(_, g)| **g > 1e-9)
            .map(|(h, _)| *h)
            .collect();
        let ran = t
            .sampled_windows
            .iter()
            .filter(|k| s.gpus.get(k).is_some_and(|g| *g > 1e-9))
            .count();
        if running.is_empty() || ran == 0 {
            return None;
        }
        let at = |v: &BTreeMap<i64, f64>| -> Vec<f64> {
            running
                .iter()
                .map(|k| v.get(k).copied().unwrap_or(0.0))
                .collect()
        };
        let reps = at(&reps_h);
        let share = ran as f64 / t.sampled_windows.len().max(1) as f64;
        let plan_hours = cx.plan.hours_per_month();
        // Its history starts the first day it ran: the days before a launch are not a trend.
        let daily: Vec<(i64, f64)> = daily_peaks(&reps_h, t.step)
            .into_iter()
            .skip_while(|d| d.1 <= 0.0)
            .collect();
        Some(Held {
            gpus: Quantiles::of(&at(&gpus_h)),
            replicas: Quantiles::of(&reps),
            reps,
            busy: at(&busy_h),
            share,
            hours: if share >= 0.98 {
                plan_hours
            } else {
                share * plan_hours
            },
            p: cx.axis.project(&daily, cx.m),
        })
    }
}

/// How a workload is sized: its plan's form and floor, what the review found of it, and the
/// held peak's size before consolidation or serving metrics have their say.
struct Sizing {
    current: Count,
    fixed_now: bool,
    floor_min: i64,
    min_held: i64,
    headroom: f64,
    eff: Option<f64>,
    crashing: bool,
    idle: bool,
    hours_change: Option<i64>,
    max: i64,
    basis: Basis,
    /// The busy share a replica is consolidated to, and GPUs busy p10 and p95.
    target: f64,
    busy10: f64,
    busy95: f64,
}

impl Sizing {
    fn of(cx: &Cx<'_>, w: &crate::plan::raw::Workload, h: &Held) -> Sizing {
        let m = cx.m;
        let current = w.replicas();
        let can_be_zero = w.scale_to_zero() || current.min() == 0;
        let floor_min = if w.user_facing() || !can_be_zero {
            1
        } else {
            0
        };
        // Never above today's low: a shrinking workload's p10 over the whole window is a level
        // it has left (its last day of running hours is what it holds now).
        let today_low = h
            .reps
            .iter()
            .rev()
            .take(24)
            .copied()
            .fold(f64::INFINITY, f64::min);
        let min_held = ((quantile(&h.reps, 0.10) + 0.05).floor() as i64)
            .min((today_low + 0.05).floor() as i64)
            .max(floor_min);
        let row = cx.rows.iter().find(|r| &r.workload == w.name.get());
        let eff = row.and_then(|r| r.figures.efficiency);
        // A crash-looping workload is idle because it crashes: sized as it held, never
        // shrunk on that evidence.
        let crashing = row
            .and_then(|r| r.crashloop_share)
            .is_some_and(|c| c >= super::analysis::CRASHLOOP_SHARE);
        let idle = !crashing && eff.is_some_and(|e| e < m.low_utilization);
        let current_hours = cx.plan.workload_hours(w);
        let new_hours = h.hours.round() as i64;
        let hours_change = ((h.hours - current_hours).abs() > (0.05 * current_hours).max(10.0))
            .then_some(new_hours.max(1));
        // Work that keeps its GPUs less busy than it plans to (its `utilization`, else the
        // consolidation target), with no growth to make room for: fewer replicas, each busy at
        // the target, never more than it held. Gangs are sized by their model, not by load.
        let target = w
            .utilization()
            .unwrap_or(m.consolidation_target)
            .clamp(m.low_utilization, 0.9);
        let mut s = Sizing {
            current,
            // A fixed count stays fixed: at what it held when flat, at the projected peak
            // plus headroom when it grows.
            fixed_now: matches!(current, Count::Fixed(_)),
            floor_min,
            min_held,
            headroom: m.headroom,
            eff,
            crashing,
            idle,
            hours_change,
            max: 0,
            basis: Basis::Flat,
            target,
            busy10: quantile(&h.busy, 0.10),
            busy95: quantile(&h.busy, 0.95),
        };
        // Sized from the held peak: the trend or the flat level, plus headroom. An idle
        // workload is never grown.
        s.max = s.grow(h.p.peak);
        s.basis = if h.p.trend { Basis::Trend } else { Basis::Flat };
        if idle && s.max > current.max() {
            s.max = current.max().max(1);
            s.basis = Basis::Idle;
        }
        s
    }
    fn grow(&self, peak: f64) -> i64 {
        ((peak * (1.0 + self.headroom)) - 1e-6).ceil().max(1.0) as i64
    }
    /// The plan's own form is kept: a fixed count stays one integer, an autoscaled range
    /// stays a range even where its bounds meet.
    fn proposal(&self, min: i64, max: i64, basis: Basis) -> Proposal {
        Proposal {
            min,
            max,
            fixed: self.fixed_now,
            hours_per_month: self.hours_change,
            gpu_fraction: None,
            sharing: None,
            basis,
        }
    }
    /// Held replicas up to `max`.
    fn held(&self, max: i64, basis: Basis, p: &Projection) -> Proposal {
        let max = if self.fixed_now && basis == Basis::Flat {
            ((p.peak - 0.05).ceil() as i64).max(1)
        } else {
            max
        };
        let min = if self.fixed_now {
            max
        } else {
            self.min_held.min(max)
        };
        self.proposal(min, max, basis)
    }
    /// Replicas busy at the target, from the GPUs busy p10 and p95 over `per` (GPUs busy a
    /// replica carries at the target).
    fn consolidated(&self, per: f64) -> Proposal {
        let max = self.grow(self.busy95 / per.max(1e-9)).min(self.max);
        let min = if self.fixed_now {
            max
        } else {
            ((self.busy10 / per.max(1e-9) + 0.05).floor() as i64)
                .max(self.floor_min)
                .min(max)
        };
        self.proposal(min, max, Basis::Consolidated)
    }
}

/// What a workload's proposal is, and what it would be without its right-size.
struct Proposed {
    proposed: Proposal,
    without_right_size: Option<Proposal>,
    serving_note: Option<String>,
    /// The projection it came from when serving metrics sized it.
    projected: Option<Projection>,
}

/// A workload's proposal from what it held: its right-size, a consolidation, or held.
fn from_held(
    cx: &Cx<'_>,
    w: &crate::plan::raw::Workload,
    s: &Series,
    h: &Held,
    z: &Sizing,
) -> Proposed {
    let per = w.gpu_share() * w.gang().max(1) as f64 * z.target;
    let can_consolidate = !z.crashing
        && (z.idle || !h.p.trend)
        && w.gang() <= 1
        && !s.busy.is_empty()
        && z.eff.is_some_and(|e| e < z.target);
    let rs = cx.right_sizes.get(w.name.get().as_str()).filter(|_| z.idle);
    let (proposed, without_right_size) = match rs {
        Some(r) => {
            let mut pr = z.held(z.max, z.basis, &h.p);
            pr.gpu_fraction = Some(r.fraction);
            pr.sharing = Some(r.sharing);
            (pr, Some(z.consolidated(per)))
        }
        None if can_consolidate => {
            let c = z.consolidated(per);
            let held = z.held(z.max, z.basis, &h.p);
            (if c.max < held.max { c } else { held }, None)
        }
        None => (z.held(z.max, z.basis, &h.p), None),
    };
    Proposed {
        proposed,
        without_right_size,
        serving_note: None,
        projected: None,
    }
}

/// Serving metrics decide an inference workload's replicas where its pods export them: the
/// replicas each hour needed at the concurrency one replica carried within the objective,
/// trended like held replicas; GPU activity neither shrinks nor grows it.
fn from_serving(cx: &Cx<'_>, name: &str, h: &Held, z: &Sizing, held: Proposed) -> Proposed {
    let Some(r) = cx.serving.iter().find(|r| r.workload == name) else {
        return held;
    };
    if r.needed_by_hour.is_empty() {
        return Proposed {
            proposed: z.held(z.max.max(z.grow(h.p.peak)), Basis::Saturated, &h.p),
            without_right_size: None,
            serving_note: Some(serving_figures(r, 0.0, cx.m.headroom)),
            projected: None,
        };
    }
    let daily = daily_peaks(&r.needed_by_hour, cx.t.step);
    let sp = cx.axis.project(&daily, cx.m);
    let (p10, _) = super::serving::needed_range(r).unwrap_or((0.0, sp.peak));
    let max = z.grow(sp.peak);
    let min = if z.fixed_now {
        max
    } else {
        ((p10 + 0.05).floor() as i64).max(z.floor_min).min(max)
    };
    Proposed {
        proposed: z.proposal(min, max, Basis::Serving),
        without_right_size: None,
        serving_note: Some(serving_figures(r, sp.peak, cx.m.headroom)),
        projected: Some(sp),
    }
}

/// One workload's forecast: what it held, how it is sized, and the figures behind it.
fn workload_forecast(
    cx: &Cx<'_>,
    w: &crate::plan::raw::Workload,
    s: &Series,
) -> Option<WorkloadForecast> {
    let name = w.name.get();
    let h = Held::of(cx, s)?;
    let z = Sizing::of(cx, w, &h);
    let rs = cx.right_sizes.get(name.as_str()).filter(|_| z.idle);
    let out = from_serving(cx, name, &h, &z, from_held(cx, w, s, &h, &z));
    // The projection shown is the one the proposal came from: replicas needed where
    // serving metrics sized it, replicas held otherwise.
    let shown = out.projected.as_ref().unwrap_or(&h.p);
    let figures = figures_line(cx, &h, &z, &out.proposed);
    let figures = match &out.serving_note {
        Some(n) => format!("{n}; {figures}"),
        None => figures,
    };
    Some(WorkloadForecast {
        workload: name.clone(),
        team: w.team.get().clone(),
        gpus_held: h.gpus,
        replicas_held: h.replicas,
        hours_per_month: round(h.hours),
        trend: trend(shown),
        projected_replicas: round(shown.center),
        band_low: round(shown.low),
        band_high: round(shown.high),
        current: count(z.current),
        proposed: out.proposed,
        without_right_size: out.without_right_size,
        figures,
        right_size_what: rs.map(|r| r.what.clone()),
    })
}

/// The figures behind a proposal, in one line: replicas held, the trend or level, how it was
/// sized, how busy it was.
fn figures_line(cx: &Cx<'_>, h: &Held, z: &Sizing, proposed: &Proposal) -> String {
    let (p, m) = (&h.p, cx.m);
    let replicas = &h.replicas;
    // An autoscaler at its ceiling hides demand above it.
    let capped = matches!(z.current, Count::Range { .. })
        && replicas.p95 + 0.05 >= z.current.max() as f64
        && z.current.max() > 0;
    format!(
        "replicas held p10 {} / p50 {} / p95 {} / max {} ({} GPUs at p95) over {:.0} day(s); {}{}; {}{}{}",
        crate::core::num(replicas.p10),
        crate::core::num(replicas.p50),
        crate::core::num(replicas.p95),
        crate::core::num(replicas.max),
        crate::core::num(h.gpus.p95),
        cx.covered_days,
        match (p.trend, p.fit) {
            (true, Some(f)) if f.slope < 0.0 => format!(
                "daily peaks {:+.3}/day (R\u{b2} {:.2}): declining, so held at today's fitted level {:.1} (95% band {:.1}-{:.1}), never extrapolated lower",
                f.slope, f.r2, p.center, p.low, p.high
            ),
            (true, Some(f)) => format!(
                "daily peaks {:+.3}/day (R\u{b2} {:.2}) give {:.1} by {} (95% band {:.1}-{:.1})",
                f.slope, f.r2, p.center, cx.quarter, p.low, p.high
            ),
            (false, Some(f)) => format!(
                "no significant trend ({:+.3}/day, R\u{b2} {:.2}): peak {:.1} as seen",
                f.slope, f.r2, p.peak
            ),
            _ => format!("peak {:.1} as seen", p.peak),
        },
        match (proposed.basis, z.basis) {
            (Basis::Consolidated, _) => format!(
                "; consolidated to {:.0}% busy per replica (p95 of GPUs busy {:.2}), +{:.0}% headroom",
                z.target * 100.0,
                z.busy95,
                m.headroom * 100.0
            ),
            (Basis::Serving | Basis::Saturated, _) => String::new(),
            (Basis::Trend | Basis::Flat | Basis::Idle, Basis::Idle) => {
                "; busy below the idle threshold, so never grown".to_owned()
            }
            (Basis::Trend | Basis::Flat | Basis::Idle, _) => {
                format!(", +{:.0}% headroom", m.headroom * 100.0)
            }
        },
        match z.eff {
            Some(e) => format!("busy {:.0}% of held time", e * 100.0),
            None => "busy unknown".to_owned(),
        },
        if z.hours_change.is_some() {
            format!("; ran {:.0}% of covered time", h.share * 100.0)
        } else {
            String::new()
        },
        if capped {
            format!("; held its replicas.max {} at p95: demand may be higher than seen", z.current.max())
        } else {
            String::new()
        },
    ) + if z.crashing {
        "; pods crash-looped while holding GPUs, so it is not sized down on this idleness"
    } else {
        ""
    }
}

/// The serving figures behind an inference workload's sizing, in one line.
fn serving_figures(r: &super::serving::ServingRow, peak: f64, headroom: f64) -> String {
    use super::serving::ServingSignal;
    let signal = match (r.decided_by, r.ttft_objective_seconds) {
        (ServingSignal::TimeToFirstToken, Some(o)) => format!(
            "sized by serving metrics: TTFT p95 {} s against the objective {} s (missed in {} of {} hours)",
            r.ttft_p95_seconds.map_or("-".to_owned(), |v| format!("{v:.2}")),
            crate::core::num(o),
            r.hours_over_objective.unwrap_or(0),
            r.hours_with_ttft
        ),
        _ => format!(
            "sized by serving metrics: requests waiting (p95 {}) and KV cache (p95 {}) against no queue and under {:.0}% full",
            crate::core::num(r.waiting.p95),
            r.kv_cache
                .map_or("not exported".to_owned(), |k| format!("{:.0}%", k.p95 * 100.0)),
            super::serving::KV_FULL * 100.0
        ),
    };
    match (r.concurrency_per_replica, r.needed_replicas) {
        (Some(c), Some(n)) => format!(
            "{signal}; a replica carried up to {} requests in flight within it, so the {} p95 in flight need {} replicas at p95 and {} at most (peak {:.1} projected), +{:.0}% headroom; GPU activity not used",
            crate::core::num(c),
            crate::core::num(r.concurrency.p95),
            crate::core::num(n.p95),
            crate::core::num(n.max),
            peak,
            headroom * 100.0
        ),
        _ => format!(
            "{signal}; no hour met it, so one replica's capacity is unknown and the replicas that ran were too few: never sized down, raise replicas.max until hours meet it"
        ),
    }
}

/// `gpuplan explain review`: what the review measures and how next quarter is forecast,
/// with the figures from the catalog.
pub(crate) fn method_text(c: &crate::catalog::Catalog) -> String {
    let a = &c.assumptions;
    format!(
        "gpuplan review: how it measures, and how it forecasts next quarter

Measured (per team, workload, GPU model and pool):
  - Allocated: GPU-seconds requested by running pods (kube-state-metrics
    kube_pod_container_resource_requests), at the share of a physical GPU each unit is (a
    MIG profile's compute slices, a time-sliced replica's share).
  - Used: DCGM_FI_PROF_GR_ENGINE_ACTIVE summed over the pod's GPUs (DCGM_FI_DEV_GPU_UTIL / 100
    where the profiling metric is absent). Efficiency is used over allocated for the time
    usage was observed; a span without DCGM data is \"no data\", never idle.
  - Each sample stands for the gap to its neighbours in its own series (the scrape interval
    may differ per target and change in time); costs are over the covered hours only.

Next quarter (the report's \"Next quarter\" section, and `--write-plan NEXT.toml`):
  - Minimum data: {min_days} covered days, else nothing is proposed; a trend needs
    {min_trend} covered days.
  - Per workload, from hourly means over the covered window (hours covered whole, not at
    either end of the data, whose samples stand for time outside them): replicas held (pods,
    a gang counting once) and GPUs held, as p10, p50, p95 and max over the hours it held GPUs.
  - Daily peaks (the highest hourly mean of each day with at least half its hours), from the
    first day the workload ran (the days before a launch are not a trend), are fitted by
    least squares: slope per day and R-squared. The slope is the forecast only when it
    is significant at 95% (|slope / its standard error| >= Student's t with n - 2 degrees of
    freedom); otherwise the level is flat (the mean of the daily peaks).
  - Horizon: the end of the calendar quarter after the one the data ends in (a window that
    ends on 1 January reviewed the fourth quarter and plans the first). The projection
    is the line (or the level) there, with a 95% prediction band
    (t * s * sqrt(1 + 1/n + (x - mean x)^2 / Sxx)). A declining line is not extrapolated (it
    would reach zero for a service that runs): the projection and band are the line today.
  - replicas.max = ceil(peak x (1 + headroom)), headroom {headroom:.0}% (`--headroom`), where
    the peak is the higher of the line today and at the horizon (a trend), or the highest daily
    peak seen (flat). replicas.min = the p10 of replicas held, never above the lowest hour of
    its last day running (at least 1 for a user-facing workload or one that may not scale to
    zero). A fixed count stays fixed: at the peak seen when flat, at the projected peak plus
    headroom when it grows; an autoscaled range stays a range.
  - Consolidation: a workload busy below its planned `utilization` (else {target:.0}%) with
    no significant growth gets fewer replicas, each busy at that share: the p95 of GPUs busy
    over (GPUs per replica x the share), plus headroom, never above what it held; min from the
    p10 the same way. Gangs are left to their model.
  - An idle workload (busy below {low:.0}% of held time, GP025's threshold) is never grown.
    Where memory and the GPU allow, it gets the smaller slice the review's right-size advice
    names (a MIG profile, or time-slicing on a GPU without MIG) at the replicas it held; where
    `check` would refuse that slice, it is consolidated instead. A workload whose pods waited
    in CrashLoopBackOff for 10% or more of their held time is idle because it crashes: no
    right-size and no consolidation.
  - An inference workload whose pods export vLLM's serving metrics is sized by them, not by
    GPU activity (a busy GPU may serve without a queue, an idle-looking one keep requests
    waiting): per hour its replicas, requests in flight (running + waiting), KV-cache use and
    time-to-first-token p95. The hours that met its `ttft_p95_seconds` (without one: no queue
    and the KV cache under {kv_full:.0}%) give the requests in flight one replica carries; each
    hour needs its load over that. replicas.min = the p10 of those, replicas.max their daily
    peaks projected as above, plus headroom. Where no hour met the objective, it is never
    sized down.
  - hours_per_month: the share of windows with samples in which it held GPUs, times the plan's
    month, written where it differs from the plan by more than 5% (and 10 h).
  - Declared pools follow their workloads: a pool whose workloads at their new max
    (x GPUs per replica x gang) no longer fit is raised; one whose workloads were all measured
    and need fewer nodes is lowered, unless its capacity is a commitment (reserved, capacity
    reservation or block). A workload split over several pools leaves them as written.
  - Workloads that held no GPU in the window are left as written and listed.
  - NEXT keeps every other key, comment and the order of the plan (toml_edit); each changed
    line carries the figures it came from. It is held to `check`: no error the plan did not
    have (a right-size or a pool raise that would add one is not written, and the warning
    says which rule). `gpuplan diff PLAN NEXT.toml` prices the change.
  - An autoscaler at its replicas.max hides demand above it: the figures say so where the p95
    reached the max.

Figures: providers/assumptions.toml [review] (as of {as_of}).
",
        min_days = a.review_min_days,
        min_trend = a.review_min_trend_days,
        headroom = a.review_headroom * 100.0,
        low = a.low_utilization * 100.0,
        target = a.review_consolidation_target * 100.0,
        kv_full = super::serving::KV_FULL * 100.0,
        as_of = c
            .sources
            .iter()
            .find(|s| s.file.contains("assumptions"))
            .map_or("-".to_owned(), |s| s.as_of.to_string()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(min: i64, max: i64) -> Plan {
        let catalog =
            crate::catalog::Catalog::embedded(&[crate::core::Provider::Aws]).expect("catalog");
        let text = format!("version = 1\n[plan]\nname = \"p\"\nowner = \"o\"\nprovider = \"aws\"\nregions = [\"us-east-1\"]\n\n[[workload]]\nname = \"w\"\nteam = \"t\"\nkind = \"batch\"\nreplicas = {{ min = {min}, max = {max} }}\nskus = [\"g6.xlarge\"]\n");
        crate::plan::load_and_validate(crate::source::SourceFile::new("p.toml", text), &catalog)
            .unwrap_or_else(|_| panic!("plan"))
    }

    proptest::proptest! {
        #![proptest_config(proptest::test_runner::Config::with_cases(48))]
        /// Whatever the history: min <= max, max >= 1, a band around its centre, an idle
        /// workload never grown, a fixed count exactly when min = max.
        #[test]
        fn proposals_are_well_formed(
            per_hour in proptest::collection::vec(0usize..9, 24 * 8..24 * 40),
            busy in 0.0f64..1.0,
            min in 0i64..4,
            span in 0i64..6,
        ) {
            let max = min.max(1) + span;
            let p = plan(min, max);
            let mut t = Telemetry { step: 3600, ..Telemetry::default() };
            for (h, n) in per_hour.iter().enumerate() {
                let w = h as i64 * 3600;
                t.covered_windows.insert(w);
                t.sampled_windows.insert(w);
                for i in 0..*n {
                    let pod = t.pods.entry(("t".into(), format!("w-{i}"))).or_default();
                    pod.namespace = "t".into();
                    pod.pod = format!("w-{i}");
                    pod.allocated.insert(w, 3600.0);
                    pod.used.insert(w, 3600.0 * busy);
                    pod.has_usage = true;
                }
            }
            t.covered = per_hour.len() as i64 * 3600;
            t.to = t.covered;
            t.data_to = Some(t.covered);
            let rows = [WorkloadRow {
                workload: "w".into(),
                team: "t".into(),
                figures: super::super::rows::Figures {
                    allocated_gpu_seconds: 0.0,
                    used_gpu_seconds: 0.0,
                    no_data_gpu_seconds: 0.0,
                    efficiency: Some(busy),
                    efficiency_of_shared_cards: false,
                    idle_cost_usd: 0.0,
                    pending_gpu_seconds: 0.0,
                },
                planned_utilization: None,
                usd_per_million_tokens: None,
                pods: 0,
                matched_pods: Default::default(),
                crashloop_share: None,
            }];
            let m = Method {
                headroom: 0.15,
                min_days: 7.0,
                min_trend_days: 14,
                consolidation_target: 0.5,
                low_utilization: 0.25,
            };
            let nq = forecast(&p, &t, &rows, &BTreeMap::new(), &[], &m);
            for team in &nq.teams {
                proptest::prop_assert!(team.band_low <= team.projected_gpus + 1e-9);
                proptest::prop_assert!(team.projected_gpus <= team.band_high + 1e-9);
            }
            for f in &nq.workloads {
                let pr = &f.proposed;
                proptest::prop_assert!(pr.max >= 1 && pr.min >= 0 && pr.min <= pr.max, "{pr:?}");
                // A fixed count is one number; a range keeps its form even where its bounds
                // meet (issue 42: a shrinking autoscaled workload became fixed).
                proptest::prop_assert!(!pr.fixed || pr.min == pr.max, "{pr:?}");
                proptest::prop_assert_eq!(pr.fixed, f.current.parse::<i64>().is_ok());
                if busy < m.low_utilization {
                    proptest::prop_assert!(pr.max <= max, "idle grown: {pr:?} over {max}");
                }
                proptest::prop_assert!(f.band_low <= f.projected_replicas + 1e-9);
            }
            if per_hour.iter().all(|n| *n == 0) {
                proptest::prop_assert!(nq.workloads.is_empty());
            }
        }
    }
}
