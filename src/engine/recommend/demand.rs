//! What each workload asks of the fleet, in the recommender's terms: its segment (which pools
//! it may share), the shape of one replica, its warm floor and peak, and whether spot is open
//! to it.

use serde::Serialize;

use crate::catalog::Catalog;
use crate::core::{Kind, Sharing, Sp};
use crate::plan::Plan;
use crate::plan::Workload;

/// Which workloads may share a node pool. Training stays apart from inference, and what a
/// person waits on stays apart from queued work, through taints on the pools.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum Segment {
    /// User-facing inference.
    Serving,
    /// Inference nobody waits on (offline, internal).
    Inference,
    /// Notebooks and other interactive, user-facing non-inference work.
    Interactive,
    Training,
    /// Batch jobs and evaluations.
    Batch,
}

impl Segment {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Segment::Serving => "serving",
            Segment::Inference => "inference",
            Segment::Interactive => "interactive",
            Segment::Training => "training",
            Segment::Batch => "batch",
        }
    }

    /// The segment as an AKS node pool's name begins: three letters at most.
    pub(crate) fn aks_abbrev(self) -> &'static str {
        match self {
            Segment::Serving => "srv",
            Segment::Inference => "inf",
            Segment::Interactive => "nb",
            Segment::Training => "trn",
            Segment::Batch => "bat",
        }
    }

    pub(crate) fn of(w: &Workload) -> Segment {
        match (w.kind(), w.user_facing()) {
            (Kind::Training, _) => Segment::Training,
            (Kind::Inference, true) => Segment::Serving,
            (Kind::Inference, false) => Segment::Inference,
            (Kind::Notebook, _) | (_, true) => Segment::Interactive,
            (Kind::Batch | Kind::Evaluation, false) => Segment::Batch,
        }
    }
}

/// Why spot is closed to a workload: a fact of the workload, named when shown (so demands of
/// one shape share their candidates whatever they are called).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpotClosed {
    UserFacing,
    NotInterruptible,
    NoCheckpoint,
}

/// One workload's demand.
#[derive(Debug, Clone)]
pub struct Demand<'p> {
    pub w: &'p Sp<Workload>,
    pub name: &'p str,
    pub team: &'p str,
    pub segment: Segment,
    pub sharing: Sharing,
    /// Whole GPUs per replica (0 when the replica takes a share of one GPU).
    pub gpus: u32,
    /// GPU compute per replica: whole GPUs, or the share of one.
    pub share: f64,
    /// GPU memory one replica needs inside its server's instance, GiB, when known
    /// (`engine::memory::need_in_instance`).
    pub memory_need: Option<f64>,
    /// The share of the memory it is offered that the replica's server may use (its cap; 1
    /// without a server). On a time-sliced GPU the pool sets the cap instead.
    pub usable: f64,
    pub cpu: f64,
    pub memory_gib: f64,
    /// Gang size: replicas that start together, one per node.
    pub gang: u32,
    /// Replicas kept warm all month (the pool's minimum covers them).
    pub floor: u32,
    /// Replicas at peak.
    pub peak: u32,
    /// Replicas it keeps when idle (`Workload::kept_min`); of one part of a workload split by a
    /// quota, the part's share of them.
    pub kept: u32,
    /// Hours a month the replicas above the floor run.
    pub hours: f64,
    /// Why spot capacity is closed to this workload, if it is.
    pub spot_closed: Option<SpotClosed>,
    /// Minutes of work lost per interruption besides the restart (half a checkpoint interval
    /// is the expectation; the spot model integrates it). `None` for stateless work.
    pub checkpoint_minutes: Option<f64>,
    /// The longest reservation the plan allows (plan-wide).
    pub reservation_term: crate::core::ReservationTerm,
    /// Who partitions its MIG GPUs: the `mig_manager` of a declared pool it is meant for,
    /// else the cluster's. Pools of different managers never merge (their fit keys differ).
    pub mig_manager: crate::core::MigManager,
    /// Nodes its pool keeps at least, floor and peak: the availability floor of user-facing
    /// work (0 for work nobody waits on).
    pub availability: u32,
}

