//! Why a recommended pool is as it is, as data: the numbers and names each stage of the
//! choice decided by, in the order the stages decided; and likewise an alternative's and a
//! capacity option's note, why work is unmet, what becomes of a declared pool, and what a
//! finding says. `report::why` words them, and the JSON's `why`, `note` and `message`
//! strings are those texts. A stand-in price's caveat (`engine::cost::Caveat`) and what holds
//! a replica's memory (`engine::memory::Holder`) are data too; `check`'s rule messages embed
//! their words through `Display`, implemented in `report::why`.

use crate::core::{Capacity, Provider, ReservationTerm, Sharing};

use super::candidate::{Constraint, Detail, SpotNo};
pub use crate::engine::cost::{Caveat, StandIn};

/// A pool's reasons, one per stage that had something to say.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Why(pub Vec<Reason>);

/// One stage's reason.
#[derive(Debug, Clone, PartialEq)]
pub enum Reason {
    /// A pool the plan declares, priced as declared.
    Declared,
    /// The pool's SKU and region have the cheapest expected cost of those that fit.
    Cheapest {
        candidates: usize,
        gpus_per_node: u32,
        gpu: String,
        on_demand: f64,
        region: String,
    },
    /// User-facing workloads keep this many nodes at least (GP033).
    AvailabilityFloor { nodes: u32, workloads: Vec<String> },
    /// AKS's managed MIG: one profile on every GPU of the pool.
    AksMig {
        profile: String,
        gpu_instance: String,
        members: Vec<AksMember>,
    },
    /// MIG layouts mig-parted applies (`mig_manager = "gpu-operator"`).
    MigPacked {
        gpus: u32,
        stranded_slices: Option<u32>,
    },
    /// MIG replicas on a partial SR-IOV vGPU size: each VM's GPU is the slice the host made.
    HostMigSlice { sku: String, share: f64 },
    /// Time-slicing: replicas per GPU and each server's memory cap.
    TimeSliced {
        replicas: u32,
        memory_cap: Option<f64>,
        card_share: f64,
    },
    /// One server process hosts the shares of a GPU.
    SharedServer,
    /// A time-sliced workload states no share: the assumed one.
    DefaultShare { workload: String, share: f64 },
    /// A workload that declares time-slicing or MPS runs on dedicated GPUs.
    Dedicated {
        workload: String,
        sharing: Sharing,
        cause: NotShared,
    },
    /// A workload that would cost least elsewhere alone is here because the packed fleet
    /// costs less.
    PackedHere {
        workload: String,
        sku: String,
        region: String,
        capacity: Capacity,
    },
    /// Gangs take whole nodes; the largest gang's size.
    Gang { nodes: u32 },
    /// Bought as spot, and how spot was judged.
    Spot(SpotJudgement),
    /// Spot priced at the zones' average; the cheapest zone's price.
    SpotZones { average: f64, cheapest: f64 },
    /// Bought on demand, and how spot was judged.
    OnDemand(SpotJudgement),
    /// No reservation price is known for the SKU and region.
    ReservedUnknown { provider: Provider },
    /// Reserved nodes, each running past the break-even; the rest stay on demand.
    Reserved(Reserving),
    /// How spot was judged for a reserved pool.
    SpotWeighed(SpotJudgement),
    /// What a longer term than the plan allows would save on the reserved nodes.
    LongerTerm {
        usd_per_hour: f64,
        saving: f64,
        term: ReservationTerm,
    },
    /// An EC2 Capacity Block bought for a gang's hours.
    CapacityBlock {
        nodes: u32,
        /// The block's length: the shortest sold that covers `work_hours`.
        hours: f64,
        work_hours: f64,
        usd_per_hour: f64,
        on_demand: f64,
    },
    /// The quota of the pool's family is unknown in its region.
    QuotaUnknown { region: String, family: String },
    /// A cheaper capacity type for the same nodes that a known quota closed: the pool took
    /// the cheapest that fits instead.
    QuotaClosed(QuotaClosed),
    /// A workload a known quota split over two pools, and this pool's part of it.
    QuotaSplit(QuotaSplit),
    /// A workload split to fill GPUs another pool left idle, and this pool's part of it.
    FillSplit(FillSplit),
    /// Cheaper sizes a known quota closed to the pool's workloads (listed beside it as
    /// `quota-closed`).
    QuotaRemoved(QuotaRemoved),
    /// Arm-host sizes (arm64 images only) that cost less per GPU in the pool's region and
    /// hold its replicas' memory, left out because no workload names them: (SKU, $/GPU-hour).
    ArmHostsLeftOut { skus: Vec<(String, f64)> },
}

