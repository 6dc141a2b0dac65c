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
    pub detail: String,
}

pub(super) fn reject(constraint: Constraint, detail: String) -> Rejection {
    Rejection { constraint, detail }
}
