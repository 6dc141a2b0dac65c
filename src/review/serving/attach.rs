//! vLLM's series read into the pods that export them: gauges summed over a pod's engines,
//! counters turned into what each window added.

use super::super::query::{increments, Answers, Grid, Q};
use super::super::telemetry::{run_at, Pods, Serving, Windows};

/// Reads vLLM's series into the pods that export them.
pub(in crate::review) fn attach(a: &Answers, grid: &Grid, pods: &mut Pods) {
    let col = |q: Q, l: &str| Answers::col(q, l);
    type Series = fn(&mut Serving) -> &mut Windows;
    let gauges: [(Q, Series); 5] = [
        (Q::ServingRunning, |s| &mut s.running),
        (Q::ServingWaiting, |s| &mut s.waiting),
        (Q::ServingRunningPeak, |s| &mut s.running_peak),
        (Q::ServingWaitingPeak, |s| &mut s.waiting_peak),
        (Q::ServingKvCache, |s| &mut s.kv_cache),
    ];
    for (q, series) in gauges {
        for (g, w) in a.get(q) {
            let key = (g[col(q, "namespace")].clone(), g[col(q, "pod")].clone());
            let Some(runs) = pods.get_mut(&key) else {
                continue;
            };
            for (k, v) in w {
                let t = grid.start(k);
                let Some(p) = run_at(runs, t) else { continue };
                if v.is_finite() && *v >= 0.0 {
                    let s = p.serving.get_or_insert_with(Box::default);
                    series(s).add(t, *v);
                    if q == Q::ServingKvCache {
                        s.kv_engines.add(t, 1.0);
                    }
                }
            }
        }
    }
    let q = Q::ServingTtft;
    for (g, w) in a.get(q) {
        let key = (g[col(q, "namespace")].clone(), g[col(q, "pod")].clone());
        let Some(le) = bound(&g[col(q, "le")]) else {
            continue;
        };
        let Some(runs) = pods.get_mut(&key) else {
            continue;
        };
        for (t, inc) in increments(*grid, w) {
            let Some(p) = run_at(runs, t) else { continue };
            *p.serving
                .get_or_insert_with(Box::default)
                .ttft
                .entry(t)
                .or_default()
                .entry(le.to_bits())
                .or_default() += inc;
        }
    }
    let q = Q::ServingFinished;
    for (g, w) in a.get(q) {
        let key = (g[col(q, "namespace")].clone(), g[col(q, "pod")].clone());
        let aborted = g[col(q, "finished_reason")].eq_ignore_ascii_case("abort");
        let Some(runs) = pods.get_mut(&key) else {
            continue;
        };
        for (t, inc) in increments(*grid, w) {
            let Some(p) = run_at(runs, t) else { continue };
            let s = p.serving.get_or_insert_with(Box::default);
            s.finished.add(t, inc);
            if aborted {
                s.aborted.add(t, inc);
            }
        }
    }
}

/// A histogram bucket's `le`, `+Inf` included; `None` for anything else.
fn bound(le: &str) -> Option<f64> {
    let v: f64 = le.parse().ok()?;
    (v >= 0.0 && !v.is_nan()).then_some(v)
}
