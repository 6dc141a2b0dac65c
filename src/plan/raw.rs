//! The plan file as written (format version 1): every value a finding may cite keeps its span.

use std::fmt;

use indexmap::IndexMap;
use schemars::gen::SchemaGenerator;
use schemars::schema::{InstanceType, Schema, SchemaObject};
use schemars::JsonSchema;
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::Deserialize;

pub(super) use crate::core::{Capacity, Kind, MigManager, Provider, ReservationTerm, Sharing, Sp};

/// A gpuplan plan file.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawPlan {
    /// Plan format version; must be 1.
    pub version: Sp<i64>,
    /// What the plan is and who answers for it.
    pub plan: Sp<PlanMeta>,
    /// The cluster the pools belong to.
    pub cluster: Option<Sp<Cluster>>,
    /// The demand: one entry per workload.
    #[serde(default)]
    pub workload: Vec<Sp<Workload>>,
    /// Today's node pools (or those proposed in a pull request).
    #[serde(default)]
    pub pool: Vec<Sp<Pool>>,
    /// Known quota per region and VM family (Azure) or quota code (AWS).
    #[serde(default)]
    pub quota: Vec<Sp<Quota>>,
    /// Who decided that a named group of workloads may share a fault domain.
    #[serde(default)]
    pub decision: Vec<Sp<Decision>>,
    /// Suppressed findings, each with a reason, an approver and optionally an expiry date.
    #[serde(default)]
    pub allow: Vec<Sp<Allow>>,
    /// Rule levels this plan raises (lowering one is done only through `[[allow]]`).
    pub rules: Option<Sp<RuleLevels>>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RuleLevels {
    /// Rule ids reported as errors in this plan, e.g. `["GP007", "GP012"]`.
    #[serde(default)]
    pub deny: Vec<Sp<String>>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PlanMeta {
    /// Plan name: a DNS-1123 label (a-z, 0-9, `-`, at most 63 characters).
    pub name: Sp<String>,
    /// Who answers for this plan.
    pub owner: Sp<String>,
    /// Cloud provider.
    pub provider: Sp<Provider>,
    /// Candidate regions, in order of preference.
    pub regions: Sp<Vec<Sp<String>>>,
    /// Hours a month that capacity runs (default 730).
    pub hours_per_month: Option<Sp<f64>>,
    /// Monthly budget in USD; a plan that costs more is an error (GP017).
    pub monthly_budget: Option<Sp<f64>>,
    /// The longest reservation the recommender may propose: `none`, `1y` (default) or `3y`.
    /// How long the work will live is a decision a person records here.
    pub reservation_term: Option<Sp<ReservationTerm>>,
    /// Azure subscription ID whose quota and SKU availability `catalog refresh --plan` reads
    /// (a flag or `AZURE_SUBSCRIPTION_ID` takes precedence).
    pub subscription: Option<Sp<String>>,
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Cluster {
    /// Cluster name.
    pub name: Option<Sp<String>>,
    /// Who manages MIG geometry: `aks` (one profile per node pool, AKS `gpu_instance`) or
    /// `gpu-operator` (per-node mig-parted layouts, mixed strategy).
    pub mig_manager: Option<Sp<MigManager>>,
    /// The device plugin's `failRequestsGreaterThanOne` as deployed (plugin default: false).
    pub fail_requests_greater_than_one: Option<Sp<bool>>,
    /// vCPUs the cluster's DaemonSets request on every GPU node (kube-proxy, CNI and CSI node
    /// drivers, monitoring and logging agents). The recommender takes it off each node's
    /// vCPUs with the kubelet's reservation; default in providers/assumptions.toml.
    pub daemonset_cpu: Option<Sp<f64>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Precision {
    Fp32,
    Bf16,
    Fp16,
    Fp8,
    Int8,
    Int4,
}

impl Precision {
    /// The plan's spelling.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Precision::Fp32 => "fp32",
            Precision::Bf16 => "bf16",
            Precision::Fp16 => "fp16",
            Precision::Fp8 => "fp8",
            Precision::Int8 => "int8",
            Precision::Int4 => "int4",
        }
    }

    pub(crate) fn bytes_per_param(self) -> f64 {
        match self {
            Precision::Fp32 => 4.0,
            Precision::Bf16 | Precision::Fp16 => 2.0,
            Precision::Fp8 | Precision::Int8 => 1.0,
            Precision::Int4 => 0.5,
        }
    }
}

/// An integer, or `{ min = .., max = .. }` for an autoscaled count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Count {
    Fixed(i64),
    Range { min: i64, max: i64 },
}