/// One pool's part of a workload split to fill GPUs another pool left idle: `here` of its
/// `planned` replicas run in it; `filled` says whether it is the pool filled.
#[derive(Debug, Clone, PartialEq)]
pub struct FillSplit {
    pub workload: String,
    pub here: u32,
    pub planned: u32,
    pub filled: bool,
}

/// Cheaper sizes a known quota closed to a pool's workloads: how many, and the cheapest with
/// what it would save a month.
#[derive(Debug, Clone, PartialEq)]
pub struct QuotaRemoved {
    pub sizes: usize,
    pub sku: String,
    pub region: String,
    pub saving: f64,
}

/// A cheaper capacity type a known quota closed for a pool, and what it would have saved.
#[derive(Debug, Clone, PartialEq)]
pub struct QuotaClosed {
    pub capacity: Capacity,
    pub family: String,
    pub region: String,
    pub quota: f64,
    /// vCPUs the rest of the fleet already draws on the quota.
    pub fleet: f64,
    pub need: f64,
    pub saving_lost: f64,
}

/// One pool's part of a workload a known quota split over two pools: `here` of its `planned`
/// replicas run in it; the quota (on `capacity`) holds the part in its bucket, and `within`
/// says whether that is this pool's part.
#[derive(Debug, Clone, PartialEq)]
pub struct QuotaSplit {
    pub workload: String,
    pub here: u32,
    pub planned: u32,
    pub capacity: Capacity,
    pub family: String,
    pub region: String,
    pub quota: f64,
    pub within: bool,
    /// The region of the pool the reason is on: where it differs from the quota's, the
    /// other part runs in another region, and the line says which.
    pub pool_region: String,
}

/// A reserved pool's nodes: those bought as reservations run past the break-even
/// (`usd_per_hour / on_demand` of the month), the rest stay on demand.
#[derive(Debug, Clone, PartialEq)]
pub struct Reserving {
    pub capacity: Capacity,
    pub usd_per_hour: f64,
    pub on_demand: f64,
    pub month_hours: f64,
    pub kept: Vec<NodeUse>,
    pub rest: Vec<NodeUse>,
}

/// A workload of an AKS MIG pool that takes the pool's profile, or is split over the family.
#[derive(Debug, Clone, PartialEq)]
pub enum AksMember {
    /// Takes the pool's profile instead of its own: sharing the nodes costs less.
    Instead { workload: String, own: String },
    /// Split over the family's profiles: `peak` of its `planned` replicas run here.
    Split {
        workload: String,
        peak: u32,
        planned: u32,
    },
}

/// Why a workload that declares time-slicing or MPS gets dedicated GPUs.
#[derive(Debug, Clone, PartialEq)]
pub enum NotShared {
    /// A replica asks for this many GPUs (GP003).
    ManyGpus(u32),
    /// No allowed GPU holds two replicas of this many GiB.
    NoRoom(f64),
    /// A GPU of its own costs less than the sizes whose GPUs hold two or more replicas.
    Cheaper,
}

/// One node's month: its busy hours and whether it is steady (busy all its hours) or a peak.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NodeUse {
    pub hours: f64,
    pub steady: bool,
}

/// What is known of a spot market's eviction band.
#[derive(Debug, Clone, PartialEq)]
pub enum BandSeen {
    Known(String),
    Unknown,
    /// Unknown, and spot was judged at the worst band.
    JudgedAtWorst,
}

/// How spot was judged for a pool's first workload.
#[derive(Debug, Clone, PartialEq)]
pub enum SpotJudgement {
    /// No spot price.
    NoPrice,
    /// Its waste per useful hour against the break-even.
    Weighed(Box<SpotWeighing>),
    /// Stateless: only the restart is lost.
    Stateless {
        effective: f64,
        on_demand: f64,
        break_even: f64,
        band: BandSeen,
    },
    /// Spot is no option, and why.
    Shut {
        workload: String,
        why: SpotNo,
    },
    NotAssessed,
}

/// The figures spot's waste was weighed by.
#[derive(Debug, Clone, PartialEq)]
pub struct SpotWeighing {
    pub waste: f64,
    pub break_even: f64,
    pub on_demand: f64,
    pub spot: f64,
    pub band: BandSeen,
    pub monthly_interruption: f64,
    pub node_hazard: f64,
    pub gang: u32,
    pub checkpoint_minutes: f64,
    pub restart_minutes: f64,
    pub restart_is_default: bool,
    pub at_worst_band: bool,
}

