//! Pods: their requests, phases and owners, and each pod's GPUs held, allocated and waited
//! for per window.

use std::collections::{BTreeMap, BTreeSet};

use super::columns::col;
use super::intervals::{seconds_of, Intervals};
use super::nodes::{unit_of, Node, Unit};
use super::pool_names::PoolNames;
use super::requests::{ByName, PodReq};
use super::runs::{runs, RunOf, RunSpan};
use super::states::PodStates;
use crate::catalog::Catalog;
use crate::plan::Plan;
use crate::review::owners::owner;
use crate::review::query::{increments, Answers, Grid, Row, Q};
use crate::review::telemetry::{run_at, NodeSeries, PodSeries, Pods, Windows};

/// A node's pool by the names render gave; a node without one takes the declared pool of a
/// workload running on it (and is a node from then on, labels or not).
pub(super) fn node_pools<'p>(
    plan: &'p Plan,
    catalog: &Catalog,
    a: &Answers,
    nodes: &mut BTreeMap<String, Node>,
    (reqs, node_names): (&BTreeMap<(String, String), PodReq>, &[String]),
    apps: &BTreeMap<(String, String), String>,
    controllers: &BTreeMap<(String, String), String>,
) -> BTreeMap<String, &'p crate::plan::Pool> {
    let names = PoolNames::new(plan, catalog);
    let mut node_pool: BTreeMap<String, &crate::plan::Pool> = BTreeMap::new();
    for (name, n) in nodes.iter() {
        if let Some(p) = names.pool(plan, &n.labels) {
            node_pool.insert(name.clone(), p);
        }
    }
    for ((ns, pod), r) in reqs.iter().filter(|_| !a.gpus_as_given) {
        // Every node the name ran on: a name used again may run on several.
        let held: BTreeSet<u32> = r.node_at.values().copied().collect();
        let unowned: Vec<&String> = held
            .iter()
            .map(|n| &node_names[*n as usize])
            .filter(|n| !node_pool.contains_key(*n))
            .collect();
        if unowned.is_empty() {
            continue;
        }
        let key = (ns.clone(), pod.clone());
        let probe = PodSeries {
            namespace: ns.clone(),
            pod: pod.clone(),
            app: apps.get(&key).cloned(),
            controller: controllers.get(&key).cloned(),
            ..PodSeries::default()
        };
        if let Some(p) = owner(plan, &probe).and_then(|w| plan.workload_pools(w).next()) {
            for node in unowned {
                node_pool.insert(node.clone(), p.get());
            }
        }
    }
    for node in node_pool.keys() {
        nodes.entry(node.clone()).or_insert_with(|| Node {
            labels: BTreeMap::new(),
            alloc: BTreeMap::new(),
        });
    }
    node_pool
}

/// A scrape interval longer than the step leaves windows between two samples empty though
/// the pod held its GPUs all along: each such gap no longer than an interval carries the
/// level of the sample before it (as Prometheus's lookback does), so peaks and quantiles of
/// GPUs held are neither inflated by a window standing for a whole interval nor emptied by
/// the windows in between. Totals come from `allocated`, which this never touches.
pub(super) fn carry_levels(levels: &mut Windows, step: i64, interval: impl Fn(i64) -> Option<f64>) {
    // Rebuilt in key order: filling gaps in place would split runs window by window.
    let samples = std::mem::take(levels);
    let mut next = samples.keys().skip(1);
    for (a, level) in &samples {
        levels.insert(a, *level);
        let Some(b) = next.next() else { break };
        let Some(iv) = interval(a).filter(|iv| *iv > step as f64) else {
            continue;
        };
        // The next sample's window, one step late at most for jitter.
        if (b - a) as f64 > iv + step as f64 {
            continue;
        }
        let mut t = a + step;
        while t < b {
            levels.insert(t, *level);
            t += step;
        }
    }
}