impl Count {
    pub(crate) fn min(self) -> i64 {
        match self {
            Count::Fixed(n) => n,
            Count::Range { min, .. } => min,
        }
    }
    pub fn max(self) -> i64 {
        match self {
            Count::Fixed(n) => n,
            Count::Range { max, .. } => max,
        }
    }
    /// Each bound `k` times (gangs to members, members to GPUs), in the same form.
    pub(crate) fn times(self, k: i64) -> Count {
        match self {
            Count::Fixed(n) => Count::Fixed(n * k),
            Count::Range { min, max } => Count::Range {
                min: min * k,
                max: max * k,
            },
        }
    }
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct CountRange {
    /// Lower bound.
    min: i64,
    /// Upper bound.
    max: i64,
}

#[derive(JsonSchema)]
#[serde(untagged)]
#[allow(dead_code)] // only its schema is used
enum CountSchema {
    Fixed(i64),
    Range(CountRange),
}

impl JsonSchema for Count {
    fn schema_name() -> String {
        "Count".into()
    }
    fn json_schema(gen: &mut SchemaGenerator) -> Schema {
        CountSchema::json_schema(gen)
    }
}

impl<'de> Deserialize<'de> for Count {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Count;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an integer or a table `{ min = .., max = .. }`")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Count, E> {
                Ok(Count::Fixed(v))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Count, E> {
                i64::try_from(v)
                    .map(Count::Fixed)
                    .map_err(|_| E::custom("count is too large"))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Count, A::Error> {
                let r = CountRange::deserialize(de::value::MapAccessDeserializer::new(map))?;
                Ok(Count::Range {
                    min: r.min,
                    max: r.max,
                })
            }
        }
        d.deserialize_any(V)
    }
}

/// A TOML date (`2026-11-02`), without a time.
#[derive(Debug, Clone, Deserialize)]
#[serde(transparent)]
pub struct PlanDate(pub toml::value::Datetime);

