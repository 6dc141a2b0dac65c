//! A workload's choice (candidate and capacity type) and the key that groups choices into
//! pools: segment, SKU, region, capacity and sharing settings.

use super::candidate::{Candidate, Fit, Rate};
use super::demand::{Demand, Segment};
use crate::core::{held_month_usd, node_hours_usd};
use crate::core::{Capacity, MigManager, Sharing};
use std::collections::BTreeMap;

/// A workload's choice: where, and on what capacity.
pub(super) struct Choice<'p, 'c> {
    pub(super) d: Demand<'p>,
    pub(super) c: Candidate<'c>,
    pub(super) rate: Rate,
    /// Every candidate the workload had (for alternatives), shared by every workload of the
    /// same shape ([`demand::Demand::shape`]): an estate of thousands of identical jobs holds
    /// one list, not thousands.
    pub(super) all: std::sync::Arc<Vec<Candidate<'c>>>,
    /// The candidates a known quota closed that a replica-hour would cost less on (shared
    /// as `all` is): the why-line names them.
    pub(super) closed: std::sync::Arc<Vec<super::candidate::Closed<'c>>>,
}

impl<'p, 'c> Choice<'p, 'c> {
    /// The same workload on another candidate and rate, as a trial member of a pool (without
    /// its other candidates, which only the first choice needs).
    pub(super) fn with(&self, c: Candidate<'c>, rate: Rate) -> Choice<'p, 'c> {
        Choice {
            d: self.d.clone(),
            c,
            rate,
            all: std::sync::Arc::default(),
            closed: std::sync::Arc::default(),
        }
    }

    /// The same choice holding `share` of the workload's replicas: one part of a workload
    /// split over pools, keeping the workload's candidates.
    pub(super) fn part(&self, share: Share) -> Choice<'p, 'c> {
        Choice {
            d: Demand {
                peak: share.peak,
                floor: share.floor,
                kept: share.kept,
                ..self.d.clone()
            },
            c: self.c.clone(),
            rate: self.rate.clone(),
            all: std::sync::Arc::clone(&self.all),
            closed: std::sync::Arc::clone(&self.closed),
        }
    }
}

/// What one part of a split workload holds of its replicas: at peak, warm all month, and kept
/// when idle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Share {
    pub(super) peak: u32,
    pub(super) floor: u32,
    pub(super) kept: u32,
}

impl Share {
    /// A workload's replicas cut in two parts, `first` of them at peak in the first: the
    /// first part takes the warm and kept replicas it can hold, the second the rest.
    pub(super) fn cut(d: &Demand<'_>, first: u32) -> [Share; 2] {
        let second = d.peak - first.min(d.peak);
        let (floor, kept) = (d.floor.min(first), d.kept.min(first));
        [
            Share {
                peak: first,
                floor,
                kept,
            },
            Share {
                peak: second,
                floor: (d.floor - floor).min(second),
                kept: (d.kept - kept).min(second),
            },
        ]
    }
}

/// Expected monthly cost of one workload on a candidate at a rate, from its node share (a
/// perfect packing); used to choose, not to report.
pub(super) fn estimate(d: &Demand<'_>, c: &Candidate<'_>, r: &Rate, plan_hours: f64) -> f64 {
    let share = c.node_share * f64::from(d.gang.max(1));
    let floor = f64::from(d.floor);
    let burst = f64::from(d.peak - d.floor);
    match r.capacity {
        // The floor reserved; each steady replica above it reserved too when its hours beat
        // the break-even (as `build` reserves the k-th node), else on-demand for its hours;
        // the peak on-demand.
        Capacity::Reserved1y | Capacity::Reserved3y => {
            let steady = f64::from(d.steady() - d.floor);
            let peak = f64::from(d.peak - d.steady());
            share
                * (held_month_usd(r.usd, floor)
                    + steady * (c.on_demand * d.hours).min(held_month_usd(r.usd, 1.0))
                    + node_hours_usd(c.on_demand, peak, d.peak_hours()))
        }
        // A block is paid for the whole length sold, not the gang's hours alone.
        Capacity::CapacityBlock => {
            let h = crate::engine::cost::block_paid_hours(c.sku.provider, d.hours);
            share * r.usd * (floor * plan_hours + burst * h)
        }
        Capacity::OnDemand | Capacity::Spot | Capacity::CapacityReservation => {
            share * r.usd * r.waste * d.replica_hours(plan_hours)
        }
    }
}

pub(super) fn cap_order(c: Capacity) -> u8 {
    match c {
        Capacity::OnDemand => 0,
        Capacity::Spot => 1,
        Capacity::Reserved1y => 2,
        Capacity::Reserved3y => 3,
        Capacity::CapacityReservation => 4,
        Capacity::CapacityBlock => 5,
    }
}

