//! Pods: their requests, phases and owners, and each pod's GPUs held, allocated and waited
//! for per window.

use std::collections::{BTreeMap, BTreeSet};

use super::columns::col;
use super::intervals::{seconds_of, Intervals};
use super::nodes::{unit_of, Node, Unit};
use super::pool_names::PoolNames;
use super::states::PodStates;
use crate::catalog::Catalog;
use crate::plan::Plan;
use crate::review::owners::owner;
use crate::review::query::{Answers, Grid, Row, Q};
use crate::review::telemetry::{NodeSeries, PodSeries, Windows};
use crate::review::timeline::Timeline;

/// A node's pool by the names render gave; a node without one takes the declared pool of a
/// workload running on it (and is a node from then on, labels or not).
pub(super) fn node_pools<'p>(
    plan: &'p Plan,
    catalog: &Catalog,
    a: &Answers,
    nodes: &mut BTreeMap<String, Node>,
    reqs: &BTreeMap<(String, String), PodReq>,
    apps: &BTreeMap<(String, String), String>,
    controllers: &BTreeMap<(String, String), String>,
) -> BTreeMap<String, &'p crate::plan::raw::Pool> {
    let names = PoolNames::new(plan, catalog);
    let mut node_pool: BTreeMap<String, &crate::plan::raw::Pool> = BTreeMap::new();
    for (name, n) in nodes.iter() {
        if let Some(p) = names.pool(plan, &n.labels) {
            node_pool.insert(name.clone(), p);
        }
    }
    for ((ns, pod), r) in reqs.iter().filter(|_| !a.gpus_as_given) {
        let Some(node) = &r.node else { continue };
        if node_pool.contains_key(node) {
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
            node_pool.insert(node.clone(), p.get());
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
pub(super) fn pod_gpu(unit: Option<&Unit>, resources: &[String]) -> crate::review::owners::PodGpu {
    use crate::review::owners::PodGpu;
    if unit.is_some_and(|u| u.mig) || resources.iter().any(|r| r.starts_with("nvidia_com_mig_")) {
        PodGpu::Mig
    } else if unit.is_some_and(|u| u.replicas > 1) {
        PodGpu::Shared
    } else {
        PodGpu::Whole
    }
}

/// Entries by name in name order: a pod has a container or two, each a resource or two, and
/// a B-tree map allocates room for eleven at its first.
pub(super) type ByName<V> = Vec<(String, V)>;

/// The entry of `by` named `k`, added at its place in name order when absent.
fn named<'a, V: Default>(by: &'a mut ByName<V>, k: &str) -> &'a mut V {
    let i = match by.binary_search_by(|(n, _)| n.as_str().cmp(k)) {
        Ok(i) => i,
        Err(i) => {
            by.insert(i, (k.to_owned(), V::default()));
            i
        }
    };
    &mut by[i].1
}

/// A pod's containers, by kind, per window: (node, GPUs of one unit each, avg requested).
#[derive(Default)]
pub(super) struct PodReq {
    pub(super) node: Option<String>,
    /// The node each window's requests name (an index into the node names): a pod name can
    /// run on two nodes one after the other (a StatefulSet pod recreated elsewhere), and each
    /// node holds it for its own time. An index, not the name: one per pod-window.
    pub(super) node_at: Timeline<u32, u32>,
    /// container -> resource -> window -> avg (scheduled rows only)
    pub(super) app: ByName<ByName<Row>>,
    pub(super) init: ByName<ByName<Row>>,
    /// Requests per window of any row (scheduled or not), for Pending demand, in GPUs (a MIG
    /// profile counts as its share of one).
    pub(super) any: Row,
    /// The GPU resources of those rows, in name order.
    pub(super) any_resources: Vec<String>,
}

/// Each pod's requests by container and resource, the node it ran on per window and longest,
/// and the node names those windows index.
pub(super) fn requests(
    a: &Answers,
    catalog: &Catalog,
    has_phase: bool,
) -> (BTreeMap<(String, String), PodReq>, Vec<String>) {
    let mut reqs: BTreeMap<(String, String), PodReq> = BTreeMap::new();
    let mut node_names: Vec<String> = Vec::new();
    let mut node_ids: BTreeMap<String, u32> = BTreeMap::new();
    for (q, init) in [(Q::Requests, false), (Q::InitRequests, true)] {
        for (g, w) in a.get(q) {
            let (ns, pod, container, node, res) = (
                &g[col(q, "namespace")],
                &g[col(q, "pod")],
                &g[col(q, "container")],
                &g[col(q, "node")],
                &g[col(q, "resource")],
            );
            if ns.is_empty() || pod.is_empty() {
                continue;
            }
            let r = reqs.entry((ns.clone(), pod.clone())).or_default();
            // A Pending MIG request is its profile's share of a GPU (2g.20gb: 2/7), as a
            // running one is; `nvidia.com/gpu` takes its node's replica share below.
            let mig_share = if res == "nvidia_com_gpu" {
                1.0
            } else {
                crate::review::telemetry::resource_share(catalog, res).unwrap_or(1.0)
            };
            for (k, v) in w {
                let v = *v * mig_share;
                r.any.update(k, |e| e.unwrap_or_default().max(v));
            }
            if let Err(i) = r.any_resources.binary_search(res) {
                r.any_resources.insert(i, res.clone());
            }
            if node.is_empty() && has_phase {
                continue;
            }
            if !node.is_empty() {
                let id = *node_ids.entry(node.clone()).or_insert_with(|| {
                    node_names.push(node.clone());
                    (node_names.len() - 1) as u32
                });
                for k in w.keys() {
                    r.node_at.insert(k, id);
                }
            }
            let by = if init { &mut r.init } else { &mut r.app };
            let e = named(named(by, container), res);
            for (k, v) in w {
                e.update(k, |x| x.unwrap_or_default().max(*v));
            }
        }
    }
    // A pod's node is the one that held it longest (its usage and pool follow it); each
    // window's allocation goes to the node of that window.
    for r in reqs.values_mut() {
        let mut held: BTreeMap<&String, usize> = BTreeMap::new();
        for n in r.node_at.values() {
            *held.entry(&node_names[*n as usize]).or_default() += 1;
        }
        r.node = held
            .into_iter()
            .max_by_key(|(_, c)| *c)
            .map(|(n, _)| n.clone());
    }
    (reqs, node_names)
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
}