impl Demand<'_> {
    /// What one replica needs of a MIG instance on `spec` (the chooser's and every fit
    /// test's input).
    pub(crate) fn slice_need(&self, spec: &crate::catalog::MigSpec) -> crate::mig::SliceNeed {
        crate::mig::SliceNeed::new(
            spec,
            self.memory_need,
            self.usable,
            self.share,
            self.gpus >= 1 && self.share >= 1.0,
        )
    }

    /// Everything about this demand its candidates and their prices depend on, written out:
    /// two workloads of one shape (name and team aside) have the same candidates. A reason
    /// spot is closed names its workload, so such demands keep shapes of their own.
    pub(crate) fn shape(&self) -> String {
        let w = self.w.get();
        let list = |l: &Option<Sp<Vec<Sp<String>>>>| {
            l.as_ref()
                .map(|v| v.iter().map(|s| s.get().clone()).collect::<Vec<_>>())
        };
        format!(
            "{:?}|{:?}|{}|{:?}|{:?}|{:?}|{:?}|{:?}|{}|{}|{}|{:?}|{:?}|{:?}|{:?}|{:?}|{:?}|{:?}|{:?}",
            self.segment,
            self.sharing,
            self.gpus,
            self.share,
            self.memory_need,
            self.usable,
            self.cpu,
            self.memory_gib,
            self.gang,
            self.floor,
            self.peak,
            self.hours,
            self.spot_closed,
            self.checkpoint_minutes,
            self.mig_manager,
            list(&w.skus),
            list(&w.gpu_models),
            w.restart_minutes.as_ref().map(|r| *r.get()),
            w.interruptible.as_ref().map(|r| *r.get()),
        )
    }

    /// The workload's replicas at peak, as the plan states them; more than `peak` when this
    /// demand is one part of a workload split over AKS MIG profiles.
    pub(crate) fn planned_peak(&self) -> u32 {
        u32::try_from(self.w.replicas().max().max(0)).unwrap_or(u32::MAX)
    }
    /// Whether this demand is one part of a workload split over AKS MIG profiles: such parts
    /// stay in their family (quota repair, moves and the pool stage leave them be).
    pub(crate) fn is_part(&self) -> bool {
        self.peak < self.planned_peak()
    }
    /// Whether its replicas may run in two pools: not a gang (its nodes start together), not
    /// one replica, and no availability floor (each pool would keep its own). Quota repair,
    /// the fill stage and the candidate filter's quota test all ask this.
    pub(crate) fn may_split(&self) -> bool {
        self.gang <= 1 && self.peak >= 2 && self.availability == 0
    }
    /// Replicas that run for all the workload's hours: its minimum (none when it may scale
    /// to zero), at least the floor. Replicas above it are a peak, which no reservation
    /// covers.
    pub(crate) fn steady(&self) -> u32 {
        crate::engine::cost::steady_replicas(self.kept, self.floor, self.peak)
    }
    /// Replica-hours a month: the floor all month, the steady replicas above it for the
    /// workload's hours, the peak above them for its share of those hours
    /// (`typical_replicas`).
    pub fn replica_hours(&self, plan_hours: f64) -> f64 {
        let steady = self.steady().max(self.floor);
        f64::from(self.floor) * plan_hours
            + f64::from(steady - self.floor) * self.hours
            + f64::from(self.peak.saturating_sub(steady)) * self.peak_hours()
    }
    /// Hours a month the replicas above the steady ones run on average: the workload's
    /// hours times its peak duty (`typical_replicas`).
    pub(crate) fn peak_hours(&self) -> f64 {
        self.hours * self.w.peak_duty()
    }
}

