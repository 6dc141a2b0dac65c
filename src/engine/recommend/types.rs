//! The recommendation as `gpuplan.recommendation/v1` serialises it: pools, workload and team
//! costs, what could not be met, the comparison with declared pools, findings and data dates.

use super::demand::Segment;
use crate::core::{Capacity, Provider, Sharing};
use indexmap::IndexMap;
use serde::Serialize;
pub(crate) const SCHEMA: &str = "gpuplan.recommendation/v1";

/// The answer.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Recommendation {
    pub schema: &'static str,
    pub plan: String,
    pub provider: Provider,
    pub regions: Vec<String>,
    /// Expected monthly cost: floors all month, peaks for the workloads' hours.
    pub total_monthly_cost_usd: f64,
    /// Every pool at its maximum for the whole month (what `monthly_budget` is held to).
    pub total_monthly_cost_at_max_usd: f64,
    pub pools: Vec<RecPool>,
    pub workloads: Vec<WorkloadCost>,
    pub teams: Vec<TeamCost>,
    pub unsatisfied: Vec<Unsatisfied>,
    pub comparison: Option<Comparison>,
    pub findings: Vec<Finding>,
    pub data: Vec<DataUsed>,
    /// How far this fleet can be from the cheapest: a lower bound on any fleet for the
    /// satisfiable workloads under the plan's constraints (`bound`). Absent for declared
    /// pools.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lower_bound: Option<LowerBound>,
}

/// A lower bound on the monthly cost of any fleet for the satisfiable workloads: the LP
/// relaxation over every SKU, region and capacity type each may use, nodes fractional.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct LowerBound {
    /// No fleet meeting the same constraints costs less a month.
    pub monthly_cost_usd: f64,
    /// The recommended fleet's expected cost over the bound, less one (0.018: 1.8% above).
    pub gap: f64,
    /// Whether the LP reached its optimum; when not, the figure is still a bound, only looser.
    pub optimal: bool,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Nodes {
    pub min: u32,
    pub max: u32,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct RecPool {
    pub name: String,
    pub provider: Provider,
    pub region: String,
    pub sku: String,
    pub gpu_model: String,
    pub gpus_per_node: u32,
    pub nodes: Nodes,
    pub capacity: Capacity,
    pub sharing: Sharing,
    pub segment: Segment,
    /// Per-GPU MIG layout when every GPU carries the same one.
    pub mig_layout: Option<IndexMap<String, u32>>,
    /// Named per-GPU layouts with how many GPUs carry each (mixed MIG, gpu-operator).
    pub mig_configs: Vec<MigConfig>,
    /// How many times the nodes the layouts fill are repeated: more than 1 where the pool's
    /// availability floor keeps more nodes than its MIG packing fills, each added node
    /// filled as the first ones (`mig_configs` counts every copy). Not in the JSON contract.
    #[serde(skip)]
    pub mig_node_sets: u32,
    pub time_slicing_replicas: Option<u32>,
    /// Who partitions the pool's GPUs: the pool's own `mig_manager` for a declared pool,
    /// the cluster's for a recommended one (render writes `gpu_instance` or mig-parted
    /// configs by it). Not part of the JSON contract.
    #[serde(skip)]
    pub mig_manager: crate::core::MigManager,
    /// The memory cap each inference server on a shared GPU must set.
    pub gpu_memory_utilization: Option<f64>,
    pub workloads: Vec<String>,
    /// Of each workload, what this pool carries of it: a workload split over pools (by a
    /// quota, a fill or regions) has a part in each, and each part runs as its own Job or
    /// Deployment (Kueue gives one pod set one flavor). Empty for declared pools, whose
    /// plan does not say.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub parts: Vec<PoolPart>,
    pub monthly_cost_usd: f64,
    pub monthly_cost_at_max_usd: f64,
    pub usd_per_node_hour: f64,
    /// Spot pools: paid node-hours per useful node-hour (interruptions and restarts).
    pub spot_waste_factor: Option<f64>,
    pub gpus: Nodes,
    pub stranded: Option<Stranded>,
    pub labels: IndexMap<String, String>,
    pub taints: Vec<String>,
    #[schemars(with = "String")]
    pub why: super::reason::Why,
    pub considered: Vec<Alternative>,
    pub capacity_options: Vec<CapacityOption>,
    /// Nodes the price assumes bought as reservations (`reserved-1y`/`reserved-3y`: Reserved
    /// Instances or Azure reservations); 0 for other capacity. What the purchase list asks to
    /// buy (`render`: purchases.json).
    pub reserved_nodes: u32,
    /// A Capacity Block's hours paid in a month: the shortest length EC2 sells that covers
    /// its work, at most the month (`--write-plan` and the purchase list give the length
    /// sold, `cloud::Profile::sold_block`); none for other capacity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block_hours: Option<f64>,
    /// The `gpuplan.io/pool` label its nodes carry and its workloads select: its own name,
    /// or, for one node size of a pool of several, the name of the pool's first size. Pools
    /// of one GPU model, region, segment, capacity type and sharing settings (whole GPUs or
    /// time-sliced, never MIG or gangs) share it; each workload's pods still require the size
    /// they were placed on (`WorkloadCost::node_sizes`), and `render --karpenter` makes the
    /// sizes one NodePool.
    pub pool_label: String,
}

/// What one pool carries of a workload: its replicas (gangs, for a gang) at peak and those
/// kept warm.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct PoolPart {
    pub workload: String,
    pub peak: u32,
    pub warm: u32,
}

