//! From the answers to [`super::query::QUERIES`] (a server's or a file's, the same shape) to
//! per-pod and per-node GPU-seconds. Here the cluster's semantics are applied once for both
//! paths:
//! - only Running pods on a node hold GPUs; Pending requests are unmet demand apart;
//! - a time-sliced GPU is one physical GPU split among the pods that share it, whichever way
//!   dcgm-exporter attributed it (to one pod by default, a copy to each with
//!   `--kubernetes-virtual-gpus`);
//! - under the MIG single strategy an `nvidia.com/gpu` is the node's MIG profile's share;
//! - usage is `DCGM_FI_PROF_GR_ENGINE_ACTIVE`, or `DCGM_FI_DEV_GPU_UTIL / 100` where the
//!   profiling metric is absent or stuck at zero on a non-MIG GPU;
//! - a sample stands for one scrape interval, inferred from the data.

mod columns;
mod intervals;
mod nodes;
mod pods;
mod pool_names;
mod requests;
mod runs;
mod states;
mod usage;

use std::collections::{BTreeMap, BTreeSet};

use super::noticed::Noticed;
use super::query::{Answers, Grid};
use super::telemetry::{NodeSeries, Orphan, Pods, Telemetry};
use crate::catalog::Catalog;
use crate::plan::Plan;
use intervals::{ksm_coverage, scrapes, Scrapes};
use nodes::{node_series, nodes_of, NodeStage};
use pods::{node_pools, pending_shares, pods_of, tokens, PodCx};
pub(crate) use pool_names::{plan_pool, pool_matches};
use requests::requests;
use states::{named_by, pod_states};
use usage::{dcgm_coverage, settle_usage, usage_of, Usage, UsageCx};

/// GPU-seconds of usage with no GPU-requesting pod below which it is noise: 0.1 GPU-hour.
const ORPHAN_FLOOR: f64 = 360.0;

/// What reading the data noticed that the review's figures rest on.
struct ReadFacts {
    /// Pods with GPU requests and no phase series.
    no_phase: bool,
    unlabelled: usize,
    replicas_from_cards: usize,
    fallbacks: usize,
    unknown_mig: BTreeSet<String>,
}

fn read_notes(f: ReadFacts) -> Vec<Noticed> {
    let ReadFacts {
        no_phase,
        unlabelled,
        replicas_from_cards,
        fallbacks,
        unknown_mig,
    } = f;
    let mut notes = Vec::new();
    if no_phase {
        notes.push(Noticed::NoPhase);
    }
    if unlabelled > 0 {
        notes.push(Noticed::Unlabelled(unlabelled));
    }
    if replicas_from_cards > 0 {
        notes.push(Noticed::ReplicasFromCards(replicas_from_cards));
    }
    if fallbacks > 0 {
        notes.push(Noticed::Fallbacks(fallbacks));
    }
    if !unknown_mig.is_empty() {
        notes.push(Noticed::UnknownMig(unknown_mig.into_iter().collect()));
    }
    notes
}

/// Pods that held, waited for or used nothing go; the rest, and the nodes, are compacted.
fn compact_series(pods: &mut Pods, out_nodes: &mut BTreeMap<String, NodeSeries>) {
    for runs in pods.values_mut() {
        runs.retain(|p| !p.allocated.is_empty() || p.pending > 0.0 || !p.used.is_empty());
    }
    pods.retain(|_, runs| !runs.is_empty());
    for p in pods.values_mut().flatten() {
        p.used.compact();
    }
    for n in out_nodes.values_mut() {
        n.capacity.compact();
        n.allocated.compact();
    }
}

/// Where the data covers less than the window asked for, what the figures are over.
fn coverage_note(covered: &BTreeSet<u32>, grid: Grid) -> Option<Noticed> {
    let step = grid.step;
    let requested = grid.to() - grid.from;
    let span = covered.len() as i64 * step;
    (!covered.is_empty() && (span as f64) < 0.98 * requested as f64).then(|| Noticed::Coverage {
        covered: span,
        window: requested,
        first: covered.first().map_or(grid.from, |k| grid.start(*k)),
        last: covered.last().map_or(grid.from, |k| grid.start(*k) + step),
    })
}

/// Usage no GPU-requesting pod held, above the noise floor.
fn orphans_of(orphans: BTreeMap<(String, String, String, String), f64>) -> Vec<Orphan> {
    orphans
        .into_iter()
        // Below a tenth of a GPU-hour over the window it is noise (a device that reports
        // a sliver of activity with no pod of its own), not work to find.
        .filter(|(_, used)| *used >= ORPHAN_FLOOR)
        .map(|((node, gpu, namespace, pod), used)| Orphan {
            node,
            gpu,
            namespace,
            pod,
            used_gpu_seconds: used,
        })
        .collect()
}

