//! vLLM's series read into the pods that export them: gauges summed over a pod's engines,
//! counters turned into what each window added.

use std::collections::{BTreeMap, BTreeSet};

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
    // Every bound a pod exports, whether or not it counted anything: a window's histogram
    // holds them all, as a store's `sum by (le)` does, so a bucket that stayed still still
    // bounds the one above it (`histogram_quantile`).
    let mut bounds: BTreeMap<(String, String), BTreeSet<u64>> = BTreeMap::new();
    for (g, w) in a.get(q) {
        let key = (g[col(q, "namespace")].clone(), g[col(q, "pod")].clone());
        let Some(le) = bound(&g[col(q, "le")]) else {
            continue;
        };
        let Some(runs) = pods.get_mut(&key) else {
            continue;
        };
        bounds.entry(key).or_default().insert(le.to_bits());
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
    for (key, bounds) in &bounds {
        for h in servings(pods, key).flat_map(|s| s.ttft.values_mut()) {
            for b in bounds {
                h.entry(*b).or_insert(0.0);
            }
        }
    }
    let q = Q::ServingFinished;
    let mut counts_aborts: BTreeSet<(String, String)> = BTreeSet::new();
    for (g, w) in a.get(q) {
        let key = (g[col(q, "namespace")].clone(), g[col(q, "pod")].clone());
        let aborted = g[col(q, "finished_reason")].eq_ignore_ascii_case("abort");
        let Some(runs) = pods.get_mut(&key) else {
            continue;
        };
        if aborted {
            counts_aborts.insert(key.clone());
        }
        for (t, inc) in increments(*grid, w) {
            let Some(p) = run_at(runs, t) else { continue };
            let s = p.serving.get_or_insert_with(Box::default);
            s.finished.add(t, inc);
            if aborted {
                s.aborted.add(t, inc);
            }
        }
    }
    // A series that exists counts, even at 0 all week: it says the server can see an abort.
    for key in &counts_aborts {
        for s in servings(pods, key) {
            s.aborts_counted = true;
        }
    }
}

/// The serving figures of every run of pod `key` that exported any.
fn servings<'a>(
    pods: &'a mut Pods,
    key: &(String, String),
) -> impl Iterator<Item = &'a mut Serving> + 'a {
    pods.get_mut(key)
        .into_iter()
        .flatten()
        .filter_map(|p| p.serving.as_deref_mut())
}

/// A histogram bucket's `le`, `+Inf` included; `None` for anything else.
fn bound(le: &str) -> Option<f64> {
    let v: f64 = le.parse().ok()?;
    (v >= 0.0 && !v.is_nan()).then_some(v)
}
