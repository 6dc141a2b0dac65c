//! Karpenter for `render --karpenter`: a NodePool (with its EC2NodeClass or AKSNodeClass) for
//! the nodes of a pool above its floor, which stays a fixed Terraform node group, so the two
//! never provide the same node; none for MIG pools or a pool that is all floor.

use serde::Serialize;

use super::model::{KeyValue, PoolView, TaintView};
use crate::catalog::Sku;
use crate::engine::recommend::{RecPool, Recommendation};

/// One Karpenter NodePool and its node class (EC2NodeClass or AKSNodeClass).
#[derive(Debug, Serialize)]
pub struct KarpenterView {
    pub name: String,
    /// The node pool it was made for, named apart when its size cannot join the NodePool of
    /// its label (labels or taints differ: workloads of another segment).
    #[serde(skip)]
    pub own_name: String,
    pub node_class: String,
    /// Its instance types: the pool's size, or every size of a pool of several above its
    /// floor (each pod's node affinity names the size it was placed on among them).
    pub instance_types: Vec<String>,
    pub region: String,
    /// `karpenter.sh/capacity-type`: spot, on-demand or reserved.
    pub capacity_type: &'static str,
    pub arch: &'static str,
    pub labels: Vec<KeyValue>,
    pub taints: Vec<TaintView>,
    pub limit_cpu: u32,
    pub limit_memory_gib: u32,
    pub limit_gpus: u32,
    /// Gangs: never disrupted voluntarily, never expired mid-run.
    pub gang: bool,
    /// User-facing floors: only empty nodes are consolidated.
    pub floor: bool,
    pub disk_gib: u32,
    /// EKS: the gang's cluster placement group (rendered in terraform/).
    pub placement_group: bool,
    /// EKS: a Capacity Block or capacity reservation, selected by its `gpuplan.io/pool` tag.
    pub reservation: bool,
    /// AKS: an SR-IOV vGPU size, whose GRID guest driver AKS installs (`gpu.mode: Driver`).
    pub vgpu: bool,
    /// A spot NodePool's way back: it also allows `on-demand`, which Karpenter launches when
    /// spot cannot be had (it prefers spot, caches an unavailable spot offering and then tries
    /// on-demand: karpenter docs, concepts/scheduling, "Capacity Type"), with what that costs.
    pub on_demand_fallback: Option<FallbackView>,
}

/// What a spot NodePool's on-demand fallback costs: the on-demand rate of its size, and the
/// month of its nodes above the floor at that rate where spot was priced (`None` without an
/// on-demand price).
#[derive(Debug, Serialize, Clone, PartialEq)]
pub struct FallbackView {
    pub usd_per_node_hour: Option<f64>,
    /// Every one of its nodes on demand for the hours the spot price assumed.
    pub monthly_usd: Option<f64>,
    /// The same nodes at the spot price, restart waste included: what the plan assumes.
    pub spot_monthly_usd: f64,
}

/// A pool `render --karpenter` gives no NodePool, and why.
#[derive(Debug, Serialize)]
pub struct SkippedView {
    pub name: String,
    pub why: &'static str,
}