/// How a pod holds its GPUs: MIG instances (a mixed strategy resource, or a single strategy
/// node's `nvidia.com/gpu`), time-sliced replicas, or whole cards.
pub(super) fn pod_gpu(unit: Option<&Unit>, resources: &[String]) -> crate::core::GpuHold {
    use crate::core::GpuHold;
    if unit.is_some_and(|u| u.mig) || resources.iter().any(|r| r.starts_with("nvidia_com_mig_")) {
        GpuHold::Instance
    } else if unit.is_some_and(|u| u.replicas > 1) {
        GpuHold::Replica
    } else {
        GpuHold::Whole
    }
}

/// What every pod's series is read against.
pub(super) struct PodCx<'a> {
    pub(super) plan: &'a Plan,
    pub(super) catalog: &'a Catalog,
    pub(super) a: &'a Answers,
    pub(super) grid: Grid,
    pub(super) ksm_at: &'a Intervals,
    pub(super) has_phase: bool,
    pub(super) units: &'a BTreeMap<String, Unit>,
    pub(super) states: &'a PodStates<'a>,
    pub(super) apps: &'a BTreeMap<(String, String), String>,
    pub(super) controllers: &'a BTreeMap<(String, String), String>,
    pub(super) node_names: &'a [String],
    /// The windows holding a kube-state-metrics sample: a name absent from them has ended.
    pub(super) sampled: &'a BTreeSet<u32>,
}

/// GPUs per window of a pod's app containers (and sidecars), or of its largest init
/// container where that is more, each resource at its share of a GPU.
pub(super) fn gpus_by_window(
    cx: &PodCx<'_>,
    key: &(String, String),
    (r, span): (&PodReq, &RunSpan),
    share_of: &dyn Fn(&str) -> Option<f64>,
    unknown_mig: &mut BTreeSet<String>,
) -> Row {
    let mut app = Row::new();
    let mut init = Row::new();
    let mut add = |target: &mut Row, res: &ByName<Row>, sum: bool| {
        for (res, w) in res {
            let Some(s) = share_of(res) else {
                unknown_mig.insert(res.clone());
                continue;
            };
            for (k, v) in w.range(span.from, span.to) {
                target.update(k, |e| {
                    let e = e.unwrap_or_default();
                    if sum {
                        e + v * s
                    } else {
                        e.max(v * s)
                    }
                });
            }
        }
    };
    for (_, c) in &r.app {
        add(&mut app, c, true);
    }
    for (name, c) in &r.init {
        if cx
            .states
            .sidecars
            .contains(&(key.0.clone(), key.1.clone(), name.clone()))
        {
            add(&mut app, c, true);
        } else {
            add(&mut init, c, false);
        }
    }
    for (k, v) in &init {
        app.update(k, |e| e.unwrap_or_default().max(*v));
    }
    app
}

/// A Pending pod's GPU-seconds waiting, and of those the unscheduled ones and those whose
/// image would not pull; `share` is its `nvidia.com/gpu` share of a GPU.
pub(super) fn pending_seconds(
    cx: &PodCx<'_>,
    key: &(String, String),
    (r, span): (&PodReq, &RunSpan),
    p: &mut PodSeries,
    share: f64,
) {
    let stepf = cx.grid.step as f64;
    let secs = seconds_of(stepf);
    let Some(pend) = cx.states.pending.get(key) else {
        return;
    };
    p.scheduled_known = cx.states.scheduled_known.contains(key);
    let unsched = cx.states.unscheduled.get(key);
    for (k, c) in pend.range(span.from, span.to) {
        let gpus = r.any.get(&k).copied().unwrap_or(0.0);
        p.pending += gpus * secs(*c, cx.ksm_at.at(k)) * share;
        // Samples unscheduled within the Pending ones of the window.
        let u = unsched
            .and_then(|u| u.get(&k))
            .copied()
            .unwrap_or(0.0)
            .min(*c);
        let waited = gpus * secs(u, cx.ksm_at.at(k)) * share;
        p.unscheduled += waited;
        if waited > 0.0 {
            p.waiting.add(cx.grid.start(k), waited);
        }
        // Scheduled, but its image would not pull.
        let pull = cx
            .states
            .image_pull
            .get(key)
            .and_then(|w| w.get(&k))
            .copied()
            .unwrap_or(0.0)
            .min(*c - u);
        p.image_pull += gpus * secs(pull, cx.ksm_at.at(k)) * share;
    }
}