impl Demand<'_> {
    /// The share of one GPU a replica hosted in a shared inference server takes: its stated
    /// share, or more where its memory needs more of what the server's cap leaves of the card.
    /// `None` where the memory does not fit one card at all.
    pub(crate) fn server_share(&self, gpu: &crate::catalog::GpuModel) -> Option<f64> {
        crate::engine::memory::server_share(self.share, self.memory_need, self.usable, gpu)
    }
}

pub fn demands<'p>(plan: &'p Plan, catalog: &Catalog) -> Vec<Demand<'p>> {
    plan.workloads()
        .iter()
        .map(|w| demand(plan, catalog, w))
        .collect()
}

fn demand<'p>(plan: &'p Plan, catalog: &Catalog, w: &'p Sp<Workload>) -> Demand<'p> {
    let plan_hours = plan.hours_per_month();
    let hours = plan.workload_hours(w);
    let r = w.replicas();
    let peak = u32::try_from(r.max().max(0)).unwrap_or(u32::MAX);
    let kind = w.kind();
    // The floor is what runs all month, whatever the workload is called: its minimum
    // replicas when it runs every hour of the plan's month and may not scale to zero. A batch
    // scorer of 8 fixed replicas for 730 h is as steady as a server (and reserving it costs
    // $3,059.69 a month where on-demand costs $4,700.03 on g6.xlarge). Work that does not run
    // all month, or that scales to zero, has no floor. A person waiting on it keeps one replica
    // warm regardless.
    let mut floor = if w.scale_to_zero() || hours < plan_hours {
        0
    } else {
        u32::try_from(r.min().max(0)).unwrap_or(0)
    };
    // A person waiting on it keeps replicas warm on as many nodes as its availability floor
    // (two by default), so one node failure is not an outage; never more than it runs at
    // peak, since one replica cannot be on two nodes.
    let availability = w
        .availability_nodes(catalog.assumptions.user_facing_min_nodes)
        .min(peak.saturating_mul(u32::try_from(w.gang().max(1)).unwrap_or(1)));
    if w.user_facing() {
        floor = floor.max(1).max(availability);
    }
    let floor = floor.min(peak);
    let sharing = w.sharing();
    let gpus = u32::try_from(w.gpus().max(0)).unwrap_or(0);
    let share = crate::engine::memory::replica_share(w, catalog);
    let checkpoint = w.checkpoint_minutes.as_ref().map(|c| *c.get());
    let spot_closed = if w.user_facing() {
        Some(SpotClosed::UserFacing)
    } else if !w.interruptible() {
        Some(SpotClosed::NotInterruptible)
    } else if checkpoint.is_none() && matches!(kind, Kind::Training | Kind::Batch) {
        Some(SpotClosed::NoCheckpoint)
    } else {
        None
    };
    Demand {
        w,
        name: w.name.get(),
        team: w.team.get(),
        segment: Segment::of(w),
        sharing,
        gpus: if w.gpu_fraction.is_some() && w.gpus.is_none() {
            0
        } else {
            gpus.max(1)
        },
        share,
        memory_need: crate::engine::memory::need_in_instance(w, catalog),
        usable: crate::engine::memory::usable_share(w, catalog),
        cpu: w.cpu.as_ref().map_or(0.0, |c| *c.get()),
        memory_gib: w.memory_gib.as_ref().map_or(0.0, |m| *m.get()),
        gang: u32::try_from(w.gang().max(1)).unwrap_or(1),
        floor,
        peak,
        kept: w.kept_min(),
        hours,
        spot_closed,
        checkpoint_minutes: checkpoint,
        reservation_term: plan.reservation_term(),
        mig_manager: plan
            .workload_pools(w.name.get())
            .find(|p| p.mig_manager.is_some())
            .map_or_else(|| plan.cluster_mig_manager(), |p| plan.pool_mig_manager(p)),
        availability,
    }
}
