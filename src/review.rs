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
pub(crate) mod owners;
pub(crate) mod prometheus;
pub(crate) mod query;
pub(crate) mod rows;
pub(crate) mod serving;
pub(crate) mod telemetry;
pub(crate) mod timeline;
pub(crate) mod trend;

pub use analysis::{analyse, Review, Settings};
pub use forecast::Method;
/// The step a review takes when none is given: whole minutes, under 11,000 windows.
pub use prometheus::step_for as default_step;

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
