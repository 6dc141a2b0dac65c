//! What a review's advice says and the change it proposes, as figures and names
//! (`report::review::says` words them; the JSON's `message` and `change` are those words).

/// What an advice says.
#[derive(Debug, Clone, PartialEq)]
pub enum AdviceSays {
    /// A workload kept its GPUs busy `busy` of the time; `slice` (`fraction` of a GPU) would
    /// have held the work. `need`: the GiB it needs, when it declares them.
    RightSize {
        workload: String,
        busy: f64,
        slice: Slice,
        fraction: f64,
        need: Option<f64>,
    },
    /// GPU-seconds requested while Pending: those unscheduled, those not told apart, and
    /// those failing to pull images (when a minute or more).
    Pending {
        total: f64,
        unscheduled: f64,
        unknown: f64,
        pulling: Option<f64>,
    },
    /// A node held empty `days` in stretches of an hour or more.
    EmptyNode {
        node: String,
        label: Option<String>,
        days: f64,
        longest_seconds: i64,
    },
    /// A workload's pods waited in CrashLoopBackOff `share` of the time they held GPUs.
    CrashLoop { workload: String, share: f64 },
    /// A pod held GPUs with no activity: its longest stretch, and every stretch over the
    /// threshold in all.
    Stalled {
        team: String,
        pod: String,
        gpus: f64,
        seconds: i64,
        since: String,
        stretches: usize,
        all_seconds: i64,
    },
    /// A pool kept `nodes` of its floor idle on average over the `seconds` covered.
    IdleFloor {
        pool: String,
        nodes: f64,
        seconds: i64,
    },
    /// A pool held at least `floor_gpus` GPUs 90% of the time: reserving `nodes` saves.
    Reserve {
        pool: String,
        floor_gpus: f64,
        nodes: i64,
        sku: String,
        term: &'static str,
        saving: f64,
        break_even: f64,
    },
}

/// The change an advice proposes.
#[derive(Debug, Clone, PartialEq)]
pub enum AdviceChange {
    /// A workload's new `gpu_fraction` and sharing on its slice.
    RightSize {
        workload: String,
        fraction: f64,
        slice: Slice,
    },
    /// What to do about demand that waited, and whether image pulls failed.
    Pending { wait: Wait, pulls_failed: bool },
    /// Lower the pool's `nodes.min` (now `min`).
    LowerMin { pool: String, min: i64 },
    /// Look at the cluster autoscaler's scale-down.
    ScaleDown,
    /// Fix the crash before sizing.
    FixCrash,
    /// Reap idle pods.
    Reap,
    /// Set the pool's `nodes.min`.
    NodesMin { pool: String, min: i64 },
    /// Split the pool: `nodes` reserved on `term`, the rest on demand.
    SplitReserved {
        pool: String,
        nodes: i64,
        term: &'static str,
    },
}

/// Why no reservation is advised for a pool's floor.
#[derive(Debug, Clone, PartialEq)]
pub enum NotReserved {
    /// The window covers `days` of data, fewer than `needed`.
    TooFewDays { days: f64, needed: i64 },
    /// The plan's `reservation_term = "none"`.
    TermNone,
    /// No reserved price for the SKU in the region; `provider` says whether one is unknown
    /// offline (a refresh fetches it) or not sold.
    NoPrice {
        sku: String,
        region: String,
        provider: crate::core::Provider,
    },
}

/// The slice a right-size proposes.
#[derive(Debug, Clone, PartialEq)]
pub enum Slice {
    /// A MIG profile on the GPU.
    Mig { profile: String, gpu: String },
    /// Time-slicing `replicas` ways on a GPU without MIG.
    TimeSliced { replicas: u32, gpu: String },
}

/// Why demand waited, as far as the pools show: start-up only; pools that grew while the pods
/// waited, below their maximum (a node was booting); pools at their maximum with a GPU free
/// (`(name, nodes.max)`); no pool at its maximum; or pools full at their maximum.
#[derive(Debug, Clone, PartialEq)]
pub enum Wait {
    StartUp,
    Booting(Vec<(String, i64)>),
    NotFull(Vec<(String, i64)>),
    NoPoolAtMax,
    Full(Vec<(String, i64)>),
}
