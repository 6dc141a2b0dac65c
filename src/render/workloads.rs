//! What each workload's pods need to run where the recommendation put them
//! (`workloads/values.yaml`, every kind), and the inference servers' own settings
//! (`serving/values.yaml`, only what the plan's `server` says or the pool's sharing forces).

use serde::Serialize;

use super::model::{gpus_of, taint, TaintView};
use super::request::{aks_mig, gpu_request};
use crate::catalog::Catalog;
use crate::core::Kind;
use crate::engine::recommend::Recommendation;
use crate::plan::Plan;

/// The LocalQueue every team's namespace gets (`kueue/<region>.yaml`).
pub(super) const LOCAL_QUEUE: &str = "gpuplan";

/// One workload's scheduling settings.
#[derive(Debug, Serialize)]
pub struct WorkloadView {
    /// Its key in `workloads/values.yaml`: the workload's name, or for one part of a workload
    /// split over pools, the name and the part's number (`batch-2`).
    pub entry: String,
    /// The workload it runs (its `gpuplan.io/workload` label, which the review reads).
    pub workload: String,
    /// Of a part: the region of its pool (the cluster that runs it) and how many parts the
    /// workload has.
    pub region: Option<String>,
    pub parts: usize,
    /// Its Kueue WorkloadPriorityClass (`kueue.x-k8s.io/priority-class`).
    pub priority_class: &'static str,
    pub kind: &'static str,
    /// The team's namespace, where its LocalQueue is.
    pub namespace: String,
    /// The LocalQueue its pods name (`kueue.x-k8s.io/queue-name`).
    pub queue: &'static str,
    /// The pools it runs in: one, or several when its replicas are split over AKS MIG
    /// profiles (`split`), and its pods then select any of them.
    pub pools: Vec<String>,
    pub split: bool,
    /// The node sizes its pods require (`node.kubernetes.io/instance-type`): those it was
    /// placed on, when its pool's label spans several.
    pub instance_types: Vec<String>,
    /// Every taint of those pools' nodes, AKS's spot taint included.
    pub tolerations: Vec<TaintView>,
    /// The extended resource its pods request on the pool (`nvidia.com/gpu`,
    /// `nvidia.com/mig-3g.40gb`) and how many.
    pub gpu_resource: String,
    pub gpu_count: u32,
    /// The plan's cpu and memory per replica as Kubernetes quantities, when stated.
    pub cpu: Option<String>,
    pub memory: Option<String>,
    /// User-facing: spread over nodes (and zones where there are several) with a
    /// PodDisruptionBudget, so one node's loss or drain is never an outage.
    pub user_facing: bool,
    /// Pods a gang starts together (1 for a single pod per replica).
    pub gang: u32,
    /// Pods kept running at least (a Deployment's `replicas`, an HPA's `minReplicas`) and at
    /// peak, as priced: for user-facing work at least its availability floor, one per node.
    pub replicas_min: u32,
    pub replicas_max: u32,
    /// The availability floor raised the warm pods above the plan's minimum.
    pub floor_raised: bool,
    /// An EFA gang on a node type with EFA: the interfaces each pod requests
    /// (`vpc.amazonaws.com/efa`), every one its node has, since a gang runs one pod per node.
    /// Without the request the EFA device plugin hands the pod none (NCCL falls back to TCP)
    /// and Karpenter launches the node with no EFA interfaces at all.
    pub efa_devices: Option<u32>,
    /// An EFA gang whose node type's interface count the catalog lacks: nothing is requested
    /// and the file says so.
    pub efa_count_unknown: bool,
    /// On a GPU Operator MIG pool whose nodes carry different layouts: the mig-parted
    /// configs (`nvidia.com/mig.config`) of the nodes holding its profile. Its pods require
    /// them, so a spread counts only nodes that can host a replica.
    pub mig_configs: Vec<String>,
}

/// One inference server's settings.
#[derive(Debug, Serialize)]
pub struct ServingView {
    pub workload: String,
    pub namespace: String,
    /// The memory cap the server must set, when the pool's sharing forces one (instances on
    /// a time-sliced GPU) or the plan's `server` states it; absent otherwise (the server's own
    /// default applies).
    pub gpu_memory_utilization: Option<String>,
    pub tensor_parallel_size: u32,
    /// The batch limit the plan's `server` states; absent otherwise.
    pub max_num_seqs: Option<i64>,
    pub why: String,
}

