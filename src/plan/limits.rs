//! The bounds the loader holds a plan's values to: one definition, read by the loader
//! (`validate`) and by the plan's JSON Schema (`gpuplan schema`), so an editor flags what
//! `gpuplan check` refuses.

/// A real interval; an open end is `incl: false`, an unbounded one infinite.
#[derive(Debug, Clone, Copy)]
pub struct Real {
    pub lo: f64,
    pub lo_incl: bool,
    pub hi: f64,
    pub hi_incl: bool,
}

/// An integer interval, both ends included.
#[derive(Debug, Clone, Copy)]
pub struct Int {
    pub lo: i64,
    pub hi: i64,
}

/// A count: an integer (`fixed_min..=max_cap`) or `{ min, max }` (`min_floor <= min`,
/// `1 <= max <= max_cap`).
#[derive(Debug, Clone, Copy)]
pub struct Count {
    pub fixed_min: i64,
    pub min_floor: i64,
    pub max_cap: i64,
}

const fn open_closed(lo: f64, hi: f64) -> Real {
    Real {
        lo,
        lo_incl: false,
        hi,
        hi_incl: true,
    }
}

const fn closed(lo: f64, hi: f64) -> Real {
    Real {
        lo,
        lo_incl: true,
        hi,
        hi_incl: true,
    }
}

pub const HOURS_PER_MONTH: Real = open_closed(0.0, 744.0);
pub const MONTHLY_BUDGET: Real = Real {
    lo: 0.0,
    lo_incl: false,
    hi: f64::INFINITY,
    hi_incl: false,
};
pub const DAEMONSET_CPU: Real = closed(0.0, 64.0);
pub const GANG_NODES: Int = Int { lo: 1, hi: 4096 };
pub const GPUS: Int = Int { lo: 1, hi: 64 };
pub const GPU_FRACTION: Real = Real {
    lo: 0.0,
    lo_incl: false,
    hi: 1.0,
    hi_incl: false,
};
// Upper bounds far past any hardware or job, so no figure built from them (a cost per 1M
// tokens, GPU-hours) can overflow to infinity.
pub const GPU_MEMORY_GIB: Real = open_closed(0.0, 1e5);
pub const KV_CACHE_GIB: Real = open_closed(0.0, 1e5);
pub const CPU: Real = open_closed(0.0, 1e5);
pub const MEMORY_GIB: Real = open_closed(0.0, 1e7);
pub const CHECKPOINT_MINUTES: Real = open_closed(0.0, 1e6);
/// A throughput below a token a thousand seconds is a typo, and divides a cost to infinity.
pub const TOKENS_PER_SECOND: Real = closed(1e-3, 1e9);
pub const RESTART_MINUTES: Real = closed(0.0, 1e6);
/// vLLM's time-to-first-token histogram spans a millisecond to 2,560 s.
pub const TTFT_P95_SECONDS: Real = closed(1e-3, 2560.0);
pub const UTILIZATION: Real = open_closed(0.0, 1.0);
pub const PARAMS_BILLION: Real = open_closed(0.0, 100_000.0);
pub const GPU_MEMORY_UTILIZATION: Real = open_closed(0.0, 1.0);
pub const TENSOR_PARALLEL: Int = Int { lo: 1, hi: 64 };
pub const MAX_NUM_SEQS: Int = Int { lo: 1, hi: 65_536 };
pub const MIG_INSTANCES: Int = Int { lo: 1, hi: 7 };
pub const MIG_LAYOUT_GPUS: Int = Int { lo: 1, hi: 100_000 };
pub const QUOTA_VCPUS: Real = Real {
    lo: 0.0,
    lo_incl: true,
    hi: f64::INFINITY,
    hi_incl: false,
};
pub const REPLICAS: Count = Count {
    fixed_min: 1,
    min_floor: 0,
    max_cap: 100_000,
};
pub const AVAILABILITY_FLOOR: Int = Int { lo: 1, hi: 1000 };
pub const GANGS: Count = Count {
    fixed_min: 1,
    min_floor: 0,
    max_cap: 100_000,
};
pub const POOL_NODES: Count = Count {
    fixed_min: 0,
    min_floor: 0,
    max_cap: 1000,
};