/// Why an alternative is listed, and why it was not taken.
#[derive(Debug, Clone, PartialEq)]
pub struct AltNote {
    pub what: AltWhat,
    pub not_taken: Option<NotTaken>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum AltWhat {
    /// Packed: nodes and GPUs at peak.
    Packed { nodes: u32, gpus: u32 },
    /// Fewer GPUs, at this much a month per GPU given back.
    FewerGpus {
        nodes: u32,
        gpus: u32,
        fewer: u32,
        usd_per_gpu: f64,
    },
    /// Spot was shut for a workload of the pool.
    SpotShut { workload: String, why: SpotNo },
    /// A known quota closed the size to the pool's workloads: the quota's figures, and the
    /// nodes and GPUs the pool would take there.
    QuotaClosed {
        nodes: u32,
        gpus: u32,
        quota: super::candidate::Detail,
    },
}

/// Why a cheaper alternative was not taken.
#[derive(Debug, Clone, PartialEq)]
pub enum NotTaken {
    /// The quota bucket it draws on cannot hold it beside the rest of the fleet.
    Quota {
        family: String,
        region: String,
        quota: f64,
        fleet: f64,
        need: f64,
    },
    /// The pool is too large for the pool stage to try its options.
    NotTried { members: usize, replicas: u32 },
    /// Quota repair moved a workload here after the pool stage.
    Repaired,
    /// The fleet as a whole costs less as chosen.
    FleetCheaper,
}

/// Why a capacity option is listed beside a pool.
#[derive(Debug, Clone, PartialEq)]
pub enum CapacityNote {
    /// Reserve the floor's nodes so a scale-up or repair cannot stock out.
    FloorReserved { nodes: u32, provider: Provider },
}

/// Why a workload could not be placed.
#[derive(Debug, Clone, PartialEq)]
pub enum Unmet {
    /// No SKU of the provider in the catalog can be considered for it.
    NoSku {
        provider: Provider,
        workload: String,
    },
    /// Every SKU and region was rejected; `constraint` is the one that rejected those that
    /// got furthest, with the distinct figures they failed it by.
    Rejected {
        regions: Vec<String>,
        workload: String,
        constraint: Constraint,
        examples: Vec<Detail>,
    },
}

/// What becomes of a declared pool in the recommendation.
#[derive(Debug, Clone, PartialEq)]
pub enum ChangeNote {
    /// Its workloads cannot be placed elsewhere: kept, not compared.
    Keep { blocked: Vec<(String, Unmet)> },
    /// A Capacity Block whose price is unknown offline: not compared.
    BlockPriceUnknown { sku: String, region: String },
    /// No price in the catalog: not compared.
    NoPrice { sku: String, region: String },
    /// No workload needs it; with the caveat of its stand-in price, if any.
    Delete { caveat: Option<Caveat> },
    /// Its workloads move to these pools.
    Moves {
        to: Vec<String>,
        caveat: Option<Caveat>,
    },
}

/// The `[[allow]]` that accepted a finding (the JSON's `suppressed` is its words).
#[derive(Debug, Clone)]
pub struct Accepted(pub crate::diag::Suppression);

/// What a finding says: a rule's own words, or the figures of the recommender's notes.
#[derive(Debug, Clone, PartialEq)]
pub enum Said {
    /// A `check` rule's message, as the rule words it.
    Rule(String),
    /// A finding whose `[[allow]]` expired on the date given.
    AllowExpired(Box<Said>, crate::core::Date),
    /// The recommended pools draw more vCPUs from a quota bucket than its known quota (GP014).
    QuotaOver {
        vcpus: f64,
        family: String,
        region: String,
        limit: f64,
        from: String,
    },
    /// A spot pool holding a gang of `nodes` nodes of `sku`: every interruption needs them
    /// all again at once, which no signal offline says can be had, and nothing falls back.
    SpotGang {
        pool: String,
        workload: String,
        nodes: u32,
        sku: String,
        region: String,
        /// The last refresh's EC2 spot placement score (1-10) for the pool's GPU model in
        /// its region, with its GPU model and source: asked for one instance, so a gang's
        /// odds are lower than it says. `None` offline and on clouds that publish none.
        score: Option<(u8, String, String)>,
    },
    /// A MIG packing not proven optimal within the search budget.
    PackingNotProven {
        pool: String,
        gpus: u32,
        lower_bound: u32,
    },
    /// A pool whose replicas run out of vCPUs or RAM before GPUs, and the option that idles
    /// fewer (kept the cheaper pool).
    IdleGpus {
        pool: String,
        /// What pods may request on one of its nodes (vCPUs, GiB), when the SKU is known.
        room: Option<(f64, f64)>,
        idle: u32,
        gpus: u32,
        sku: String,
        region: String,
        option_gpus: u32,
        more_usd: f64,
    },
}
