//! The rows the review ([`super::Review`], `gpuplan.review/v1`) is made of: per team,
//! workload, GPU model and pool, the coverage of the data, stalled and Pending pods, idle
//! floors and nodes, reservation fill and advice, the recommendations, and the right-sizes
//! the forecast may take. The stages fill them; the rows import none of the stages (only
//! `owners`' match counts).

use serde::Serialize;

#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct Window {
    pub from: String,
    pub to: String,
    pub step_seconds: i64,
}

/// The window asked for against what the data covers.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct Coverage {
    pub requested_seconds: i64,
    /// Seconds of the window holding kube-state-metrics data: costs and advice use these.
    pub covered_seconds: i64,
    pub share: f64,
    pub data_from: Option<String>,
    pub data_to: Option<String>,
    /// Scrape intervals inferred from the data.
    pub kube_state_metrics_interval_seconds: Option<f64>,
    /// Each distinct interval kube-state-metrics was scraped at over the window.
    pub kube_state_metrics_intervals_seconds: Vec<f64>,
    /// A file whose rows carry each pod's allocation and use together (CSV): the rows'
    /// spacing. No exporter was scraped; the intervals above are this one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rows_every_seconds: Option<f64>,
    pub dcgm_interval_seconds: Option<f64>,
    /// Each distinct interval a DCGM target was scraped at, by target and over time (one
    /// where every target agrees and none changed).
    pub dcgm_intervals_seconds: Vec<f64>,
    /// Pods that held GPUs but have no usage series: "no data", never 0%.
    pub pods_without_usage: Vec<Unmatched>,
    /// Usage attributed to pods that requested no GPU.
    pub usage_without_pod: Vec<Unmatched>,
    /// Spans a node's dcgm-exporter reported nothing while the node was seen: usage there is
    /// no data.
    pub dcgm_gaps: Vec<DcgmGap>,
}

#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct DcgmGap {
    pub node: String,
    pub from: String,
    pub to: String,
    pub seconds: i64,
}

/// GPU-seconds allocated against used, as every team and workload row states them.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct Figures {
    pub allocated_gpu_seconds: f64,
    pub used_gpu_seconds: f64,
    /// Of the allocated, GPU-seconds with no usage data (not in the efficiency).
    pub no_data_gpu_seconds: f64,
    pub efficiency: Option<f64>,
    /// Part of it was read from time-sliced GPUs, where dcgm-exporter reports one activity
    /// per card: that part is the card's, shared among its pods by allocation, not measured
    /// per pod.
    pub efficiency_of_shared_cards: bool,
    pub idle_cost_usd: f64,
    /// GPU-seconds requested by Pending pods: demand the cluster did not meet.
    pub pending_gpu_seconds: f64,
}

#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct TeamRow {
    pub team: String,
    #[serde(flatten)]
    pub figures: Figures,
}

#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct WorkloadRow {
    pub workload: String,
    pub team: String,
    #[serde(flatten)]
    pub figures: Figures,
    /// `utilization` the plan expects, to compare with what was measured.
    pub planned_utilization: Option<f64>,
    pub usd_per_million_tokens: Option<f64>,
    pub pods: usize,
    /// How its pods were told to be its: by label, controller, name prefix, or as the only
    /// workload of the team on their GPU model.
    pub matched_pods: super::owners::MatchCounts,
    /// Share of the time its pods held GPUs that a container waited in `CrashLoopBackOff`.
    pub crashloop_share: Option<f64>,
}

/// A GPU model's seconds: a T4 second is not an A100 second.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct ModelRow {
    pub model: String,
    pub allocated_gpu_seconds: f64,
    pub used_gpu_seconds: f64,
    pub efficiency: Option<f64>,
    pub allocated_cost_usd: Option<f64>,
    pub idle_cost_usd: Option<f64>,
}

#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct PoolRow {
    /// The plan pool, or the node pool label when no plan pool matches.
    pub pool: String,
    pub in_plan: bool,
    pub model: Option<String>,
    /// Where "used" was read from on its nodes.
    pub signal: Option<String>,
    pub allocated_gpu_seconds: f64,
    pub used_gpu_seconds: f64,
    pub efficiency: Option<f64>,
    /// Part of it was read from time-sliced GPUs, where dcgm-exporter reports one activity
    /// per card: that part is the card's, shared among its pods by allocation, not measured
    /// per pod.
    pub efficiency_of_shared_cards: bool,
    pub allocated_cost_usd: Option<f64>,
    pub idle_cost_usd: Option<f64>,
    /// Physical GPUs held, peak and 95th percentile over the covered windows.
    pub peak_gpus: f64,
    pub p95_gpus: f64,
}