/// One pod's series: GPUs held per window (app containers and sidecars, the largest init
/// container), GPU-seconds allocated to the node of each window, and Pending, unscheduled,
/// image-pull and crash-loop seconds. A Pending pod with no node goes to `unplaced`.
pub(super) fn pod_series(
    cx: &PodCx<'_>,
    key: &(String, String),
    (r, span): (&PodReq, &RunSpan),
    out_nodes: &mut BTreeMap<String, NodeSeries>,
    unknown_mig: &mut BTreeSet<String>,
    unplaced: &mut Vec<RunOf>,
) -> PodSeries {
    let step = cx.grid.step;
    let stepf = step as f64;
    let secs = seconds_of(stepf);
    let unit = span
        .node
        .as_ref()
        .and_then(|n| cx.units.get(n))
        .filter(|_| !cx.a.gpus_as_given);
    let share_of = |res: &str| -> Option<f64> {
        if res == "nvidia_com_gpu" {
            Some(unit.map_or(1.0, |u| u.share))
        } else {
            crate::review::telemetry::resource_share(cx.catalog, res)
        }
    };
    let app = gpus_by_window(cx, key, (r, span), &share_of, unknown_mig);
    let run = cx.states.running.get(key);
    let mut p = PodSeries {
        namespace: key.0.clone(),
        pod: key.1.clone(),
        start: cx.grid.start(span.from),
        app: cx.apps.get(key).cloned(),
        controller: cx.controllers.get(key).cloned(),
        only_on_gpu: span.node.as_ref().and_then(|n| {
            let model = cx.catalog.gpu_named(out_nodes.get(n)?.model.as_deref()?)?;
            let held = pod_gpu(cx.units.get(n), &r.any_resources);
            crate::review::owners::only_on_gpu(cx.plan, cx.catalog, &key.0, &model.name, held)
        }),
        node: span.node.clone(),
        ..PodSeries::default()
    };
    for (k, gpus) in &app {
        let held = if cx.has_phase {
            secs(
                run.and_then(|r| r.get(&k)).copied().unwrap_or(0.0),
                cx.ksm_at.at(k),
            )
        } else {
            stepf
        };
        if held > 0.0 && *gpus > 0.0 {
            p.allocated.insert(cx.grid.start(k), gpus * held);
            p.held_seconds += held;
            p.gpus
                .insert(cx.grid.start(k), gpus * (held / stepf).min(1.0));
        }
    }
    carry_levels(&mut p.gpus, step, |ts| {
        cx.ksm_at.at(((ts - cx.grid.from) / step) as u32)
    });
    pending_seconds(
        cx,
        key,
        (r, span),
        &mut p,
        share_of("nvidia_com_gpu").unwrap_or(1.0),
    );
    // A MIG resource of the mixed strategy is already at its profile's share.
    let whole_gpus = r.any_resources.iter().all(|res| res == "nvidia_com_gpu");
    if p.pending > 0.0 && unit.is_none() && whole_gpus && !cx.a.gpus_as_given {
        unplaced.push((key.clone(), p.start));
    }
    // Crash-looping while it held GPUs.
    if let Some(cl) = cx.states.crashloop.get(key) {
        for (k, c) in cl {
            if p.allocated.contains_key(&cx.grid.start(k)) {
                p.crashloop += secs(*c, cx.ksm_at.at(k));
            }
        }
    }
    // Each window's GPU-seconds to the node that held the pod then.
    for (t, v) in &p.allocated {
        let k = ((t - cx.grid.from) / step) as u32;
        let node = r
            .node_at
            .get(&k)
            .map(|n| &cx.node_names[*n as usize])
            .or(span.node.as_ref());
        if let Some(n) = node.and_then(|n| out_nodes.get_mut(n)) {
            n.allocated.add(t, *v);
        }
    }
    p.allocated.compact();
    p.gpus.compact();
    p
}