/// GPUs per window of a pod's app containers (and sidecars), or of its largest init
/// container where that is more, each resource at its share of a GPU.
pub(super) fn gpus_by_window(
    cx: &PodCx<'_>,
    key: &(String, String),
    r: &PodReq,
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
            for (k, v) in w {
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
    r: &PodReq,
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
    for (k, c) in *pend {
        let gpus = r.any.get(&k).copied().unwrap_or(0.0);
        p.pending += gpus * secs(*c, cx.ksm_at.at(k)) * share;
        // Samples unscheduled within the Pending ones of the window.
        let u = unsched
            .and_then(|u| u.get(&k))
            .copied()
            .unwrap_or(0.0)
            .min(*c);
        p.unscheduled += gpus * secs(u, cx.ksm_at.at(k)) * share;
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
    r: &PodReq,
    out_nodes: &mut BTreeMap<String, NodeSeries>,
    unknown_mig: &mut BTreeSet<String>,
    unplaced: &mut Vec<(String, String)>,
) -> PodSeries {
    let step = cx.grid.step;
    let stepf = step as f64;
    let secs = seconds_of(stepf);
    let unit = r
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
    let app = gpus_by_window(cx, key, r, &share_of, unknown_mig);
    let run = cx.states.running.get(key);
    let mut p = PodSeries {
        namespace: key.0.clone(),
        pod: key.1.clone(),
        app: cx.apps.get(key).cloned(),
        controller: cx.controllers.get(key).cloned(),
        only_on_gpu: r.node.as_ref().and_then(|n| {
            let model = cx.catalog.gpu_named(out_nodes.get(n)?.model.as_deref()?)?;
            let held = pod_gpu(cx.units.get(n), &r.any_resources);
            crate::review::owners::only_on_gpu(cx.plan, cx.catalog, &key.0, &model.name, held)
        }),
        node: r.node.clone(),
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
        r,
        &mut p,
        share_of("nvidia_com_gpu").unwrap_or(1.0),
    );
    // A MIG resource of the mixed strategy is already at its profile's share.
    let whole_gpus = r.any_resources.iter().all(|res| res == "nvidia_com_gpu");
    if p.pending > 0.0 && unit.is_none() && whole_gpus && !cx.a.gpus_as_given {
        unplaced.push(key.clone());
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
            .or(r.node.as_ref());
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
    reqs: &BTreeMap<(String, String), PodReq>,
    units: &BTreeMap<String, Unit>,
    pods: &mut BTreeMap<(String, String), PodSeries>,
    unplaced: &[(String, String)],
) -> usize {
    if unplaced.is_empty() {
        return 0;
    }
    let mut seen: BTreeMap<&str, BTreeMap<u64, usize>> = BTreeMap::new();
    for (key, r) in reqs {
        let (Some(w), Some(u)) = (
            pods.get(key).and_then(|p| owner(plan, p)),
            r.node.as_ref().and_then(|n| units.get(n)),
        ) else {
            continue;
        };
        *seen
            .entry(w)
            .or_default()
            .entry(u.share.to_bits())
            .or_default() += 1;
    }
    let mut shared = 0;
    for key in unplaced {
        let Some(p) = pods.get_mut(key) else { continue };
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
            p.pending *= share;
            p.unscheduled *= share;
            p.image_pull *= share;
            shared += 1;
        }
    }
    shared
}

/// Tokens: a counter's increase across resets, from each window's highest value.
pub(super) fn tokens(a: &Answers, pods: &mut BTreeMap<(String, String), PodSeries>) {
    for (g, w) in a.get(Q::Tokens) {
        let key = (
            g[col(Q::Tokens, "namespace")].clone(),
            g[col(Q::Tokens, "pod")].clone(),
        );
        if let Some(p) = pods.get_mut(&key) {
            p.tokens += w
                .values()
                .zip(w.values().skip(1))
                .map(|(a, b)| if b >= a { b - a } else { *b })
                .sum::<f64>();
        }
    }
}

/// Pods' series by (namespace, pod).
pub(super) type Pods = BTreeMap<(String, String), PodSeries>;

/// Every pod's series, and the Pending pods no node holds yet, whose `nvidia.com/gpu` share
/// is their workload's.
pub(super) fn pods_of(
    cx: &PodCx<'_>,
    reqs: &BTreeMap<(String, String), PodReq>,
    out_nodes: &mut BTreeMap<String, NodeSeries>,
    unknown_mig: &mut BTreeSet<String>,
) -> (Pods, Vec<(String, String)>) {
    let mut pods = BTreeMap::new();
    let mut unplaced = Vec::new();
    for (key, r) in reqs {
        let p = pod_series(cx, key, r, out_nodes, unknown_mig, &mut unplaced);
        pods.insert(key.clone(), p);
    }
    (pods, unplaced)
}
