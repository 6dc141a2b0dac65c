//! From telemetry and the plan to the review: allocated against used GPU-seconds per team,
//! workload, GPU model and pool; what the idle part cost; stalled pods; unmet (Pending)
//! demand; idle pool floors and nodes over the span the data covers; reservation fill and
//! reservation advice from measured floors; cost per 1M tokens; and recommendations with
//! what each saves and the plan change to make. The rows it fills are in [`super::rows`];
//! the advice on right-sizing, unmet demand, reservations and empty nodes in
//! [`super::advice`]; next quarter's forecast in [`super::forecast`].

mod figures;
mod tally;

use crate::review::rows::{TeamRow, Window};
use std::collections::BTreeMap;

use super::advice::{idle_nodes, unmet_demand};
use super::rows::AdviceKind;
use super::telemetry::{format_time, Telemetry};
use super::{Review, Settings};
use crate::catalog::Catalog;
use crate::engine::recommend::Recommendation;
use crate::plan::Plan;
use figures::{
    coverage_of, model_rows, pool_floors, pool_rows, stalled_advice, workload_rows, Floors,
};
use tally::{pod_facts, tally, Tally};

pub(crate) const SCHEMA: &str = "gpuplan.review/v1";

pub fn analyse(
    plan: &Plan,
    rec: &Recommendation,
    catalog: &Catalog,
    t: &Telemetry,
    s: &Settings,
) -> Review {
    let step = t.step.max(1);
    let facts = pod_facts(plan, rec, catalog, t);

    let Tally {
        teams,
        by_workload,
        mut matches,
        by_model,
        by_pool,
        pool_held,
        timeline,
        unmatched,
        no_usage,
        stalled,
        pending,
    } = tally(&facts, t, s);

    let (workloads, mut advice, mut right_sizes) =
        workload_rows(plan, rec, catalog, s, &by_workload, &mut matches);
    // A service its serving metrics size keeps the GPU its capacity was measured on: a slice
    // chosen by GPU activity is neither advised nor written for it (one story per run).
    let (serving, serving_missing) = super::serving::serving(plan, catalog, t);
    let sized: Vec<&str> = serving
        .iter()
        .filter(|r| !r.needed_by_hour.is_empty())
        .map(|r| r.workload.as_str())
        .collect();
    advice.retain(|a| {
        !(a.kind == AdviceKind::RightSize
            && a.workload.as_deref().is_some_and(|w| sized.contains(&w)))
    });
    right_sizes.retain(|w, _| !sized.contains(&w.as_str()));
    advice.extend(stalled_advice(plan, rec, catalog, &stalled));
    advice.extend(unmet_demand(plan, t, &pending));

    let Floors {
        idle_pools,
        reservations,
        reservation_advice,
    } = pool_floors(plan, catalog, t, &by_pool, &pool_held, &mut advice);
    let idle_nodes = idle_nodes(plan, catalog, t, &mut advice);
    advice.sort_by(|a, b| {
        b.saving_usd
            .unwrap_or(0.0)
            .total_cmp(&a.saving_usd.unwrap_or(0.0))
            .then(a.kind.cmp(&b.kind))
    });

    let next_quarter =
        super::forecast::forecast(plan, t, &workloads, &right_sizes, &serving, &s.forecast);
    Review {
        schema: SCHEMA,
        plan: plan.name().to_owned(),
        source: t.source.clone(),
        window: Window {
            from: format_time(t.from),
            to: format_time(t.to),
            step_seconds: step,
        },
        coverage: coverage_of(t, no_usage),
        teams: teams
            .into_iter()
            .map(|(team, x)| TeamRow {
                team,
                figures: x.figures(),
            })
            .collect(),
        workloads,
        models: model_rows(by_model),
        pools: pool_rows(&by_pool, &pool_held),
        stalled,
        pending,
        idle_pools,
        idle_nodes,
        reservations,
        purchase_fill: Vec::new(),
        reservation_advice,
        unmatched,
        recommendations: advice,
        serving,
        serving_missing,
        next_quarter,
        timeline: timeline
            .into_iter()
            .map(|(team, pts)| (team, with_gaps(&pts, t)))
            .collect(),
    }
}

/// A team's chart points, with zero at each edge of a covered stretch it held nothing in: a
/// line drawn straight across would show work that ran four hours a day as running all day.
/// A stretch the data does not cover stays a gap the line crosses (no data is not idle).
fn with_gaps(pts: &BTreeMap<i64, (f64, f64)>, t: &Telemetry) -> Vec<(i64, f64, f64)> {
    let mut out: Vec<(i64, f64, f64)> = Vec::with_capacity(pts.len());
    let mut last: Option<i64> = None;
    for (time, (a, u)) in pts {
        if let Some(prev) = last.filter(|p| time - p > t.step) {
            let (after, before) = (prev + t.step, time - t.step);
            if t.covered_windows.contains(&after) {
                out.push((after, 0.0, 0.0));
            }
            if before > after && t.covered_windows.contains(&before) {
                out.push((before, 0.0, 0.0));
            }
        }
        out.push((*time, *a, *u));
        last = Some(*time);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Work that stops and starts again drops to zero in the chart where the data covers the
    /// pause, and is drawn across a pause the data does not cover.
    #[test]
    fn a_pause_is_drawn_as_zero_only_where_the_data_covers_it() {
        let pts: BTreeMap<i64, (f64, f64)> = [0, 60, 120, 600, 660]
            .into_iter()
            .map(|t| (t, (2.0, 1.0)))
            .collect();
        let mut t = Telemetry {
            step: 60,
            ..Telemetry::default()
        };
        t.covered_windows = (0..12).map(|k| k * 60).collect();
        let drawn = with_gaps(&pts, &t);
        let times: Vec<i64> = drawn.iter().map(|p| p.0).collect();
        assert_eq!(times, [0, 60, 120, 180, 540, 600, 660]);
        assert_eq!((drawn[3].1, drawn[4].1), (0.0, 0.0));
        // the pause outside the data: no zero is invented
        t.covered_windows = [0, 60, 120, 600, 660].into_iter().collect();
        assert_eq!(with_gaps(&pts, &t).len(), 5);
        // a one-window pause: one zero
        let short: BTreeMap<i64, (f64, f64)> =
            [0, 120].into_iter().map(|t| (t, (1.0, 1.0))).collect();
        t.covered_windows = [0, 60, 120].into_iter().collect();
        assert_eq!(with_gaps(&short, &t).len(), 3);
    }
}