#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct Stalled {
    pub workload: Option<String>,
    pub team: String,
    pub pod: String,
    /// Its longest stretch with no activity: when it began, how long, the GPUs held.
    pub since: String,
    pub seconds: i64,
    pub allocated_gpus: f64,
    /// Every stretch longer than the threshold (the longest among them): how many, their
    /// seconds and GPU-seconds in all.
    pub stretches: usize,
    pub all_seconds: i64,
    pub all_gpu_seconds: f64,
}

#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct PendingPod {
    pub workload: Option<String>,
    pub team: String,
    pub pod: String,
    pub gpu_seconds: f64,
    /// The part while no node would take it; the rest it was scheduled and starting (image
    /// pulls, init containers). `None` without `kube_pod_status_scheduled`.
    pub unscheduled_gpu_seconds: Option<f64>,
    /// The part scheduled but waiting in `ErrImagePull` / `ImagePullBackOff`.
    pub image_pull_gpu_seconds: f64,
}

#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct IdlePool {
    pub pool: String,
    pub idle_gpu_seconds: f64,
    pub idle_cost_usd: f64,
}

/// A node that was paid for while its GPUs sat unrequested.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct IdleNode {
    pub node: String,
    /// The node's pool label, and the plan pool it matched (by name, as AKS shortens it).
    pub pool_label: Option<String>,
    pub pool: Option<String>,
    /// Seconds the node was up with no GPU requested on it at all.
    pub empty_seconds: i64,
    /// Its longest contiguous stretch with no GPU requested.
    pub longest_empty_seconds: i64,
    /// GPU-seconds of its whole cards that no running pod requested; on a MIG node this
    /// includes the slices no instance covers, since the node is paid for whole.
    pub idle_gpu_seconds: f64,
    /// Of those, GPU-seconds of MIG slices no instance covered (the geometry strands them).
    pub stranded_gpu_seconds: f64,
    /// At the matched pool's price; `None` when the node matches no plan pool.
    pub idle_cost_usd: Option<f64>,
}

#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct ReservationFill {
    pub pool: String,
    pub reserved_gpu_seconds: f64,
    pub allocated_gpu_seconds: f64,
    pub fill: f64,
}

/// What a reservation of the measured floor would save, per SKU and region.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct ReservationAdvice {
    pub pool: String,
    pub sku: String,
    pub region: String,
    /// GPUs held at least 90% of the covered span (the 10th percentile), and the median.
    pub floor_gpus: f64,
    pub p10_gpus: f64,
    pub p50_gpus: f64,
    /// Whole nodes of the floor: what to reserve, never more.
    pub nodes: i64,
    pub on_demand_usd_per_month: f64,
    pub options: Vec<ReservationOption>,
    #[schemars(with = "Option<String>")]
    pub note: Option<super::says::NotReserved>,
}

#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct ReservationOption {
    pub term: &'static str,
    pub usd_per_month: f64,
    pub saving_usd_per_month: f64,
    /// The share of hours the nodes must be held for the reservation to beat on-demand.
    pub break_even_utilization: f64,
    pub source: String,
}

#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct Unmatched {
    pub namespace: String,
    pub pod: String,
    pub allocated_gpu_seconds: f64,
    pub used_gpu_seconds: f64,
    /// Usage with no GPU-requesting pod: the node and GPU it was on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu: Option<String>,
}

crate::core::named_enum! {
    /// What a piece of review advice changes. In the order of their text: advice is sorted by
    /// it.
    pub enum AdviceKind {
        CrashLoop => "crash-loop",
        EmptyNode => "empty-node",
        ReapStalled => "reap-stalled",
        ReserveFloor => "reserve-floor",
        RightSize => "right-size",
        ShrinkPool => "shrink-pool",
        UnmetDemand => "unmet-demand",
    }
}

#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct Advice {
    #[schemars(with = "String")]
    pub kind: AdviceKind,
    pub workload: Option<String>,
    pub pool: Option<String>,
    /// What the change would have saved over the window; `None` where no price is known
    /// (or the change buys capacity rather than saving it).
    pub saving_usd: Option<f64>,
    #[schemars(with = "String")]
    pub message: super::says::AdviceSays,
    /// The plan change to make, as TOML.
    #[schemars(with = "String")]
    pub change: super::says::AdviceChange,
}

/// A right-size the plan can take: the workload's new `gpu_fraction` and `sharing`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RightSize {
    pub fraction: f64,
    pub sharing: crate::core::Sharing,
    /// The slice it takes.
    pub slice: super::says::Slice,
}

#[cfg(test)]
mod kind_tests {
    use super::AdviceKind;

    /// Advice is sorted by kind, and the order an output lists it in is the kinds' text order.
    #[test]
    fn advice_kinds_sort_as_their_text() {
        let mut by_text = AdviceKind::ALL.to_vec();
        by_text.sort_by_key(|k| k.as_str());
        assert_eq!(by_text, AdviceKind::ALL);
        let mut by_ord = AdviceKind::ALL.to_vec();
        by_ord.sort();
        assert_eq!(by_ord, AdviceKind::ALL);
    }
}
