//! What the review asks: each query's metrics, matchers, window function and grouping labels.

use super::spec::{Match, Over, Query, Q};

/// `uid`: kube-state-metrics 2 puts it on every pod metric; a pod name used again is a new
/// `uid` (`assemble::pods::runs`).
const REQ: &[&str] = &[
    "cluster",
    "namespace",
    "pod",
    "uid",
    "container",
    "node",
    "resource",
];
const POD: &[&str] = &["cluster", "namespace", "pod"];
/// One vLLM engine of a pod: a server run with `--data-parallel-size` exports each engine's
/// series under its own `engine` label (vLLM `v1/metrics/loggers.py`, `make_per_engine`),
/// which are summed per pod, never taken as duplicates of one another.
const ENGINE: &[&str] = &["cluster", "namespace", "pod", "engine"];
const DEVICE: &[&str] = &[
    "cluster",
    "namespace",
    "pod",
    "Hostname",
    "gpu",
    "UUID",
    "GPU_I_ID",
    "GPU_I_PROFILE",
    "modelName",
];
const GPU_RES: &[(&str, Match)] = &[("resource", Match::GpuResource)];

/// Node labels the review reads: the pool (AKS, EKS managed node groups, Karpenter, as
/// kube-state-metrics exports them with `--metric-labels-allowlist`), and what GPU feature
/// discovery says about the node's GPUs.
pub(crate) const NODE_LABELS: &[&str] = &[
    "cluster",
    "node",
    "label_gpuplan_io_pool",
    "label_kubernetes_azure_com_agentpool",
    "label_agentpool",
    "label_eks_amazonaws_com_nodegroup",
    "label_karpenter_sh_nodepool",
    "label_node_kubernetes_io_instance_type",
    "label_nvidia_com_gpu_product",
    "label_nvidia_com_gpu_count",
    "label_nvidia_com_gpu_replicas",
    "label_nvidia_com_mig_config",
    "label_nvidia_com_mig_strategy",
];

/// A Kubernetes label as kube-state-metrics names it (`label_` and every character that is
/// not a letter or digit as `_`: kube-state-metrics `pkg/metric_generator` sanitisation).
#[cfg(test)]
pub(crate) fn prometheus_label(k8s: &str) -> String {
    let body: String = k8s
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    format!("label_{body}")
}