/// A cpu count or GiB figure as a Kubernetes quantity: `4`, `500m`, `32Gi`, `7.5Gi`.
fn cpu_quantity(c: f64) -> String {
    let m = (c.max(0.0) * 1000.0).round();
    if m % 1000.0 == 0.0 {
        format!("{}", m / 1000.0)
    } else {
        format!("{m}m")
    }
}

fn memory_quantity(gib: f64) -> String {
    let mib = (gib.max(0.0) * 1024.0).ceil();
    if mib % 1024.0 == 0.0 {
        format!("{}Gi", mib / 1024.0)
    } else {
        format!("{mib}Mi")
    }
}

/// Every placed workload, in the order of the pools that hold them. A Job-like workload
/// (training, batch, evaluation) split over several pools whose parts the recommendation
/// counts, or any workload split over regions, is one entry per part, each with its part's
/// replicas and its pool alone: a Job is one Kueue Workload with one pod set, which Kueue
/// gives one flavor, so a single entry of 10 over a spot flavor of 4 and an on-demand one of
/// 6 would never start (issue 74). Otherwise (a service over one region's pools, or parts
/// not counted, as for declared pools) one entry selects every pool it is in.
pub(super) fn workloads(plan: &Plan, catalog: &Catalog, rec: &Recommendation) -> Vec<WorkloadView> {
    // The same sizes for declared pools as for recommended ones (`render --declared`).
    let sizes = crate::engine::recommend::node_sizes(&rec.pools);
    let joined = joined(plan, catalog, rec, &sizes);
    let mut out = Vec::new();
    for v in joined {
        let parts: Vec<(
            &crate::engine::recommend::RecPool,
            &crate::engine::recommend::PoolPart,
        )> = rec
            .pools
            .iter()
            .filter_map(|p| {
                p.parts
                    .iter()
                    .find(|x| x.workload == v.workload)
                    .map(|x| (p, x))
            })
            .collect();
        let counted = parts.len() > 1
            && parts.len()
                == rec
                    .pools
                    .iter()
                    .filter(|p| p.workloads.contains(&v.workload))
                    .count();
        // A Job (training, batch, evaluation) is one pod set and needs its parts apart; a
        // Deployment's pods are each admitted on their own (Kueue's pod integration), so a
        // service split over one region's pools (AKS MIG profiles) stays one entry whose
        // pods run in any of them. Parts in different regions are different clusters' work.
        let regions: std::collections::BTreeSet<&str> =
            parts.iter().map(|(p, _)| p.region.as_str()).collect();
        let one_pod_set = !matches!(v.kind, "inference" | "notebook");
        if !v.split || !counted || !(one_pod_set || regions.len() > 1) {
            out.push(v);
            continue;
        }
        let n = parts.len();
        for (i, (p, part)) in parts.into_iter().enumerate() {
            let Some(wl) = plan.workload(&v.workload) else {
                continue;
            };
            let mut one = view(plan, catalog, rec, &sizes, p, wl);
            // A part's key never takes another workload's name (`batch` split beside a
            // workload named `batch-1`): the file's keys stay unique.
            let mut entry = format!("{}-{}", v.workload, i + 1);
            while plan.workload(&entry).is_some() || out.iter().any(|x| x.entry == entry) {
                entry.push_str("-part");
            }
            one.entry = entry;
            one.region = Some(p.region.clone());
            one.parts = n;
            one.replicas_min = part.warm.saturating_mul(one.gang);
            one.replicas_max = part.peak.saturating_mul(one.gang);
            one.floor_raised = false;
            out.push(one);
        }
    }
    out
}

/// One entry per workload, selecting every pool it is in.
fn joined(
    plan: &Plan,
    catalog: &Catalog,
    rec: &Recommendation,
    sizes: &Sizes,
) -> Vec<WorkloadView> {
    let mut out: Vec<WorkloadView> = Vec::new();
    for p in &rec.pools {
        for w in &p.workloads {
            let Some(wl) = plan.workload(w) else { continue };
            let tolerations: Vec<TaintView> = p.taints.iter().map(|t| taint(t)).collect();
            if let Some(x) = out.iter_mut().find(|x| &x.workload == w) {
                if !x.pools.contains(&p.pool_label) {
                    x.pools.push(p.pool_label.clone());
                }
                x.split = true;
                for t in tolerations {
                    if !x.tolerations.contains(&t) {
                        x.tolerations.push(t);
                    }
                }
                continue;
            }
            out.push(view(plan, catalog, rec, sizes, p, wl));
        }
    }
    out
}

/// The node sizes each workload's pods require (`engine::recommend::node_sizes`).
type Sizes = std::collections::BTreeMap<String, Vec<String>>;