/// Several clusters in one store (Thanos, Mimir) must not be merged silently: without a
/// cluster named, the data must hold one.
fn one_cluster(a: &Answers, cluster: Option<&str>) -> Result<(), super::ReviewError> {
    let clusters = a.clusters();
    if cluster.is_none() && clusters.len() > 1 {
        return Err(super::ReviewError::Data(format!(
            "the data holds {} clusters ({}): review one with `--cluster NAME`, or the fleet with `--all-clusters` (or `--cluster` once per cluster)",
            clusters.len(),
            clusters.iter().cloned().collect::<Vec<_>>().join(", ")
        )));
    }
    Ok(())
}

/// The telemetry of one cluster from the queries' answers: its nodes and pods with their series
/// per window, stage by stage.
pub(crate) fn assemble(
    a: &Answers,
    grid: Grid,
    plan: &Plan,
    catalog: &Catalog,
    cluster: Option<&str>,
    source: String,
    mut notes: Vec<Noticed>,
) -> Result<Telemetry, super::ReviewError> {
    let step = grid.step;
    let stepf = step as f64;
    one_cluster(a, cluster)?;

    let Scrapes {
        ksm,
        ksm_intervals,
        ksm_at,
        has_phase,
        cards,
        dcgm,
        dcgm_intervals,
        card_at,
    } = scrapes(a, step);

    let mut nodes = nodes_of(a, &ksm_at, stepf);
    let (reqs, node_names) = requests(a, catalog, has_phase);
    let states = pod_states(a);
    let (apps, controllers) = named_by(a);
    let node_pool = node_pools(
        plan,
        catalog,
        a,
        &mut nodes,
        (&reqs, &node_names),
        &apps,
        &controllers,
    );
    let NodeStage {
        units,
        mut out_nodes,
        replicas_from_cards,
        mut unknown_mig,
    } = node_series(plan, catalog, a, grid, &nodes, &node_pool, &cards, &ksm_at);

    let (covered, sampled) = ksm_coverage(a, grid, ksm);
    let sampled_k: BTreeSet<u32> = sampled
        .iter()
        .map(|t| ((t - grid.from) / step) as u32)
        .collect();
    let cx = PodCx {
        plan,
        catalog,
        a,
        grid,
        ksm_at: &ksm_at,
        has_phase,
        units: &units,
        states: &states,
        apps: &apps,
        controllers: &controllers,
        node_names: &node_names,
        sampled: &sampled_k,
    };
    let (mut pods, unplaced) = pods_of(&cx, &reqs, &mut out_nodes, &mut unknown_mig);
    let shared = pending_shares(plan, catalog, &units, &mut pods, &unplaced);
    if shared > 0 {
        notes.push(Noticed::PendingShared(shared));
    }

    let ucx = UsageCx {
        catalog,
        grid,
        units: &units,
        card_at: &card_at,
        dcgm,
    };
    let mut usage = usage_of(&ucx, a, &mut pods, &mut out_nodes);
    unknown_mig.append(&mut usage.unknown_mig);
    let Usage {
        unlabelled,
        orphans,
        shared_busy,
        fallbacks,
        ..
    } = usage;
    settle_usage(&mut pods, &out_nodes, shared_busy, step);

    let dcgm_gaps = dcgm_coverage(&cards, dcgm, grid, &nodes, &mut pods);
    if !dcgm_gaps.is_empty() {
        let hours: f64 = dcgm_gaps.iter().map(|g| (g.2 - g.1) as f64 / 3600.0).sum();
        notes.push(Noticed::DcgmGaps {
            hours,
            gaps: dcgm_gaps.len(),
        });
    }

    tokens(a, grid, &mut pods);
    super::serving::attach(a, &grid, &mut pods);

    notes.extend(read_notes(ReadFacts {
        no_phase: !has_phase && !reqs.is_empty(),
        unlabelled,
        replicas_from_cards,
        fallbacks,
        unknown_mig,
    }));
    compact_series(&mut pods, &mut out_nodes);
    notes.extend(coverage_note(&covered, grid));
    Ok(Telemetry {
        from: grid.from,
        to: grid.to(),
        step,
        pods,
        nodes: out_nodes,
        covered: covered.len() as i64 * step,
        covered_windows: covered.iter().map(|k| grid.start(*k)).collect(),
        sampled_windows: sampled,
        data_from: covered.first().map(|k| grid.start(*k)),
        data_to: covered.last().map(|k| grid.start(*k) + step),
        ksm_interval: ksm,
        ksm_intervals,
        rows_every: a.sample_every,
        dcgm_interval: dcgm,
        dcgm_intervals,
        dcgm_gaps,
        orphans: orphans_of(orphans),
        source,
        notes,
    })
}