impl JsonSchema for PlanDate {
    fn schema_name() -> String {
        "Date".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        SchemaObject {
            instance_type: Some(InstanceType::String.into()),
            format: Some("date".into()),
            ..Default::default()
        }
        .into()
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Model {
    /// Parameters in billions.
    pub params_billion: Sp<f64>,
    /// Weight precision: fp32, bf16, fp16, fp8, int8, int4.
    pub precision: Sp<Precision>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Server {
    /// Inference engine, e.g. `vllm`.
    pub engine: Sp<String>,
    /// Share of the visible GPU memory the engine may take (vLLM `--gpu-memory-utilization`);
    /// a per-instance limit, default 0.92 for vLLM.
    pub gpu_memory_utilization: Option<Sp<f64>>,
    /// Tensor-parallel size as deployed.
    pub tensor_parallel_size: Option<Sp<i64>>,
    /// The most requests one engine batches at once (vLLM `--max-num-seqs`); `review` reads
    /// a replica's slots from it where the servers never queued long enough to show it.
    pub max_num_seqs: Option<Sp<i64>>,
}

impl Server {
    /// Whether the engine is vLLM, whose serving metrics `review` reads.
    pub(crate) fn is_vllm(&self) -> bool {
        self.engine.get().eq_ignore_ascii_case("vllm")
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Workload {
    /// Unique DNS-1123 label.
    pub name: Sp<String>,
    /// Namespace and cost owner.
    pub team: Sp<String>,
    /// training | inference | batch | notebook | evaluation.
    pub kind: Sp<Kind>,
    /// A person waits on it (default false).
    pub user_facing: Option<Sp<bool>>,
    /// Replica count (>= 1), or `{ min, max }` when autoscaled.
    pub replicas: Option<Sp<Count>>,
    /// What an autoscaled workload runs on average over its hours, in the units of its count
    /// (`replicas`, else `gangs`; between its `min` and `max`; may be fractional): the expected cost
    /// follows it, the at-maximum cost stays at `max`. `review --write-plan` writes the
    /// measured mean.
    pub typical_replicas: Option<Sp<f64>>,
    /// Gang size: replicas that must start together across nodes (training), one per node.
    /// With `nodes`, `replicas` counts every member of every gang (a multiple of `nodes`).
    pub nodes: Option<Sp<i64>>,
    /// How many independent gangs of `nodes` run (default: `replicas / nodes`, else 1); an
    /// integer or `{ min, max }`. `replicas`, when also given, must be `gangs x nodes`.
    pub gangs: Option<Sp<Count>>,
    /// Whole GPUs per replica (default 1 unless a fraction is given).
    pub gpus: Option<Sp<i64>>,
    /// Share of one GPU's compute (0 < f < 1).
    pub gpu_fraction: Option<Sp<f64>>,
    /// GPU memory needed per replica, GiB.
    pub gpu_memory_gib: Option<Sp<f64>>,
    /// KV cache (or activation) memory the replica needs on top of its weights, GiB.
    pub kv_cache_gib: Option<Sp<f64>>,
    /// Host vCPUs per replica.
    pub cpu: Option<Sp<f64>>,
    /// Host RAM per replica, GiB.
    pub memory_gib: Option<Sp<f64>>,
    /// dedicated (default) | mig | time-slicing | mps | shared-server.
    pub sharing: Option<Sp<Sharing>>,
    /// Allowed GPU models (catalog names).
    pub gpu_models: Option<Sp<Vec<Sp<String>>>>,
    /// Allowed provider SKUs.
    pub skus: Option<Sp<Vec<Sp<String>>>>,
    /// May run on spot capacity.
    pub interruptible: Option<Sp<bool>>,
    /// How often work is checkpointed off the node, minutes.
    pub checkpoint_minutes: Option<Sp<f64>>,
    /// Minutes back to work after an interruption (re-acquire nodes, pull image, load weights).
    pub restart_minutes: Option<Sp<f64>>,
    /// Expected running hours a month (default: the plan's).
    pub hours_per_month: Option<Sp<f64>>,
    /// Expected busy share of allocated GPU time (0 < u <= 1).
    pub utilization: Option<Sp<f64>>,
    /// May drop to zero replicas when idle.
    pub scale_to_zero: Option<Sp<bool>>,
    /// Named group that knowingly shares a fault domain (needs a `[[decision]]`).
    pub fault_domain: Option<Sp<String>>,
    /// Model size and precision, to derive memory.
    pub model: Option<Sp<Model>>,
    /// Inference server settings as deployed.
    pub server: Option<Sp<Server>>,
    /// Throughput per replica, tokens/s (cost per 1M tokens).
    pub tokens_per_second: Option<Sp<f64>>,
    /// Time-to-first-token objective, seconds at the 95th percentile: `review` sizes an
    /// inference workload's replicas from its serving metrics against it.
    pub ttft_p95_seconds: Option<Sp<f64>>,
    /// Requests GPUs through Kubernetes Dynamic Resource Allocation (ResourceClaims).
    pub dra: Option<Sp<bool>>,
    /// Nodes the pools of a user-facing workload keep at least (default 2, from
    /// providers/assumptions.toml: one node failure is then not an outage). Below the default
    /// it is a decision GP033 asks to record with an `[[allow]]`.
    pub availability_floor: Option<Sp<i64>>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Pool {
    /// Unique DNS-1123 label.
    pub name: Sp<String>,
    /// Provider SKU (VM size or instance type).
    pub sku: Sp<String>,
    /// Region (one of the plan's regions).
    pub region: Sp<String>,
    /// Node count, or `{ min, max }` for an autoscaled pool.
    pub nodes: Sp<Count>,
    /// on-demand | spot | reserved-1y | reserved-3y | capacity-reservation (default on-demand).
    pub capacity: Option<Sp<Capacity>>,
    /// The Capacity Block's length in hours (`capacity = "capacity-block"`): 24-hour steps up
    /// to 14 days, 7-day steps up to 182 days, as EC2 sells them. The block is paid for all of
    /// it; a block longer than a month is paid every hour of the month.
    pub block_hours: Option<Sp<f64>>,
    /// dedicated | mig | time-slicing | mps (default dedicated).
    pub sharing: Option<Sp<Sharing>>,
    /// Device plugin replicas per GPU (time-slicing / mps), >= 2.
    pub time_slicing_replicas: Option<Sp<i64>>,
    /// Uniform MIG profile (AKS `gpu_instance`).
    pub mig_profile: Option<Sp<String>>,
    /// Per-GPU MIG layout, profile -> count (gpu-operator / mig-parted).
    pub mig_layout: Option<Sp<IndexMap<String, Sp<i64>>>>,
    /// Several per-GPU MIG layouts (gpu-operator / mig-parted), each with how many of the
    /// pool's GPUs (at its maximum size) carry it: `[{ layout = { "3g.40gb" = 2 }, gpus = 3 }]`.
    pub mig_layouts: Option<Sp<Vec<Sp<MigLayouts>>>>,
    /// Who manages this pool's MIG geometry, overriding `cluster.mig_manager`: `aks` (one
    /// `gpu_instance` profile per pool; Azure only) or `gpu-operator` (mig-parted layouts).
    pub mig_manager: Option<Sp<MigManager>>,
    /// Workloads meant to land here.
    #[serde(default)]
    pub workloads: Vec<Sp<String>>,
    /// The `gpuplan.io/pool` label its nodes carry, when it is one node size of a pool of
    /// several: the name of that pool's first size, which has the same region, GPU model,
    /// capacity and sharing (whole GPUs or time-sliced). Default: its own name.
    pub pool_label: Option<Sp<String>>,
}

/// One of a pool's per-GPU MIG layouts and how many GPUs carry it.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MigLayouts {
    /// Profile -> count on one GPU.
    pub layout: Sp<IndexMap<String, Sp<i64>>>,
    /// GPUs of the pool (at its maximum size) with this layout.
    pub gpus: Sp<i64>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Quota {
    /// Region the quota applies to.
    pub region: Sp<String>,
    /// Azure VM family (e.g. `standardNCADSA100v4Family`, `lowPriorityCores`) or AWS quota code.
    pub family: Sp<String>,
    /// vCPU limit.
    pub vcpus: Sp<f64>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Decision {
    /// The fault domain name workloads refer to.
    pub fault_domain: Sp<String>,
    /// Who decided.
    pub decided_by: Sp<String>,
    /// When.
    pub date: Sp<PlanDate>,
    /// Why the shared blast radius is acceptable.
    pub reason: Sp<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Allow {
    /// Rule id, e.g. `GP012`.
    pub rule: Sp<String>,
    /// Workload the suppression applies to.
    pub workload: Option<Sp<String>>,
    /// Pool the suppression applies to.
    pub pool: Option<Sp<String>>,
    /// Why the finding is acceptable.
    pub reason: Sp<String>,
    /// Who approved it.
    pub approved_by: Sp<String>,
    /// Past this date the finding returns.
    pub expires: Option<Sp<PlanDate>>,
}