pub(crate) const QUERIES: &[Query] = &[
    Query {
        id: Q::Requests,
        metrics: &["kube_pod_container_resource_requests"],
        matchers: GPU_RES,
        over: Over::Avg,
        by: REQ,
        pod_labels: true,
    },
    Query {
        id: Q::InitRequests,
        metrics: &["kube_pod_init_container_resource_requests"],
        matchers: GPU_RES,
        over: Over::Avg,
        by: REQ,
        pod_labels: true,
    },
    Query {
        id: Q::Sidecars,
        metrics: &["kube_pod_init_container_info"],
        matchers: &[("restart_policy", Match::Eq("Always"))],
        over: Over::Max,
        by: &["cluster", "namespace", "pod", "container"],
        pod_labels: true,
    },
    Query {
        id: Q::Running,
        metrics: &["kube_pod_status_phase"],
        matchers: &[("phase", Match::Eq("Running"))],
        over: Over::Sum,
        by: POD,
        pod_labels: true,
    },
    Query {
        id: Q::Scraped,
        metrics: &["kube_pod_status_phase"],
        matchers: &[("phase", Match::Eq("Running"))],
        over: Over::Count,
        by: POD,
        pod_labels: true,
    },
    Query {
        id: Q::Pending,
        metrics: &["kube_pod_status_phase"],
        matchers: &[("phase", Match::Eq("Pending"))],
        over: Over::Sum,
        by: POD,
        pod_labels: true,
    },
    Query {
        id: Q::Scheduled,
        metrics: &["kube_pod_status_scheduled"],
        matchers: &[("condition", Match::NotEmpty)],
        over: Over::Sum,
        by: &["cluster", "namespace", "pod", "condition"],
        pod_labels: true,
    },
    Query {
        id: Q::Waiting,
        metrics: &["kube_pod_container_status_waiting_reason"],
        matchers: &[("reason", Match::NotEmpty)],
        over: Over::Sum,
        by: &["cluster", "namespace", "pod", "reason"],
        pod_labels: true,
    },
    Query {
        id: Q::PodLabels,
        metrics: &["kube_pod_labels"],
        matchers: &[("label_app_kubernetes_io_name", Match::NotEmpty)],
        over: Over::Max,
        by: &[
            "cluster",
            "namespace",
            "pod",
            "label_app_kubernetes_io_name",
        ],
        pod_labels: true,
    },
    Query {
        id: Q::WorkloadLabels,
        metrics: &["kube_pod_labels"],
        matchers: &[("label_gpuplan_io_workload", Match::NotEmpty)],
        over: Over::Max,
        by: &["cluster", "namespace", "pod", "label_gpuplan_io_workload"],
        pod_labels: true,
    },
    Query {
        id: Q::PodCreator,
        metrics: &["kube_pod_info"],
        matchers: &[("created_by_name", Match::NotEmpty)],
        over: Over::Max,
        by: &[
            "cluster",
            "namespace",
            "pod",
            "created_by_kind",
            "created_by_name",
        ],
        pod_labels: true,
    },
    Query {
        id: Q::ReplicaSetOwner,
        metrics: &["kube_replicaset_owner"],
        matchers: &[("owner_name", Match::NotEmpty)],
        over: Over::Max,
        by: &[
            "cluster",
            "namespace",
            "replicaset",
            "owner_kind",
            "owner_name",
        ],
        pod_labels: true,
    },
    Query {
        id: Q::JobOwner,
        metrics: &["kube_job_owner"],
        matchers: &[("owner_name", Match::NotEmpty)],
        over: Over::Max,
        by: &[
            "cluster",
            "namespace",
            "job_name",
            "owner_kind",
            "owner_name",
        ],
        pod_labels: true,
    },
    Query {
        id: Q::Active,
        metrics: &["DCGM_FI_PROF_GR_ENGINE_ACTIVE"],
        matchers: &[],
        over: Over::Sum,
        by: DEVICE,
        pod_labels: true,
    },
    Query {
        id: Q::ActiveCount,
        metrics: &["DCGM_FI_PROF_GR_ENGINE_ACTIVE"],
        matchers: &[],
        over: Over::Count,
        by: DEVICE,
        pod_labels: true,
    },
    Query {
        id: Q::DeviceScrapes,
        metrics: &["DCGM_FI_PROF_GR_ENGINE_ACTIVE"],
        matchers: &[],
        over: Over::Count,
        // Max: the same series scraped twice (two jobs, two Prometheus replicas) is one.
        by: &[
            "cluster",
            "Hostname",
            "gpu",
            "UUID",
            "GPU_I_ID",
            "vgpu",
            "namespace",
            "pod",
        ],
        pod_labels: true,
    },
    Query {
        id: Q::Util,
        metrics: &["DCGM_FI_DEV_GPU_UTIL"],
        matchers: &[],
        over: Over::Sum,
        by: DEVICE,
        pod_labels: true,
    },
    Query {
        id: Q::UtilCount,
        metrics: &["DCGM_FI_DEV_GPU_UTIL"],
        matchers: &[],
        over: Over::Count,
        by: DEVICE,
        pod_labels: true,
    },
    Query {
        id: Q::Tokens,
        metrics: &[
            "vllm:generation_tokens_total",
            "vllm_generation_tokens_total",
        ],
        matchers: &[],
        over: Over::Max,
        // Max: one server per pod; a second scrape of it is a duplicate, not more tokens.
        by: POD,
        pod_labels: true,
    },
    Query {
        id: Q::ServingWaiting,
        metrics: &["vllm:num_requests_waiting", "vllm_num_requests_waiting"],
        matchers: &[],
        over: Over::Avg,
        by: ENGINE,
        pod_labels: true,
    },
    Query {
        id: Q::ServingRunning,
        metrics: &["vllm:num_requests_running", "vllm_num_requests_running"],
        matchers: &[],
        over: Over::Avg,
        by: ENGINE,
        pod_labels: true,
    },
    Query {
        id: Q::ServingRunningPeak,
        metrics: &["vllm:num_requests_running", "vllm_num_requests_running"],
        matchers: &[],
        over: Over::Max,
        by: ENGINE,
        pod_labels: true,
    },
    Query {
        id: Q::ServingWaitingPeak,
        metrics: &["vllm:num_requests_waiting", "vllm_num_requests_waiting"],
        matchers: &[],
        over: Over::Max,
        by: ENGINE,
        pod_labels: true,
    },
    Query {
        id: Q::ServingKvCache,
        metrics: &[
            "vllm:gpu_cache_usage_perc",
            "vllm_gpu_cache_usage_perc",
            "vllm:kv_cache_usage_perc",
            "vllm_kv_cache_usage_perc",
        ],
        matchers: &[],
        over: Over::Avg,
        by: ENGINE,
        pod_labels: true,
    },
    Query {
        id: Q::ServingTtft,
        metrics: &[
            "vllm:time_to_first_token_seconds_bucket",
            "vllm_time_to_first_token_seconds_bucket",
        ],
        matchers: &[("le", Match::NotEmpty)],
        over: Over::Max,
        // Max: one engine's series scraped twice is a duplicate.
        by: &["cluster", "namespace", "pod", "engine", "le"],
        pod_labels: true,
    },
    Query {
        id: Q::ServingFinished,
        metrics: &["vllm:request_success_total", "vllm_request_success_total"],
        matchers: &[],
        over: Over::Max,
        // Every finish reason: `stop` and `length` served, `abort` a client that gave up. All
        // arrived, so the arrivals do not depend on how long clients wait.
        by: &["cluster", "namespace", "pod", "engine", "finished_reason"],
        pod_labels: true,
    },
    Query {
        id: Q::NodeAllocatable,
        metrics: &["kube_node_status_allocatable"],
        matchers: GPU_RES,
        over: Over::Avg,
        by: &["cluster", "node", "resource"],
        pod_labels: false,
    },
    Query {
        id: Q::NodeScraped,
        metrics: &["kube_node_status_allocatable"],
        matchers: GPU_RES,
        over: Over::Count,
        by: &["cluster", "node", "resource"],
        pod_labels: false,
    },
    Query {
        id: Q::NodeLabels,
        metrics: &["kube_node_labels"],
        matchers: &[],
        over: Over::Max,
        by: NODE_LABELS,
        pod_labels: false,
    },
];