/// A Pending pod has no node, so no node says whether its `nvidia.com/gpu` is a time-sliced
/// replica or (MIG single strategy) a profile. Its workload does: the share its running pods
/// held (the most common), else its declared pool's; else a whole GPU. How many were shared.
pub(super) fn pending_shares(
    plan: &Plan,
    catalog: &Catalog,
    units: &BTreeMap<String, Unit>,
    pods: &mut Pods,
    unplaced: &[RunOf],
) -> usize {
    if unplaced.is_empty() {
        return 0;
    }
    let mut seen: BTreeMap<&str, BTreeMap<u64, usize>> = BTreeMap::new();
    for p in pods.values().flatten() {
        let (Some(w), Some(u)) = (owner(plan, p), p.node.as_ref().and_then(|n| units.get(n)))
        else {
            continue;
        };
        *seen
            .entry(w)
            .or_default()
            .entry(u.share.to_bits())
            .or_default() += 1;
    }
    let mut shares: Vec<(RunOf, f64)> = Vec::new();
    for (key, start) in unplaced {
        let Some(p) = pods
            .get(key)
            .and_then(|runs| runs.iter().find(|p| p.start == *start))
        else {
            continue;
        };
        let Some(w) = owner(plan, p) else { continue };
        let measured = seen.get(w).and_then(|m| {
            m.iter()
                .max_by_key(|(_, n)| **n)
                .map(|(bits, _)| f64::from_bits(*bits))
        });
        // The plan's word on the pool it is declared on, read as a node of it would be.
        let declared = plan.workload_pools(w).next().map(|pool| {
            unit_of(
                plan,
                catalog,
                &BTreeMap::new(),
                None,
                Some(pool.get()),
                None,
            )
            .share
        });
        if let Some(share) = measured.or(declared).filter(|s| *s < 1.0) {
            shares.push(((key.clone(), *start), share));
        }
    }
    for ((key, start), share) in &shares {
        let runs = pods.get_mut(key).into_iter().flatten();
        for p in runs.filter(|p| p.start == *start) {
            p.pending *= share;
            p.unscheduled *= share;
            p.waiting.map_values(|v| v * share);
            p.image_pull *= share;
        }
    }
    shares.len()
}

/// Tokens: a counter's increase across resets, from each window's highest value, to the run
/// of the window it was counted in.
pub(super) fn tokens(a: &Answers, grid: Grid, pods: &mut Pods) {
    for (g, w) in a.get(Q::Tokens) {
        let key = (
            g[col(Q::Tokens, "namespace")].clone(),
            g[col(Q::Tokens, "pod")].clone(),
        );
        let Some(runs) = pods.get_mut(&key) else {
            continue;
        };
        for (t, inc) in increments(grid, w) {
            if let Some(p) = run_at(runs, t) {
                p.tokens += inc;
            }
        }
    }
}

/// Every pod run's series, and the Pending runs no node holds yet, whose `nvidia.com/gpu`
/// share is their workload's.
pub(super) fn pods_of(
    cx: &PodCx<'_>,
    reqs: &BTreeMap<(String, String), PodReq>,
    out_nodes: &mut BTreeMap<String, NodeSeries>,
    unknown_mig: &mut BTreeSet<String>,
) -> (Pods, Vec<RunOf>) {
    let mut pods = Pods::new();
    let mut unplaced = Vec::new();
    for (key, r) in reqs {
        let runs = runs(r, cx.node_names, cx.sampled)
            .iter()
            .map(|span| pod_series(cx, key, (r, span), out_nodes, unknown_mig, &mut unplaced))
            .collect();
        pods.insert(key.clone(), runs);
    }
    (pods, unplaced)
}