/// The (candidate, rate) a choice holds, as an index into its candidates.
pub(super) fn pick_of(ch: &Choice<'_, '_>) -> (usize, Rate) {
    let i = ch
        .all
        .iter()
        .position(|c| c.sku.name == ch.c.sku.name && c.region == ch.c.region)
        .unwrap_or(0);
    (i, ch.rate.clone())
}

pub(super) fn apply(choices: &mut [Choice<'_, '_>], picks: &[(usize, Rate)]) {
    for (ch, (i, rate)) in choices.iter_mut().zip(picks) {
        ch.c = ch.all[*i].clone();
        ch.rate = rate.clone();
    }
}

/// Workloads that chose the same SKU, region, capacity and sharing settings, and may share
/// nodes, form one pool.
pub(super) fn group(choices: &[Choice<'_, '_>]) -> BTreeMap<PoolKey, Vec<usize>> {
    let mut groups: BTreeMap<PoolKey, Vec<usize>> = BTreeMap::new();
    for (i, ch) in choices.iter().enumerate() {
        groups
            .entry(pool_key(&ch.d, &ch.c, ch.rate.capacity))
            .or_default()
            .push(i);
    }
    groups
}

/// The pool a demand joins on a candidate at a capacity type: its segment, SKU, region,
/// capacity and sharing settings.
pub(super) fn pool_key(d: &Demand<'_>, c: &Candidate<'_>, capacity: Capacity) -> PoolKey {
    (
        d.segment,
        c.sku.name.clone(),
        c.region.clone(),
        capacity,
        pool_sharing(&c.fit),
        fit_key(&c.fit, d.mig_manager),
    )
}

/// The sharing settings that split pools: the fit without the replica-specific parts.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(super) enum FitKey {
    Whole,
    Mig(Option<String>),
    /// Replicas per GPU, and whether they are MPS clients.
    Shared(u32, bool),
    Server,
}

impl Fit {
    /// Time-sliced (or MPS) replicas per GPU, where the fit shares a GPU among several.
    pub(super) fn shared_replicas(&self) -> Option<u32> {
        match self {
            Fit::Shared { replicas, .. } => (*replicas > 1).then_some(*replicas),
            Fit::Whole { .. } | Fit::Mig { .. } | Fit::Server { .. } => None,
        }
    }
    /// The MIG profile, where the fit is a MIG instance.
    pub(super) fn mig_profile(&self) -> Option<&crate::catalog::MigProfile> {
        match self {
            Fit::Mig { profile } => Some(profile),
            Fit::Whole { .. } | Fit::Shared { .. } | Fit::Server { .. } => None,
        }
    }
}

impl FitKey {
    /// Replicas per GPU of a shared pool's key.
    pub(super) fn shares(&self) -> Option<u32> {
        match self {
            FitKey::Shared(n, _) => Some(*n),
            FitKey::Whole | FitKey::Mig(_) | FitKey::Server => None,
        }
    }
}

pub(super) fn fit_key(fit: &Fit, mig_manager: MigManager) -> FitKey {
    match fit {
        Fit::Whole { .. } => FitKey::Whole,
        Fit::Mig { profile } => FitKey::Mig(match mig_manager {
            MigManager::Aks => Some(profile.name.clone()),
            MigManager::GpuOperator => None,
        }),
        Fit::Shared { replicas, .. } if *replicas <= 1 => FitKey::Whole,
        Fit::Shared { replicas, mps } => FitKey::Shared(*replicas, *mps),
        Fit::Server { .. } => FitKey::Server,
    }
}

pub(super) type PoolKey = (Segment, String, String, Capacity, Sharing, FitKey);

pub(super) fn pool_sharing(fit: &Fit) -> Sharing {
    match fit {
        Fit::Whole { .. } | Fit::Server { .. } => Sharing::Dedicated,
        Fit::Shared { replicas, .. } if *replicas <= 1 => Sharing::Dedicated,
        Fit::Mig { .. } => Sharing::Mig,
        Fit::Shared { mps: true, .. } => Sharing::Mps,
        Fit::Shared { mps: false, .. } => Sharing::TimeSlicing,
    }
}

pub(super) fn best_choice<'c>(
    d: &Demand<'_>,
    all: &[Candidate<'c>],
    plan_hours: f64,
) -> Option<(usize, Rate)> {
    let mut best: Option<(f64, usize, usize, Rate)> = None;
    for (i, c) in all.iter().enumerate() {
        for r in c.rates(d) {
            let cost = estimate(d, c, &r, plan_hours);
            let better = match &best {
                None => true,
                // Cheaper by more than a cent; on a tie the preferred region, then the
                // simpler commitment (on-demand before spot before reservations).
                Some((bc, _, rank, br)) => {
                    cost < bc - 0.005
                        || ((cost - bc).abs() <= 0.005
                            && (c.region_rank, cap_order(r.capacity))
                                < (*rank, cap_order(br.capacity)))
                }
            };
            if better {
                best = Some((cost, i, c.region_rank, r));
            }
        }
    }
    best.map(|(_, i, _, r)| (i, r))
}
