//! The rendered node pool, its labels and taints: what the view's stages and every
//! renderer (Terraform, MIG, Kueue, Karpenter, the operator) share.

use serde::Serialize;

use crate::plan::Plan;

#[derive(Debug, Serialize, Clone)]
pub struct PoolView {
    pub name: String,
    /// Terraform resource name.
    pub ident: String,
    /// AKS node pool name: lowercase letters and digits, at most 12 characters.
    /// AKS `temporary_name_for_rotation`: the pool AKS cycles through when a change (disk
    /// size, VM size, zones) rebuilds the pool; `tmp` and the end of the pool's own name,
    /// which carries its unique index.
    pub rotation_name: String,
    pub aks_name: String,
    pub region: String,
    pub region_alias: String,
    pub sku: String,
    pub gpu_model: String,
    pub gpus_per_node: u32,
    pub min: u32,
    pub max: u32,
    pub autoscaled: bool,
    pub spot: bool,
    /// An EC2 Capacity Block: `CAPACITY_BLOCK` with a launch template targeting it.
    pub capacity_block: bool,
    pub capacity: String,
    /// AKS managed MIG: `MIG3g` for a `3g.*` profile.
    pub gpu_instance: Option<String>,
    pub labels: Vec<KeyValue>,
    pub taints: Vec<TaintView>,
    pub reservation: Option<String>,
    pub workloads: String,
    pub monthly_cost: String,
    /// Node disk, GiB: OS, images and the pool's models (`Assumptions::node_disk_gib`).
    pub disk_gib: u32,
    /// EKS: multi-node training on an EFA type gets EFA interfaces (as many as the type
    /// supports, read by Terraform from `aws_ec2_instance_type`) and a cluster placement group.
    pub efa: bool,
    /// EKS: EFA pools get a cluster placement group, except in a Capacity Block, whose
    /// instances EC2 already places together in one UltraCluster (and whose reservation
    /// fixes their placement).
    pub placement_group: bool,
    /// EKS: the node group needs a launch template (a Capacity Block or EFA); the disk is then
    /// its root volume, since `disk_size` and `launch_template` exclude each other.
    pub launch_template: bool,
    /// Azure: the SKU's InfiniBand, for gangs that span nodes.
    pub infiniband: bool,
    /// Azure: the size reaches its GPU through SR-IOV vGPU, so AKS installs the GRID guest
    /// driver it needs (`gpu_driver = "Install"`); the GPU Operator's data-centre driver does
    /// not run in a vGPU guest and finds this one pre-installed.
    pub vgpu: bool,
    /// A multi-node gang runs here: its nodes stay in one zone.
    pub gang: bool,
    /// Whether Terraform creates this node pool: false where Karpenter alone provides its
    /// nodes (`--karpenter`, a pool with no floor).
    pub terraform: bool,
    /// Nodes Karpenter may add above the Terraform floor (`--karpenter`); 0 without.
    pub karpenter_nodes: u32,
}

#[derive(Debug, Serialize, Clone, PartialEq)]
pub struct KeyValue {
    pub key: String,
    pub value: String,
}

#[derive(Debug, Serialize, Clone, PartialEq)]
pub struct TaintView {
    /// `key=value:Effect` (AKS `node_taints`).
    pub spec: String,
    pub key: String,
    pub value: String,
    /// Kubernetes spelling (`NoSchedule`).
    pub effect: String,
    /// EKS API spelling (`NO_SCHEDULE`).
    pub eks_effect: String,
}

pub(crate) fn taint(spec: &str) -> TaintView {
    // `key=value:Effect`, as RecPool states them.
    let (kv, effect) = spec.rsplit_once(':').unwrap_or((spec, "NoSchedule"));
    let (key, value) = kv.split_once('=').unwrap_or((kv, ""));
    let eks_effect = match effect {
        "NoExecute" => "NO_EXECUTE",
        "PreferNoSchedule" => "PREFER_NO_SCHEDULE",
        _ => "NO_SCHEDULE",
    };
    TaintView {
        spec: spec.to_owned(),
        key: key.to_owned(),
        value: value.to_owned(),
        effect: effect.to_owned(),
        eks_effect: eks_effect.to_owned(),
    }
}

/// Whole GPUs one replica asks for (tensor-parallel size).
pub(crate) fn gpus_of(plan: &Plan, workload: &str) -> u32 {
    plan.workload(workload)
        .map_or(1, |w| u32::try_from(w.gpus().max(1)).unwrap_or(1))
}