/// A bound as the schema states it.
#[derive(Debug, Clone, Copy)]
pub enum Bound {
    Real(Real),
    Int(Int),
    Count(Count),
    /// A DNS-1123 label ([`crate::plan::validate`]'s rule).
    Name,
    /// A rule id of the catalog (`GP001`…).
    Rule,
    /// An Azure subscription ID ([`GUID_PATTERN`]).
    Guid,
}

/// Where each bound sits in the plan format: (type, key, bound). Keys of a nested table are
/// in their own type (`Server`, `Model`).
pub const PLACES: &[(&str, &str, Bound)] = &[
    ("PlanMeta", "name", Bound::Name),
    ("PlanMeta", "hours_per_month", Bound::Real(HOURS_PER_MONTH)),
    ("PlanMeta", "monthly_budget", Bound::Real(MONTHLY_BUDGET)),
    ("PlanMeta", "subscription", Bound::Guid),
    ("Cluster", "name", Bound::Name),
    ("Cluster", "daemonset_cpu", Bound::Real(DAEMONSET_CPU)),
    ("Workload", "name", Bound::Name),
    ("Workload", "team", Bound::Name),
    ("Workload", "fault_domain", Bound::Name),
    ("Workload", "replicas", Bound::Count(REPLICAS)),
    ("Workload", "nodes", Bound::Int(GANG_NODES)),
    ("Workload", "gangs", Bound::Count(GANGS)),
    (
        "Workload",
        "availability_floor",
        Bound::Int(AVAILABILITY_FLOOR),
    ),
    ("Workload", "gpus", Bound::Int(GPUS)),
    ("Workload", "gpu_fraction", Bound::Real(GPU_FRACTION)),
    ("Workload", "gpu_memory_gib", Bound::Real(GPU_MEMORY_GIB)),
    ("Workload", "kv_cache_gib", Bound::Real(KV_CACHE_GIB)),
    ("Workload", "cpu", Bound::Real(CPU)),
    ("Workload", "memory_gib", Bound::Real(MEMORY_GIB)),
    (
        "Workload",
        "checkpoint_minutes",
        Bound::Real(CHECKPOINT_MINUTES),
    ),
    (
        "Workload",
        "tokens_per_second",
        Bound::Real(TOKENS_PER_SECOND),
    ),
    (
        "Workload",
        "ttft_p95_seconds",
        Bound::Real(TTFT_P95_SECONDS),
    ),
    ("Workload", "restart_minutes", Bound::Real(RESTART_MINUTES)),
    ("Workload", "hours_per_month", Bound::Real(HOURS_PER_MONTH)),
    ("Workload", "utilization", Bound::Real(UTILIZATION)),
    ("Model", "params_billion", Bound::Real(PARAMS_BILLION)),
    (
        "Server",
        "gpu_memory_utilization",
        Bound::Real(GPU_MEMORY_UTILIZATION),
    ),
    (
        "Server",
        "tensor_parallel_size",
        Bound::Int(TENSOR_PARALLEL),
    ),
    ("Server", "max_num_seqs", Bound::Int(MAX_NUM_SEQS)),
    ("Pool", "name", Bound::Name),
    ("Pool", "pool_label", Bound::Name),
    ("Pool", "nodes", Bound::Count(POOL_NODES)),
    ("Pool", "mig_layout", Bound::Int(MIG_INSTANCES)),
    ("MigLayouts", "layout", Bound::Int(MIG_INSTANCES)),
    ("MigLayouts", "gpus", Bound::Int(MIG_LAYOUT_GPUS)),
    ("Quota", "vcpus", Bound::Real(QUOTA_VCPUS)),
    ("Decision", "fault_domain", Bound::Name),
    ("Allow", "rule", Bound::Rule),
    ("RuleLevels", "deny", Bound::Rule),
];

/// A DNS-1123 label as a pattern, with [`NAME_MAX`]: what `validate` accepts for a name.
pub const NAME_PATTERN: &str = "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$";
pub const NAME_MAX: usize = 63;

/// An Azure subscription ID: a GUID, `00000000-0000-0000-0000-000000000000`.
pub const GUID_PATTERN: &str =
    "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$";

/// Keys one table may not hold together: (type, key, key). The loader refuses each pair with
/// its own message (`PlanCode::ConflictingKeys`); the schema says `not: { required: [..] }`.
pub const EXCLUSIVE: &[(&str, &str, &str)] = &[("Workload", "gpus", "gpu_fraction")];
