//! `gpuplan review PLAN`: the quarterly capacity review from real telemetry. The first
//! number is GPU-seconds allocated against GPU-seconds used, per team (namespace) and
//! workload: utilisation percent and memory graphs mislead (vLLM holds 92% of memory busy or
//! idle; SM activity 0.2 is a fifth of the card all the time or all of it a fifth of the time).

pub(crate) mod analysis;
pub(crate) mod assemble;
pub mod files;
pub(crate) mod prometheus;
pub(crate) mod query;
pub(crate) mod telemetry;

pub use analysis::{analyse, Review, Settings};