/// The NodePool for a pool's nodes above its floor, with `v` cut to the floor Terraform keeps
/// (none where the pool has no floor); or why the pool gets none. `mig` is whether AKS
/// (`Some(true)`) or the GPU Operator (`Some(false)`) partitions its GPUs.
pub(super) fn node_pool(
    rec: &Recommendation,
    p: &RecPool,
    v: &mut PoolView,
    sku: Option<&Sku>,
    members: &[&crate::plan::Workload],
    mig: Option<bool>,
    on_demand_usd_per_hour: Option<f64>,
) -> Result<KarpenterView, SkippedView> {
    let karpenter_capacity = super::provider::karpenter_capacity(p.capacity);
    let profile = super::provider::of(rec.provider);
    // No NodePool where the nodes must be partitioned before pods can use them:
    // Karpenter sizes a node by the resources its instance type offers
    // (`nvidia.com/gpu`), never `nvidia.com/mig-*`, so a pod asking for a MIG instance
    // would never get a node; and AKS's `gpu_instance` is not a NodePool setting.
    let skip = if mig == Some(true) {
        Some("its GPUs are partitioned by AKS (`gpu_instance`), which node auto-provisioning cannot set")
    } else if mig == Some(false) {
        Some("its pods request `nvidia.com/mig-*`, which Karpenter's instance types never offer (they offer `nvidia.com/gpu`), so Karpenter would never launch a node for them")
    } else {
        None
    };
    if let Some(why) = skip {
        return Err(SkippedView {
            name: v.name.clone(),
            why,
        });
    }
    // A spot gang's nodes all floor are Karpenter's alone, so that they have a way back: a
    // Terraform spot node group keeps asking for spot, where Karpenter launches on-demand
    // when spot cannot be had (issue 74). Its pods always wait for all its nodes, and a
    // gang's nodes are never consolidated while it runs.
    if v.min == v.max && v.gang && p.capacity.is_evictable() {
        v.min = 0;
    }
    if v.min == v.max {
        return Err(SkippedView {
            name: v.name.clone(),
            why: "all its nodes are its floor, which the Terraform node group keeps warm",
        });
    }
    // One source of nodes per node: the floor stays a fixed Terraform node group
    // (warm before pods exist), Karpenter adds the rest; a pool with no floor is
    // Karpenter's alone. Together they never exceed the pool's maximum.
    let floor_user_facing = v.min > 0 && members.iter().any(|w| w.user_facing());
    v.karpenter_nodes = v.max - v.min;
    v.max = v.min;
    v.autoscaled = profile.spot_autoscaled && v.spot && v.min > 0;
    v.terraform = v.min > 0;
    let (vcpus, memory) = sku.map_or((0, 0.0), |s| (s.vcpus, s.memory_gib));
    // The sizes of a pool of several are one NodePool, named by the label they share.
    let name = if p.pool_label == p.name {
        v.name.clone()
    } else {
        p.pool_label.clone()
    };
    Ok(KarpenterView {
        own_name: v.name.clone(),
        node_class: format!("gpuplan-{name}"),
        name,
        instance_types: vec![v.sku.clone()],
        region: v.region.clone(),
        capacity_type: karpenter_capacity,
        arch: sku.map_or("amd64", crate::catalog::Sku::cpu_architecture),
        // Labels in the providers' own domains are theirs to set.
        labels: v
            .labels
            .iter()
            .filter(|l| {
                !l.key.starts_with("kubernetes.azure.com/")
                    && !l.key.starts_with("eks.amazonaws.com/")
            })
            .cloned()
            .collect(),
        taints: v.taints.clone(),
        limit_cpu: vcpus * v.karpenter_nodes,
        limit_memory_gib: (memory * f64::from(v.karpenter_nodes)).ceil() as u32,
        limit_gpus: v.gpus_per_node * v.karpenter_nodes,
        gang: v.gang,
        floor: floor_user_facing,
        disk_gib: profile
            .karpenter_disk_gib
            .map_or(v.disk_gib, |(lo, hi)| v.disk_gib.clamp(lo, hi)),
        placement_group: v.placement_group,
        reservation: p.capacity.is_held_capacity(),
        vgpu: v.vgpu,
        on_demand_fallback: p
            .capacity
            .is_evictable()
            .then(|| fallback(p, on_demand_usd_per_hour)),
    })
}

/// The fallback's price: the spot pool's paid node-hours (its cost over its rate and restart
/// waste) at the on-demand rate.
fn fallback(p: &RecPool, on_demand: Option<f64>) -> FallbackView {
    let per_hour = p.usd_per_node_hour * p.spot_waste_factor.unwrap_or(1.0);
    let node_hours = if per_hour > 0.0 {
        p.monthly_cost_usd / per_hour
    } else {
        0.0
    };
    FallbackView {
        usd_per_node_hour: on_demand,
        monthly_usd: on_demand.map(|od| crate::core::cents(od * node_hours)),
        spot_monthly_usd: p.monthly_cost_usd,
    }
}

/// One NodePool per name: the node sizes of a pool of several joined into one, with every
/// instance type and the sum of their limits, in the order the first size came.
pub(super) fn join(views: Vec<KarpenterView>) -> Vec<KarpenterView> {
    let mut out: Vec<KarpenterView> = Vec::with_capacity(views.len());
    for mut k in views {
        let Some(j) = out.iter_mut().find(|j| j.name == k.name) else {
            out.push(k);
            continue;
        };
        // A NodePool's nodes carry one set of labels and taints, and its node class one driver
        // mode: a size whose differ keeps a NodePool of its own, under its own name.
        if j.labels != k.labels
            || j.taints != k.taints
            || j.capacity_type != k.capacity_type
            || j.vgpu != k.vgpu
        {
            k.name = k.own_name.clone();
            k.node_class = format!("gpuplan-{}", k.name);
            out.push(k);
            continue;
        }
        for t in k.instance_types {
            if !j.instance_types.contains(&t) {
                j.instance_types.push(t);
            }
        }
        j.limit_cpu += k.limit_cpu;
        j.limit_memory_gib += k.limit_memory_gib;
        j.limit_gpus += k.limit_gpus;
        j.floor |= k.floor;
        j.disk_gib = j.disk_gib.max(k.disk_gib);
    }
    out
}
