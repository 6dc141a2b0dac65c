//! One workload's forecast: what it held, how it is sized (held, consolidated, right-sized
//! or by serving metrics), and the figures behind the proposal.

use std::collections::BTreeMap;

use super::grounds::{Band, Grounds, Level, ServingGrounds, SizedBy};
use super::series::{Axis, Series};
use super::types::{count, trend, Basis, Method, Proposal, Typical, TypicalOf, WorkloadForecast};
use crate::plan::Count;
use crate::plan::Plan;
use crate::review::numbers::{quantile, round, Quantiles, CRASHLOOP_SHARE};
use crate::review::rows::RightSize;
use crate::review::rows::WorkloadRow;
use crate::review::telemetry::Telemetry;
use crate::review::trend::{daily_peaks, hourly, ran_share, while_running, Projection};

/// What every workload's forecast is read against.
pub(super) struct Cx<'a> {
    pub(super) plan: &'a Plan,
    pub(super) t: &'a Telemetry,
    pub(super) rows: &'a [WorkloadRow],
    pub(super) right_sizes: &'a BTreeMap<String, RightSize>,
    pub(super) serving: &'a [crate::review::serving::ServingRow],
    pub(super) m: &'a Method,
    pub(super) axis: Axis,
    pub(super) quarter: &'a str,
    pub(super) covered_days: f64,
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
    /// Replicas it held on average over those hours, measured: `hours` x `mean` is the
    /// replica-hours a month it ran.
    mean: f64,
    /// Its daily peaks of replicas held, projected, and the growth that makes of them.
    p: Projection,
    growth: f64,
}