impl RecPool {
    /// Whether this pool is one node size of a pool of several (its label shared with a pool
    /// of another size among `pools`).
    pub fn one_of_several_sizes(&self, pools: &[RecPool]) -> bool {
        pools
            .iter()
            .any(|q| q.pool_label == self.pool_label && q.sku != self.sku)
    }
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct MigConfig {
    pub name: String,
    pub layout: IndexMap<String, u32>,
    pub gpus: u32,
}

/// Capacity that is paid for and not used at peak.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Stranded {
    /// MIG compute slices left unconfigured or unused.
    pub mig_compute_slices: u32,
    pub mig_memory_slices: u32,
    /// Time-sliced shares or whole GPUs nothing is placed on.
    pub gpu_units: u32,
    /// MIG instances configured (AKS creates all a profile allows) that no replica uses.
    pub mig_unused_instances: u32,
    pub optimal_packing: bool,
    pub packing_lower_bound_gpus: Option<u32>,
}

crate::core::named_enum! {
    /// Why an alternative is listed beside a pool.
    pub enum AlternativeKind {
        /// For a pool whose GPUs idle because its replicas run out of vCPUs or RAM first, the
        /// option that idles fewer for the least money per GPU given back.
        FewerGpus => "fewer-gpus",
        /// Among the next cheapest options.
        NextCheapest => "next-cheapest",
        /// An option the search did not weigh, and why.
        NotConsidered => "not-considered",
        /// A cheaper size a known quota closed to the pool's workloads: what the pool would
        /// cost there, and the quota.
        QuotaClosed => "quota-closed",
    }
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Alternative {
    pub sku: String,
    pub region: String,
    pub capacity: Capacity,
    pub monthly_cost_usd: Option<f64>,
    pub delta_usd: Option<f64>,
    /// GPUs the alternative provisions at peak, when it was packed.
    pub gpus: Option<u32>,
    /// Why it is listed.
    #[schemars(with = "String")]
    pub kind: AlternativeKind,
    #[schemars(with = "String")]
    pub note: super::reason::AltNote,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct CapacityOption {
    pub capacity: Capacity,
    pub monthly_cost_usd: f64,
    #[schemars(with = "String")]
    pub note: super::reason::CapacityNote,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct WorkloadCost {
    pub workload: String,
    pub team: String,
    pub pool: Option<String>,
    /// The other pools its replicas are split over (AKS MIG profiles under the single
    /// strategy); empty when `pool` holds them all.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub also_pools: Vec<String>,
    /// The node sizes its pods require (the sizes it was placed and priced on), when its
    /// pool's label spans several; empty otherwise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub node_sizes: Vec<String>,
    pub monthly_cost_usd: f64,
    pub usd_per_million_tokens: Option<f64>,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct TeamCost {
    pub team: String,
    pub monthly_cost_usd: f64,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Unsatisfied {
    pub workload: String,
    pub constraint: &'static str,
    #[schemars(with = "String")]
    pub message: super::reason::Unmet,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Comparison {
    pub today_monthly_cost_usd: f64,
    pub recommended_monthly_cost_usd: f64,
    pub saving_usd: f64,
    pub changes: Vec<Change>,
    /// Declared pools with no price (a Capacity Block whose block price is unknown offline):
    /// neither they nor their workloads' recommended cost are in the totals above.
    pub not_compared: Vec<String>,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Change {
    pub declared_pool: String,
    pub today_monthly_cost_usd: Option<f64>,
    /// What the declared pool's workloads cost in the recommended pools.
    pub recommended_monthly_cost_usd: f64,
    pub saving_usd: Option<f64>,
    pub moves_to: Vec<String>,
    #[schemars(with = "String")]
    pub note: super::reason::ChangeNote,
}

/// What made a recommendation's finding: a `check` rule (the budget, a quota), or one of the
/// recommender's own notes, which are not rules and take no `[[allow]]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FindingCode {
    Rule(crate::diag::RuleId),
    /// A MIG packing not proven optimal within the search budget.
    MigPacking,
    /// A pool that runs out of vCPUs or RAM before GPUs.
    IdleGpus,
    /// A gang on spot that must be re-acquired whole after an interruption, with no
    /// availability signal offline, and a fallback only where Karpenter renders one.
    SpotGang,
}

impl FindingCode {
    pub fn as_str(self) -> &'static str {
        match self {
            FindingCode::Rule(r) => r.as_str(),
            FindingCode::MigPacking => "mig-packing",
            FindingCode::IdleGpus => "idle-gpus",
            FindingCode::SpotGang => "spot-gang",
        }
    }
}

crate::core::as_text!(FindingCode);

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Finding {
    #[schemars(with = "String")]
    pub rule: FindingCode,
    pub severity: crate::diag::Severity,
    #[schemars(with = "String")]
    pub message: super::reason::Said,
    pub workload: Option<String>,
    pub pool: Option<String>,
    /// Why the finding is accepted: the `[[allow]]` that matched it (`rules::settle_recommendation`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<String>")]
    pub suppressed: Option<super::reason::Accepted>,
    /// Where in the plan it points, and how to fix it, for a finding a rule made (as `check`
    /// reports it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub column: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub help: Option<String>,
}

impl Finding {
    pub(crate) fn new(
        rule: FindingCode,
        severity: crate::diag::Severity,
        message: super::reason::Said,
    ) -> Finding {
        Finding {
            rule,
            severity,
            message,
            workload: None,
            pool: None,
            suppressed: None,
            file: None,
            line: None,
            column: None,
            help: None,
        }
    }
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct DataUsed {
    pub file: String,
    pub as_of: String,
    /// The source records no date: `as_of` is the day its rows were taken into gpuplan.
    pub undated: bool,
    pub source: String,
}

impl DataUsed {
    /// "as of 2025-11-30", or "undated (taken 2026-12-02)".
    pub(crate) fn dated(&self) -> String {
        crate::catalog::source_dated(&self.as_of, self.undated)
    }
}

impl Recommendation {
    /// `pools` for a plan, with the plan's header, their totals and the data they rest on;
    /// no workload costs, findings or comparison yet.
    pub(super) fn of(
        plan: &crate::plan::Plan,
        catalog: &crate::catalog::Catalog,
        pools: Vec<RecPool>,
    ) -> Recommendation {
        let total: f64 = pools.iter().map(|p| p.monthly_cost_usd).sum();
        let at_max: f64 = pools.iter().map(|p| p.monthly_cost_at_max_usd).sum();
        Recommendation {
            schema: SCHEMA,
            plan: plan.name().to_owned(),
            provider: plan.provider(),
            regions: plan.regions().map(str::to_owned).collect(),
            total_monthly_cost_usd: crate::core::cents(total),
            total_monthly_cost_at_max_usd: crate::core::cents(at_max),
            pools,
            workloads: Vec::new(),
            teams: Vec::new(),
            unsatisfied: Vec::new(),
            comparison: None,
            findings: Vec::new(),
            lower_bound: None,
            data: catalog
                .sources_for(plan.provider())
                .map(|s| DataUsed {
                    file: s.file.clone(),
                    as_of: s.as_of.to_string(),
                    undated: s.undated,
                    source: s.source.clone(),
                })
                .collect(),
        }
    }

    /// The plan cannot be met: a workload has no SKU, or budget or quota is exceeded.
    pub(crate) fn unsatisfiable(&self) -> bool {
        !self.unsatisfied.is_empty()
            || self
                .findings
                .iter()
                .any(|f| f.severity == crate::diag::Severity::Error && f.suppressed.is_none())
    }
}