/// A workload's entry on one pool: what its pods request there, select and tolerate, at the
/// workload's replicas.
fn view(
    plan: &Plan,
    catalog: &Catalog,
    rec: &Recommendation,
    sizes: &Sizes,
    p: &crate::engine::recommend::RecPool,
    wl: &crate::plan::Workload,
) -> WorkloadView {
    let profile = super::provider::of(rec.provider);
    let floor = catalog.assumptions.user_facing_min_nodes;
    let sku = catalog.sku(plan.provider(), &p.sku);
    let spec = sku
        .and_then(|s| catalog.sku_gpu(s))
        .and_then(|g| g.mig.as_ref());
    let tolerations: Vec<TaintView> = p.taints.iter().map(|t| taint(t)).collect();
    let (resource, count) = gpu_request(plan, catalog, p, wl, spec, aks_mig(rec, p));
    let gang = u32::try_from(wl.gang().max(1)).unwrap_or(1);
    // The same test that gives the pool its interfaces (`view::pools`).
    let efa = profile.efa
        && gang > 1
        && sku.is_some_and(|s| s.inter_node == crate::catalog::InterNode::Efa);
    let efa_devices = sku.and_then(|s| s.efa_interfaces).filter(|&n| efa && n > 0);
    let peak = u32::try_from(wl.replicas().max().max(0)).unwrap_or(0);
    let warm = wl.warm_units(floor);
    let mig_configs = resource
        .strip_prefix("nvidia.com/mig-")
        .filter(|_| p.mig_partitioner() == Some(crate::core::MigManager::GpuOperator))
        .and_then(|profile| super::mig::configs_holding(p, profile))
        .unwrap_or_default();
    WorkloadView {
        entry: wl.name.get().clone(),
        workload: wl.name.get().clone(),
        region: None,
        parts: 1,
        kind: wl.kind().as_str(),
        namespace: wl.team.get().clone(),
        queue: LOCAL_QUEUE,
        pools: vec![p.pool_label.clone()],
        split: false,
        instance_types: sizes.get(wl.name.get()).cloned().unwrap_or_default(),
        tolerations,
        gpu_resource: resource,
        gpu_count: count as u32,
        cpu: wl.cpu.as_ref().map(|c| cpu_quantity(*c.get())),
        memory: wl.memory_gib.as_ref().map(|m| memory_quantity(*m.get())),
        user_facing: wl.user_facing(),
        gang,
        replicas_min: warm.saturating_mul(gang),
        replicas_max: peak.saturating_mul(gang),
        floor_raised: warm > wl.kept_min(),
        efa_devices,
        efa_count_unknown: efa && efa_devices.is_none(),
        mig_configs,
        priority_class: super::kueue::Priority::of(wl).name(),
    }
}

/// The inference servers' settings: only what the plan's `server` states, and the memory cap
/// a time-sliced pool forces (its instances' caps add up to less than the card, so none
/// crash-loops at start). Nothing is invented.
pub(super) fn serving(plan: &Plan, _catalog: &Catalog, rec: &Recommendation) -> Vec<ServingView> {
    let mut out: Vec<ServingView> = Vec::new();
    for p in &rec.pools {
        for w in &p.workloads {
            let Some(wl) = plan.workload(w) else { continue };
            if wl.kind() != Kind::Inference || out.iter().any(|x| &x.workload == w) {
                continue;
            }
            let declared = wl
                .server
                .as_ref()
                .and_then(|s| s.gpu_memory_utilization.as_ref())
                .map(|u| *u.get());
            let (util, why) = match (p.gpu_memory_utilization, declared) {
                (Some(u), _) => (
                    Some(u),
                    format!(
                        "{} instances share each GPU; their caps add up to at most 0.95",
                        p.time_slicing_replicas.unwrap_or(1)
                    ),
                ),
                (None, Some(d)) => (
                    Some(d),
                    "the plan's setting; the GPU or slice is the instance's own".into(),
                ),
                (None, None) => (
                    None,
                    "the GPU or slice is the instance's own; the plan sets no memory cap, so the server's default applies".into(),
                ),
            };
            out.push(ServingView {
                workload: w.clone(),
                namespace: wl.team.get().clone(),
                gpu_memory_utilization: util.map(crate::core::num),
                tensor_parallel_size: gpus_of(plan, w),
                max_num_seqs: wl
                    .server
                    .as_ref()
                    .and_then(|s| s.max_num_seqs.as_ref())
                    .map(|n| *n.get()),
                why,
            });
        }
    }
    out
}