impl Held {
    /// `None` when it held no GPU in a window with samples.
    fn of(cx: &Cx<'_>, s: &Series) -> Option<Held> {
        let t = cx.t;
        let gpus_h = hourly(t, &s.gpus);
        // The share of each hour it ran, read once for its three series.
        let ran_h = ran_share(t, &s.gpus);
        let (gpus_w, reps_h, busy_h) = (
            while_running(gpus_h.clone(), &ran_h),
            while_running(hourly(t, &s.replicas), &ran_h),
            while_running(hourly(t, &s.busy), &ran_h),
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
        let hours = if share >= 0.98 {
            plan_hours
        } else {
            share * plan_hours
        };
        // Replica-hours a month as they ran: every window's replicas over the covered
        // windows (a scrape interval longer than the step puts two windows' worth in one and
        // none in the next, which the sum keeps), so hours x mean is what ran.
        let covered = t.covered_windows.len().max(1) as f64;
        let held: f64 = t
            .covered_windows
            .iter()
            .filter_map(|w| s.replicas.get(w))
            .sum();
        let replica_hours = held / covered * plan_hours;
        // Its history starts the first day it ran: the days before a launch are not a trend.
        let daily: Vec<(i64, f64)> = daily_peaks(&reps_h, t.step)
            .into_iter()
            .skip_while(|d| d.1 <= 0.0)
            .collect();
        let p = cx.axis.project(&daily, cx.m);
        Some(Held {
            gpus: Quantiles::of(&at(&gpus_w)),
            replicas: Quantiles::of(&reps),
            reps,
            busy: at(&busy_h),
            share,
            hours,
            mean: replica_hours / hours.max(1e-9),
            growth: growth_of(&p, &daily),
            p,
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
    /// The most replicas it held at once: consolidation never proposes more.
    held_most: i64,
}

impl Sizing {
    fn of(cx: &Cx<'_>, w: &crate::plan::Workload, h: &Held) -> Sizing {
        let m = cx.m;
        let current = w.replicas();
        let can_be_zero = w.scale_to_zero() || current.min() == 0;
        // User-facing work keeps its availability floor warm, one replica a node (the pool
        // the plan prices keeps those nodes): a drain never takes the last one.
        let floor_min = if w.user_facing() {
            let gang = u32::try_from(w.gang().max(1)).unwrap_or(1);
            // Never above what it runs at peak: one replica cannot be on two nodes.
            i64::from(
                w.availability_nodes(m.user_facing_min_nodes)
                    .div_ceil(gang)
                    .max(1),
            )
            .min(current.max().max(1))
        } else if !can_be_zero {
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
            .is_some_and(|c| c >= CRASHLOOP_SHARE);
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
            held_most: ((h.reps.iter().copied().fold(0.0, f64::max) - 0.05).ceil() as i64).max(1),
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
    /// Never below the workload's floor (its availability floor, for user-facing work).
    fn proposal(&self, min: i64, max: i64, basis: Basis) -> Proposal {
        let max = max.max(self.floor_min);
        Proposal {
            min: min.max(self.floor_min).min(max),
            max,
            fixed: self.fixed_now,
            hours_per_month: self.hours_change,
            typical_replicas: None,
            typical: None,
            gpu_fraction: None,
            sharing: None,
            gpu_models: None,
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
        // Fewer replicas, never more than it held (headroom included): a consolidation that
        // raised a workload would be a growth the trend did not show.
        let max = self
            .grow(self.busy95 / per.max(1e-9))
            .min(self.max)
            .min(self.held_most);
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
    /// The serving metrics that sized it, when they did.
    serving: Option<ServingGrounds>,
    /// The projection it came from when serving metrics sized it.
    projected: Option<Projection>,
    /// How much that projection grows what was seen (`growth_of`).
    growth: f64,
}

/// A workload's proposal from what it held: its right-size, a consolidation, or held.
fn from_held(
    w: &crate::plan::Workload,
    s: &Series,
    h: &Held,
    z: &Sizing,
    rs: Option<&RightSize>,
) -> Proposed {
    let per = w.gpu_share() * w.gang().max(1) as f64 * z.target;
    let can_consolidate = !z.crashing
        && (z.idle || !h.p.trend)
        && w.gang() <= 1
        && !s.busy.is_empty()
        && z.eff.is_some_and(|e| e < z.target);
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
            // Where the two rules differ by one replica and the plan already has one of
            // them, it keeps it: a workload busy within noise of its target flipped between
            // them each quarter (issue 72: 3 replicas at 50% busy went 3 -> 4 -> 4 -> 3 -> 4
            // as busy read 0.49991 or 0.49997), a pull request of one node each time.
            let current = z.current.max();
            let consolidate = if c.max + 1 == held.max && (current == c.max || current == held.max)
            {
                current == c.max
            } else {
                c.max < held.max
            };
            (if consolidate { c } else { held }, None)
        }
        None => (z.held(z.max, z.basis, &h.p), None),
    };
    Proposed {
        proposed,
        without_right_size,
        serving: None,
        projected: None,
        growth: h.growth,
    }
}

/// Serving metrics decide an inference workload's replicas where its pods export them: the
/// replicas each hour needed at the concurrency one replica carried within the objective,
/// trended like held replicas; GPU activity neither shrinks nor grows it.
fn from_serving(cx: &Cx<'_>, name: &str, h: &Held, z: &Sizing, held: Proposed) -> Proposed {
    let Some(r) = cx.serving.iter().find(|r| r.workload == name) else {
        return held;
    };
    if r.needed_by_hour.is_empty() && r.missed.is_empty() {
        // No hour carried a request and none missed its objective: nothing to size it by,
        // and nothing says it needs more. Sized as it held, never grown (issue 72: a service
        // that received no request all week was grown 2 -> 3 as "saturated").
        let mut quiet = held;
        if quiet.proposed.max > z.current.max() {
            quiet.proposed = z.held(z.current.max().max(1), Basis::Idle, &h.p);
        }
        return quiet;
    }
    if r.needed_by_hour.is_empty() {
        return Proposed {
            proposed: z.held(z.max.max(z.grow(h.p.peak)), Basis::Saturated, &h.p),
            without_right_size: None,
            serving: Some(ServingGrounds::of(r, 0.0, cx.m.headroom)),
            projected: None,
            growth: h.growth,
        };
    }
    // Sized from arrivals, the headroom is on the arrivals: a queue's replicas do not grow in
    // proportion to its load, so adding it to the replicas would oversize the busiest.
    let with_headroom = crate::review::serving::needed_with_headroom(r, cx.m.headroom);
    let daily = daily_peaks(
        with_headroom.as_ref().unwrap_or(&r.needed_by_hour),
        cx.t.step,
    );
    let sp = cx.axis.project(&daily, cx.m);
    let (p10, _) = crate::review::serving::needed_range(r).unwrap_or((0.0, sp.peak));
    let max = match with_headroom {
        Some(_) => ((sp.peak - 1e-6).ceil().max(1.0)) as i64,
        None => z.grow(sp.peak),
    };
    let min = if z.fixed_now {
        max
    } else {
        ((p10 + 0.05).floor() as i64).max(z.floor_min).min(max)
    };
    let mut proposed = z.proposal(min, max, Basis::Serving);
    proposed.gpu_models = r.measured_on.clone().filter(|_| r.may_move);
    Proposed {
        proposed,
        without_right_size: None,
        serving: Some(ServingGrounds::of(r, sp.peak, cx.m.headroom)),
        growth: growth_of(&sp, &daily),
        projected: Some(sp),
    }
}

/// One workload's forecast: what it held, how it is sized, and the figures behind it.
pub(super) fn workload_forecast(
    cx: &Cx<'_>,
    w: &crate::plan::Workload,
    s: &Series,
) -> Option<WorkloadForecast> {
    let name = w.name.get();
    let h = Held::of(cx, s)?;
    let z = Sizing::of(cx, w, &h);
    let rs = cx.right_sizes.get(name.as_str()).filter(|_| z.idle);
    let mut out = from_serving(cx, name, &h, &z, from_held(w, s, &h, &z, rs));
    let per = w.gpu_share() * w.gang().max(1) as f64 * z.target;
    out.proposed.typical = typical(&h, &out.proposed, &z, out.growth, per);
    out.proposed.typical_replicas = out.proposed.typical.map(|t| t.value);
    // The projection shown is the one the proposal came from: replicas needed where
    // serving metrics sized it, replicas held otherwise.
    let shown = out.projected.as_ref().unwrap_or(&h.p);
    let figures = grounds(
        cx,
        &h,
        &z,
        &out.proposed,
        out.serving,
        out.projected.as_ref(),
    );
    Some(WorkloadForecast {
        workload: name.clone(),
        team: w.team.get().clone(),
        gpus_held: h.gpus,
        replicas_held: h.replicas,
        replicas_mean: round(h.mean),
        hours_per_month: round(h.hours),
        trend: trend(shown),
        projected_replicas: round(shown.center),
        band_low: round(shown.low),
        band_high: round(shown.high),
        held_center: h.p.center,
        current: count(z.current),
        proposed: out.proposed,
        without_right_size: out.without_right_size,
        figures,
        right_size: rs.map(|r| r.slice.clone()),
        written: None,
        not_written: None,
    })
}

/// What a workload runs on average over its hours next quarter, where its proposal is a range
/// it does not fill: the replicas it held on average (`Held::mean`, so the plan's hours x
/// typical replicas is the replica-hours that ran), or where consolidation cut its replicas,
/// its busy GPUs' worth at the target; grown as the projection that decided its `max` grows
/// (`growth`), within the proposal's bounds. `None` for a fixed count or one that runs at
/// its maximum. Serving metrics size a service's ceiling, not what it runs: its autoscaler
/// runs what it ran (issue 72: a service priced at the replicas its arrivals needed, 1.09,
/// had run 2.06).
fn typical(h: &Held, p: &Proposal, z: &Sizing, growth: f64, per: f64) -> Option<Typical> {
    if p.fixed || p.min >= p.max {
        return None;
    }
    let mean = |v: &[f64]| (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64);
    // A consolidation that cut its replicas runs fewer, each busier; one that did not (a
    // single notebook) runs what it ran.
    let (measured, of) = match mean(&h.busy) {
        Some(b) if p.basis == Basis::Consolidated && p.max < z.held_most => (
            b / per.max(1e-9),
            TypicalOf::BusyAtTarget { target: z.target },
        ),
        _ => (h.mean, TypicalOf::Held),
    };
    let growth = if growth.is_finite() && growth > 0.0 {
        growth
    } else {
        1.0
    };
    let grown = measured * growth;
    // Within rounding of a bound is at it, not held to it.
    let bounded = if grown < p.min as f64 - 0.005 {
        Some(p.min)
    } else if grown > p.max as f64 + 0.005 {
        Some(p.max)
    } else {
        None
    };
    let value = (bounded.map_or(grown, |b| b as f64) * 100.0)
        .round()
        .clamp(p.min as f64 * 100.0, p.max as f64 * 100.0)
        / 100.0;
    (value < p.max as f64 - 0.05).then_some(Typical {
        value,
        measured: (measured * 100.0).round() / 100.0,
        of,
        growth: (growth * 100.0).round() / 100.0,
        bounded,
    })
}

/// The growth a projection makes of what was seen: its peak over the largest daily peak it
/// was fitted on; 1 without a significant trend.
fn growth_of(p: &Projection, daily: &[(i64, f64)]) -> f64 {
    let seen = daily.iter().map(|d| d.1).fold(0.0, f64::max);
    if p.trend && seen > 0.0 {
        (p.peak / seen).max(0.0)
    } else {
        1.0
    }
}

/// The figures behind a proposal: replicas held, the trend or level, how it was sized, how
/// busy it was.
fn grounds(
    cx: &Cx<'_>,
    h: &Held,
    z: &Sizing,
    proposed: &Proposal,
    serving: Option<ServingGrounds>,
    projected: Option<&Projection>,
) -> Grounds {
    // The projection that sized it: the replicas serving metrics said were needed, where
    // they did, so the comment quotes the trend that decided (issue 72: "no significant
    // trend" of replicas held beside a max set by the rising need).
    let p = projected.unwrap_or(&h.p);
    // An autoscaler at its ceiling hides demand above it.
    let capped = matches!(z.current, Count::Range { .. })
        && h.replicas.p95 + 0.05 >= z.current.max() as f64
        && z.current.max() > 0;
    let band = Band {
        center: p.center,
        low: p.low,
        high: p.high,
    };
    let level = match (p.trend, p.fit) {
        (true, Some(f)) if f.slope < 0.0 => Level::Declining {
            slope: f.slope,
            r2: f.r2,
            band,
        },
        (true, Some(f)) => Level::Rising {
            slope: f.slope,
            r2: f.r2,
            quarter: cx.quarter.to_owned(),
            band,
        },
        (false, Some(f)) => Level::NoTrend {
            slope: f.slope,
            r2: f.r2,
            peak: p.peak,
        },
        _ => Level::AsSeen { peak: p.peak },
    };
    let sized = match (proposed.basis, z.basis) {
        (Basis::Consolidated, _) => SizedBy::Consolidated {
            target: z.target,
            busy95: z.busy95,
            headroom: cx.m.headroom,
        },
        (Basis::Serving | Basis::Saturated, _) => SizedBy::Serving,
        (Basis::Trend | Basis::Flat | Basis::Idle, Basis::Idle) => SizedBy::NeverGrown,
        (Basis::Trend | Basis::Flat | Basis::Idle, _) => SizedBy::Headroom(cx.m.headroom),
    };
    Grounds {
        of_needed: projected.is_some(),
        serving,
        replicas: h.replicas,
        gpus_p95: h.gpus.p95,
        covered_days: cx.covered_days,
        level,
        sized,
        busy: z.eff,
        ran: z.hours_change.map(|_| h.share),
        capped_at: capped.then(|| z.current.max()),
        crashing: z.crashing,
    }
}
