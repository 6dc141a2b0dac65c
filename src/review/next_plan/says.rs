//! What the next plan says of what it changed and did not, as figures and names
//! (`report::review::next_plan` words them: the comments on changed lines, the header and the
//! warnings `review --write-plan` prints).

use crate::plan::Count;
use crate::review::forecast::grounds::Grounds;
use crate::review::forecast::{Basis, Typical};
use crate::review::says::Slice;

/// The header: the quarter planned for, the telemetry it came from, and the workloads left
/// as written for want of data.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Header {
    pub quarter: String,
    pub horizon: String,
    pub from: String,
    pub to: String,
    pub covered_days: f64,
    pub without_data: Vec<String>,
}

/// What the comment on a changed line says.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum LineSays {
    /// A workload's count: what it was, the figures, and how `basis` sized it by `horizon`.
    Count {
        was: String,
        grounds: Box<Grounds>,
        basis: Basis,
        horizon: String,
    },
    /// Its `hours_per_month`, from the hours it held GPUs.
    Hours { held: f64 },
    /// Its `typical_replicas`: the figures it is (measured, grown, bounded), what it held
    /// on average over its running hours a month, and its new ceiling.
    Typical {
        typical: Typical,
        held_mean: f64,
        hours: f64,
        max: i64,
    },
    /// Its `gpu_fraction`: what it had, and the slice that holds the work.
    Fraction { was: Had, slice: Option<Slice> },
    /// Its `sharing`, which goes with the fraction.
    WithFraction,
    /// Its `gpu_models`: the GPU its serving capacity was measured on.
    MeasuredOn { model: String },
    /// A declared pool's `nodes`, resized for its workloads' new maxima.
    Nodes(Resized),
}

/// What a right-sized workload had: a `gpu_fraction` as written, or whole GPUs.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Had {
    Fraction(String),
    Gpus(i64),
}

/// A pool resized: its nodes as written, the GPUs its workloads hold at their new maxima
/// (each workload's share), and the nodes of `per_node` GPUs that makes.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Resized {
    pub was: Count,
    pub gpus: f64,
    pub parts: Vec<(String, f64)>,
    pub nodes: i64,
    pub per_node: f64,
    /// The availability floor of the user-facing work it holds, at its proposed replicas.
    pub floor: i64,
}

/// An error `check` reports on the written plan: what reported it, and the workload and pool
/// it is on.
pub(crate) type Found = (Reported, Option<String>, Option<String>);

/// What reported an error: a rule or load check by its code, or the message of a plan that
/// did not load.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Reported {
    Code(crate::diag::Code),
    Unloadable(String),
}

/// What the next plan did not do, or changed beyond the workloads, and why.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum NextNote {
    /// A workload's right-size was not taken: check would report `why`.
    RightSizeRefused { workload: String, why: Reported },
    /// A pool was left at its size: resizing it makes check report `why`.
    ResizeRefused { pool: String, why: Reported },
    /// A workload was left at its replicas as written: `pool` cannot grow to hold the new
    /// ones (check would report `why`).
    HeldForPool {
        workload: String,
        pool: String,
        why: Reported,
    },
    /// A pool's nodes were resized.
    Resized { pool: String, resized: Resized },
    /// Errors check reports on the written plan that the plan did not have.
    NewErrors(Vec<Found>),
    /// A workload whose pools span `regions` was left as written: the review read only
    /// `clusters`, part of its demand.
    Spread {
        workload: String,
        regions: Vec<String>,
        clusters: String,
    },
    /// Workloads left as written: no GPU held in the window.
    WithoutData(Vec<String>),
}
