//! Telemetry from files, for teams without a reachable Prometheus.
//!
//! **Prometheus text / OpenMetrics** with timestamps (seconds in OpenMetrics, which ends with
//! `# EOF`; milliseconds in the Prometheus text format): the series kube-state-metrics and
//! dcgm-exporter export, with their stock labels (see [`super::query::QUERIES`]). The file is
//! streamed twice (once for its span and sample order, once to evaluate the queries), so
//! memory grows with series × windows, never with the file.
//!
//! **CSV** (header required; extra columns ignored):
//! `timestamp,namespace,pod,allocated_gpus,used_gpus[,tokens_total][,app]`: one row per
//! running pod and sample; `used_gpus` is the engine-active fraction summed over the pod's
//! GPUs (0.5 = half of one GPU busy). Each row is read as kube-state-metrics and dcgm-exporter
//! samples of that pod, so both formats meet the same evaluator.

mod csv;
mod exposition;
mod source;

pub(crate) use csv::read_csv;
pub use exposition::read_exposition;
pub use source::{Read, Window};
