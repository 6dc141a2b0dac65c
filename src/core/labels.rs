//! Kubernetes labels gpuplan writes on pods and nodes and reads back from metrics: one list
//! for render (which allow-lists them in kube-state-metrics) and the review (which reads them).

/// The Kubernetes labels the review reads, as they are written on pods and nodes:
/// kube-state-metrics exports a label only when it is allow-listed
/// (`--metric-labels-allowlist`), so render writes these into the monitoring values. Their
/// Prometheus spellings are the review's `NODE_LABELS` and pod label queries (a test in
/// `review::query` holds the lists together).
pub const ALLOWLIST_PODS: &[&str] = &["gpuplan.io/workload", "app.kubernetes.io/name"];
pub const ALLOWLIST_NODES: &[&str] = &[
    "gpuplan.io/pool",
    "kubernetes.azure.com/agentpool",
    "agentpool",
    "eks.amazonaws.com/nodegroup",
    "karpenter.sh/nodepool",
    "node.kubernetes.io/instance-type",
    "nvidia.com/gpu.product",
    "nvidia.com/gpu.count",
    "nvidia.com/gpu.replicas",
    "nvidia.com/mig.config",
    "nvidia.com/mig.strategy",
];
