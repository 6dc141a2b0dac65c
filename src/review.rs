//! `gpuplan review PLAN`: the quarterly capacity review from real telemetry. The first
//! number is GPU-seconds allocated against GPU-seconds used, per team (namespace) and
//! workload: utilisation percent and memory graphs mislead (vLLM holds 92% of memory busy or
//! idle; SM activity 0.2 is a fifth of the card all the time or all of it a fifth of the time).

pub(crate) mod advice;
pub(crate) mod analysis;
pub(crate) mod assemble;
pub(crate) mod bought;
pub mod files;
pub(crate) mod forecast;
pub(crate) mod next_plan;
pub mod noticed;
pub(crate) mod numbers;
pub(crate) mod owners;
pub(crate) mod prometheus;
pub(crate) mod query;
pub(crate) mod rows;
pub(crate) mod says;
pub(crate) mod serving;
pub(crate) mod telemetry;
pub(crate) mod timeline;
pub(crate) mod trend;

use crate::review::rows::{
    Advice, Coverage, IdleNode, IdlePool, ModelRow, PendingPod, PoolRow, ReservationAdvice,
    ReservationFill, Stalled, TeamRow, Unmatched, Window, WorkloadRow,
};
pub use analysis::analyse;
pub use forecast::Method;
/// The step a review takes when none is given: whole minutes, under 11,000 windows.
pub use prometheus::step_for as default_step;

use serde::Serialize;
use std::collections::BTreeMap;

/// The review as `gpuplan.review/v1` serialises it: its rows per team, workload, GPU model
/// and pool, the coverage of the data, stalled and Pending pods, idle floors and nodes,
/// reservation fill and advice, and the recommendations.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct Review {
    pub schema: &'static str,
    pub plan: String,
    pub source: String,
    pub window: Window,
    pub coverage: Coverage,
    pub teams: Vec<TeamRow>,
    pub workloads: Vec<WorkloadRow>,
    pub models: Vec<ModelRow>,
    pub pools: Vec<PoolRow>,
    pub stalled: Vec<Stalled>,
    pub pending: Vec<PendingPod>,
    pub idle_pools: Vec<IdlePool>,
    /// Nodes with GPUs nobody requested (needs node metrics; empty otherwise).
    pub idle_nodes: Vec<IdleNode>,
    pub reservations: Vec<ReservationFill>,
    /// The reservations `--purchases` says were bought, against what their pools held.
    pub purchase_fill: Vec<bought::PurchaseFill>,
    pub reservation_advice: Vec<ReservationAdvice>,
    pub unmatched: Vec<Unmatched>,
    pub recommendations: Vec<Advice>,
    /// Inference workloads judged by their vLLM serving metrics.
    pub serving: Vec<serving::ServingRow>,
    /// Inference workloads that state a vLLM server but exported no serving metrics: judged
    /// by GPU activity, as the report says.
    pub serving_missing: Vec<String>,
    /// Next quarter from this window: what `--write-plan` proposes, and why.
    pub next_quarter: forecast::NextQuarter,
    /// Allocated and used GPUs per team over time, for the charts.
    #[serde(skip)]
    pub timeline: BTreeMap<String, Vec<(i64, f64, f64)>>,
}

/// Settings of the analysis.
pub struct Settings {
    /// A pod is stalled after this many seconds allocated with near-zero activity.
    pub stalled_after: i64,
    /// Activity below this share of the allocated GPUs counts as none.
    pub quiet_below: f64,
    /// Efficiency below which a slice or GPU is over-sized (GP025's threshold).
    pub low_utilization: f64,
    /// How next quarter is forecast.
    pub forecast: forecast::Method,
}

/// Why a review could not be made: each names the file and line, the window, the server or
/// the data that stopped it.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum ReviewError {
    /// A telemetry file's line (and column) that is not what the format expects.
    #[error("{file}:{line}{}: {message}", column.map_or(String::new(), |c| format!(":{c}")))]
    #[diagnostic(code(gpuplan::review::input))]
    At {
        file: String,
        line: usize,
        column: Option<usize>,
        message: String,
    },
    #[error("cannot read `{file}`: {source}")]
    #[diagnostic(code(gpuplan::review::read))]
    Read {
        file: String,
        #[source]
        source: std::io::Error,
    },
    /// A telemetry file as a whole: no samples, no rows, times out of range.
    #[error("{file}: {message}")]
    #[diagnostic(code(gpuplan::review::file))]
    File { file: String, message: String },
    /// The window or step asked for.
    #[error("{0}")]
    #[diagnostic(code(gpuplan::review::window))]
    Window(String),
    /// A Prometheus server that cannot be reached or does not answer as Prometheus does (its
    /// URL without credentials).
    #[error("{0}")]
    #[diagnostic(code(gpuplan::review::prometheus))]
    Prometheus(String),
    /// Data that cannot be reviewed as one cluster.
    #[error("{0}")]
    #[diagnostic(code(gpuplan::review::data))]
    Data(String),
}
