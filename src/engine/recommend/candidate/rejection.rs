//! Why a SKU and region cannot hold a workload: the constraint it fails, and the detail.

use serde::Serialize;

/// The constraints a SKU is held to, in the order they are tested.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Constraint {
    SkuAllowList,
    GpuModelAllowList,
    Region,
    GpusPerNode,
    Mig,
    GpuMemory,
    HostCpu,
    HostMemory,
    Interconnect,
    Quota,
    /// The GPU does not compute in the model's precision (bf16 before compute capability
    /// 8.0, fp8 before 8.9).
    Precision,
    /// The provider retired the size (or sells it only in a form the plan cannot use).
    Retired,
}

impl Constraint {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Constraint::SkuAllowList => "sku allow-list",
            Constraint::GpuModelAllowList => "gpu model allow-list",
            Constraint::Region => "region",
            Constraint::GpusPerNode => "gpus per node",
            Constraint::Mig => "mig",
            Constraint::GpuMemory => "gpu memory",
            Constraint::HostCpu => "host cpu",
            Constraint::HostMemory => "host memory",
            Constraint::Interconnect => "interconnect",
            Constraint::Quota => "quota",
            Constraint::Precision => "precision",
            Constraint::Retired => "retired",
        }
    }
}

#[derive(Debug, Clone)]
pub struct Rejection {
    pub constraint: Constraint,
    pub detail: Detail,
}

pub(super) fn reject(constraint: Constraint, detail: Detail) -> Rejection {
    Rejection { constraint, detail }
}

/// The figures a SKU and region failed a constraint by (`report::why` words them).
#[derive(Debug, Clone, PartialEq)]
pub enum Detail {
    /// The catalog has no data for the provider.
    NoData {
        provider: crate::core::Provider,
    },
    /// The provider retired the size.
    Retired {
        sku: String,
    },
    /// A partitioned size gives a share of one GPU, less than a replica needs.
    GpuShare {
        need: f64,
        sku: String,
        share: f64,
    },
    /// `n` GPUs give a replica less memory than it needs (under its server's `cap` when
    /// below 1).
    GpuMemory {
        need: f64,
        n: u32,
        gpu: String,
        offered: f64,
        cap: f64,
    },
    /// A dedicated GPU gives a replica less memory under its server's cap than it needs.
    CappedMemory {
        need: f64,
        gpu: String,
        offered: f64,
        cap: f64,
    },
    /// One shared GPU has less memory than a replica needs.
    SharedMemory {
        need: f64,
        gpu: String,
        has: f64,
    },
    /// No price in the region.
    NoPrice {
        sku: String,
        region: String,
    },
    NotInSkus {
        sku: String,
    },
    NotInGpuModels {
        gpu: String,
    },
    /// The GPU does not compute in the model's precision.
    Precision {
        gpu: String,
        has: (u32, u32),
        precision: &'static str,
        needs: (u32, u32),
    },
    /// The account may not deploy the size in the region.
    Restricted {
        sku: String,
        region: String,
        why: String,
    },
    /// A replica needs more GPUs on one node than the size has.
    GpusPerNode {
        gpus: u32,
        sku: String,
        has: u32,
    },
    NoMig {
        gpu: String,
    },
    /// AKS creates no MIG instances on the GPU.
    AksNoMig {
        gpu: String,
    },
    /// The host sets MIG on the size's GPUs (SR-IOV vGPU): the guest cannot partition them.
    HostMig {
        sku: String,
        gpu: String,
    },
    /// No MIG profile holds the replica's memory.
    NoMigProfile {
        gpu: String,
        need: f64,
    },
    HostCpu {
        need: f64,
        sku: String,
        allocatable: f64,
    },
    HostMemory {
        need: f64,
        sku: String,
        allocatable: f64,
    },
    /// A gang's nodes need an interconnect the size lacks.
    Interconnect {
        gang: u32,
        sku: String,
        gap: &'static str,
    },
    /// The workload alone needs more vCPUs than a known quota.
    Quota {
        need: f64,
        family: String,
        region: String,
        limit: f64,
        from: String,
    },
}
