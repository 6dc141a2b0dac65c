//! The review's questions, asked the same way of a Prometheus server and of a file.
//!
//! Each [`Query`] is one PromQL expression of the form
//! `ACROSS by (LABELS) (REWRITE(OVER_over_time(SELECTOR[STEP - 1ms])))`, evaluated at the end
//! of every step window. The file reader computes the same expression itself from the raw
//! samples ([`Collector`]), so both paths hand [`super::assemble`] identical [`Answers`] and
//! cannot disagree. Over-time functions read only the raw samples inside each window: no
//! lookback, so a series that ends mid-window ends there (an instant query would carry it
//! five minutes on), and a six-minute job is counted by its own samples, not by whether a
//! step happened to land on it.

use std::collections::{BTreeMap, HashMap};

/// The step windows of a review: window `k` holds the samples with
/// `from + k·step <= t < from + (k+1)·step`; a sample stands for the interval after it.
/// Prometheus evaluates each window at its last millisecond, `T = from + (k+1)·step - 1 ms`,
/// over a range that ends there: `[step - 1ms]` in Prometheus 2 (closed ranges), `[step]` in
/// Prometheus 3 (left-open ranges).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grid {
    /// Unix seconds.
    pub from: i64,
    pub step: i64,
    pub windows: u32,
}

/// The most step windows a review takes: a quarter at one minute is 129,600. More is a step
/// too small for the window (`--step 1s --window 3660d`), and would ask a server for millions
/// of points per series.
pub(crate) const MAX_WINDOWS: i64 = 200_000;

impl Grid {
    /// The grid of `[from, to)` at `step`, or why not.
    pub(crate) fn new(from: i64, to: i64, step: i64) -> Result<Grid, super::ReviewError> {
        if from >= to {
            return Err(super::ReviewError::Window(
                "the window is empty: `--from` must come before `--to`".into(),
            ));
        }
        let windows = (to - from + step - 1) / step.max(1);
        if windows > MAX_WINDOWS {
            return Err(super::ReviewError::Window(format!(
                "the window holds {windows} steps of {step} s, more than {MAX_WINDOWS}: give a larger `--step`"
            )));
        }
        Ok(Grid {
            from,
            step,
            windows: windows.max(1) as u32,
        })
    }

    pub(crate) fn to(&self) -> i64 {
        self.from + self.step * i64::from(self.windows)
    }
    /// The window a sample at `ms` (Unix milliseconds) falls in, if any.
    pub(crate) fn window(&self, ms: i64) -> Option<u32> {
        let d = ms - self.from * 1000;
        if d < 0 {
            return None;
        }
        let k = d / (self.step * 1000);
        (k < i64::from(self.windows)).then_some(k as u32)
    }
    /// Start of window `k`, Unix seconds.
    pub(crate) fn start(&self, k: u32) -> i64 {
        self.from + self.step * i64::from(k)
    }
    /// The window Prometheus evaluated at `ms` (a window's last millisecond).
    pub(crate) fn window_ending(&self, ms: i64) -> Option<u32> {
        let d = ms + 1 - self.from * 1000;
        let step = self.step * 1000;
        if d <= 0 || d % step != 0 {
            return None;
        }
        let k = d / step - 1;
        (k < i64::from(self.windows)).then_some(k as u32)
    }
}

/// How samples inside one window become one value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Over {
    Avg,
    Sum,
    Count,
    Max,
}

impl Over {
    /// Whether the two read a window aggregate in common (an average reads the sum and count).
    fn shares(self, other: Over) -> bool {
        self == other || self == Over::Avg || other == Over::Avg
    }
}

/// The series of one group become one value by their maximum: the same series scraped twice
/// (copies differing only by `instance`) must count once, on both paths.
fn combine(row: &mut Row, k: u32, v: f64) {
    row.update(k, |x| x.map_or(v, |x| x.max(v)));
}

/// A label matcher, written once for both paths.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Match {
    Eq(&'static str),
    NotEmpty,
    /// `nvidia_com_gpu|nvidia_com_mig_.*`: whole GPUs and MIG instances of the mixed strategy.
    GpuResource,
}

impl Match {
    fn promql(&self, label: &str) -> String {
        match self {
            Match::Eq(v) => format!("{label}=\"{v}\""),
            Match::NotEmpty => format!("{label}!=\"\""),
            Match::GpuResource => format!("{label}=~\"nvidia_com_gpu|nvidia_com_mig_.*\""),
        }
    }
    fn holds(&self, v: Option<&str>) -> bool {
        match self {
            Match::Eq(x) => v.unwrap_or("") == *x,
            Match::NotEmpty => v.is_some_and(|v| !v.is_empty()),
            Match::GpuResource => {
                v.is_some_and(|v| v == "nvidia_com_gpu" || v.starts_with("nvidia_com_mig_"))
            }
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Q {
    /// GPUs each container requests (kube-state-metrics).
    Requests,
    /// GPUs each init container requests; native sidecars are told by `SidecarInfo`.
    InitRequests,
    /// Init containers with `restartPolicy: Always` (native sidecars, Kubernetes 1.29+).
    Sidecars,
    /// Samples with `phase="Running"` = 1, and how many phase samples there were.
    Running,
    Scraped,
    Pending,
    /// `kube_pod_status_scheduled` per condition: `false` while no node would take the pod,
    /// so Pending time splits into unscheduled and starting (image pulls, init containers).
    Scheduled,
    /// Samples of a container waiting, by reason: `CrashLoopBackOff` (GPUs held by a pod that
    /// restarts), `ErrImagePull` / `ImagePullBackOff` (a Pending pod that cannot pull).
    Waiting,
    /// `app.kubernetes.io/name`, where kube-state-metrics exports pod labels.
    PodLabels,
    /// `gpuplan.io/workload`, the label render puts on every pod it plans (read before
    /// `app.kubernetes.io/name`), where kube-state-metrics exports it.
    WorkloadLabels,
    /// The controller that made each pod (`kube_pod_info`'s `created_by_kind` and
    /// `created_by_name`, exported on a stock install): a pod of a Deployment names its
    /// ReplicaSet, of a CronJob its Job.
    PodCreator,
    /// The Deployment (or other owner) of each ReplicaSet (`kube_replicaset_owner`).
    ReplicaSetOwner,
    /// The CronJob (or other owner) of each Job (`kube_job_owner`).
    JobOwner,
    /// `DCGM_FI_PROF_GR_ENGINE_ACTIVE` summed and counted per device and pod.
    Active,
    ActiveCount,
    /// Samples per card, `vgpu` copy and pod: summed over pods per card in `assemble`, the
    /// DCGM scrape interval from rows as long as the card's life.
    DeviceScrapes,
    /// `DCGM_FI_DEV_GPU_UTIL` (percent), the fallback where profiling metrics are absent.
    Util,
    UtilCount,
    /// A generated-token counter's highest value in each window.
    Tokens,
    /// vLLM's requests queued (`vllm:num_requests_waiting`), per pod, averaged per window.
    ServingWaiting,
    /// vLLM's requests being served (`vllm:num_requests_running`), per pod.
    ServingRunning,
    /// vLLM's KV-cache blocks in use, 0..1 (`vllm:gpu_cache_usage_perc`, renamed
    /// `vllm:kv_cache_usage_perc` by the V1 engine), per pod.
    ServingKvCache,
    /// vLLM's time-to-first-token histogram: each bucket counter's highest value per window.
    ServingTtft,
    /// GPUs each node offers, and how many samples of them.
    NodeAllocatable,
    NodeScraped,
    NodeLabels,
}

pub(crate) struct Query {
    pub id: Q,
    pub metrics: &'static [&'static str],
    pub matchers: &'static [(&'static str, Match)],
    pub over: Over,
    pub by: &'static [&'static str],
    /// Whether pod labels are rewritten: `exported_*` (a ServiceMonitor without
    /// `honorLabels` renames the exporter's own `pod`, `namespace`, `container`) and the old
    /// `pod_name` / `pod_namespace` win over the scrape target's labels.
    pub pod_labels: bool,
}

const REQ: &[&str] = &[
    "cluster",
    "namespace",
    "pod",
    "container",
    "node",
    "resource",
];
const POD: &[&str] = &["cluster", "namespace", "pod"];
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
        by: POD,
        pod_labels: true,
    },
    Query {
        id: Q::ServingRunning,
        metrics: &["vllm:num_requests_running", "vllm_num_requests_running"],
        matchers: &[],
        over: Over::Avg,
        by: POD,
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
        by: POD,
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
        // Max: one server per pod; a second scrape of it is a duplicate.
        by: &["cluster", "namespace", "pod", "le"],
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

/// Pod label rewrites in the order they apply (innermost first): the later win.
const REWRITES: &[(&str, &str)] = &[
    ("pod", "pod_name"),
    ("namespace", "pod_namespace"),
    ("pod", "exported_pod"),
    ("namespace", "exported_namespace"),
    ("container", "exported_container"),
];

impl Query {
    /// The PromQL expression, for a window of `step` seconds, limited to one `cluster` when
    /// given.
    pub(crate) fn promql(&self, step: i64, cluster: Option<&str>, prometheus3: bool) -> String {
        let mut sel: Vec<String> = Vec::new();
        if self.metrics.len() > 1 {
            sel.push(format!("__name__=~\"{}\"", self.metrics.join("|")));
        }
        sel.extend(self.matchers.iter().map(|(l, m)| m.promql(l)));
        if let Some(c) = cluster {
            sel.push(format!("cluster=\"{}\"", promql_escape(c)));
        }
        let name = if self.metrics.len() > 1 {
            ""
        } else {
            self.metrics[0]
        };
        let over = match self.over {
            Over::Avg => "avg",
            Over::Sum => "sum",
            Over::Count => "count",
            Over::Max => "max",
        };
        let range = if prometheus3 {
            step * 1000
        } else {
            step * 1000 - 1
        };
        let mut e = format!("{over}_over_time({name}{{{}}}[{range}ms])", sel.join(","));
        if !self.pod_labels {
            return format!("max by ({}) ({e})", self.by.join(", "));
        }
        // The rewrites write into labels of their own (`gpuplan_pod` ...), so every raw series
        // keeps its own labels and stays unique: rewriting `pod` in place would give an old
        // and a new dcgm-exporter on hostNetwork (the same `instance`, differing only by the
        // exporter's `pod`) the same labelset, which Prometheus refuses (HTTP 422). The groups
        // are then formed on the rewritten labels, as the file path forms them, and only then
        // named back.
        let rewritten = |l: &str| REWRITES.iter().any(|(dst, _)| *dst == l);
        let own = |l: &str| format!("gpuplan_{l}");
        for dst in self.by.iter().filter(|l| rewritten(l)) {
            e = format!(
                "label_replace({e}, \"{}\", \"$1\", \"{dst}\", \"(.+)\")",
                own(dst)
            );
        }
        for (dst, src) in REWRITES.iter().filter(|(dst, _)| self.by.contains(dst)) {
            e = format!(
                "label_replace({e}, \"{}\", \"$1\", \"{src}\", \"(.+)\")",
                own(dst)
            );
        }
        let inner: Vec<String> = self
            .by
            .iter()
            .map(|l| {
                if rewritten(l) {
                    own(l)
                } else {
                    (*l).to_owned()
                }
            })
            .collect();
        e = format!("max by ({}) ({e})", inner.join(", "));
        for l in self.by.iter().filter(|l| rewritten(l)) {
            e = format!(
                "label_replace({e}, \"{l}\", \"$1\", \"{}\", \"(.*)\")",
                own(l)
            );
        }
        format!("max by ({}) ({e})", self.by.join(", "))
    }

    fn selects(
        &self,
        name: &str,
        labels: &BTreeMap<String, String>,
        cluster: Option<&str>,
    ) -> bool {
        self.metrics.contains(&name)
            && self
                .matchers
                .iter()
                .all(|(l, m)| m.holds(labels.get(*l).map(String::as_str)))
            && cluster.is_none_or(|c| labels.get("cluster").map(String::as_str) == Some(c))
    }

    /// The group a series falls in: its values of `by`, after the rewrites.
    fn group(&self, labels: &BTreeMap<String, String>) -> Vec<String> {
        let get = |k: &str| -> String {
            if self.pod_labels {
                for (dst, src) in REWRITES.iter().rev() {
                    if *dst == k {
                        if let Some(v) = labels.get(*src).filter(|v| !v.is_empty()) {
                            return v.clone();
                        }
                    }
                }
            }
            labels.get(k).cloned().unwrap_or_default()
        };
        self.by.iter().map(|k| get(k)).collect()
    }
}

fn promql_escape(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"")
}

/// One group's value per window (by window index).
pub(crate) type Row = super::timeline::Timeline<u32, f64>;

/// One query's answer: per group (the values of its `by` labels, in order), per window, the
/// value.
pub(crate) type Rows = BTreeMap<Vec<String>, Row>;

/// Every query's answer, by query.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Answers {
    pub rows: BTreeMap<Q, Rows>,
    /// Requests are already in physical GPUs (the CSV format): no node's time-slicing or
    /// MIG strategy applies to them.
    pub gpus_as_given: bool,
}

impl Answers {
    pub(crate) fn get(&self, q: Q) -> impl Iterator<Item = (&Vec<String>, &Row)> {
        self.rows.get(&q).into_iter().flat_map(|r| r.iter())
    }
    pub(crate) fn query(q: Q) -> &'static Query {
        QUERIES
            .iter()
            .find(|x| x.id == q)
            .expect("every Q has a query")
    }
    /// The index of label `l` in the rows of `q`.
    pub(crate) fn col(q: Q, l: &str) -> usize {
        Self::query(q)
            .by
            .iter()
            .position(|x| *x == l)
            .expect("a label the query groups by")
    }
    /// Every row in its fewest runs: pieces of a long window arrive in any order.
    pub(crate) fn compact(&mut self) {
        self.rows
            .values_mut()
            .flat_map(|rows| rows.values_mut())
            .for_each(Row::compact);
    }
    /// The clusters the rows name (their `cluster` label), empty ones left out.
    pub(crate) fn clusters(&self) -> std::collections::BTreeSet<String> {
        let mut out = std::collections::BTreeSet::new();
        for (q, rows) in &self.rows {
            if let Some(c) = Self::query(*q).by.iter().position(|l| *l == "cluster") {
                out.extend(rows.keys().map(|g| g[c].clone()).filter(|c| !c.is_empty()));
            }
        }
        out
    }
    /// The rows of one cluster (rows of a query that has no `cluster` label are kept).
    pub(crate) fn of_cluster(&self, cluster: &str) -> Answers {
        let rows = self
            .rows
            .iter()
            .map(|(q, rows)| {
                let col = Self::query(*q).by.iter().position(|l| *l == "cluster");
                let kept: Rows = rows
                    .iter()
                    .filter(|(g, _)| col.is_none_or(|c| g[c] == cluster))
                    .map(|(g, r)| (g.clone(), r.clone()))
                    .collect();
                (*q, kept)
            })
            .collect();
        Answers {
            rows,
            gpus_as_given: self.gpus_as_given,
        }
    }
    /// Join another set of answers into this one, each value combined as the queries combine
    /// series.
    pub(crate) fn merge(&mut self, other: Answers) {
        use std::collections::btree_map::Entry;
        // A group (or a whole query) this side lacks is moved, not copied entry by entry:
        // the two never hold it at once.
        for (q, rows) in other.rows {
            let mine = match self.rows.entry(q) {
                Entry::Vacant(v) => {
                    v.insert(rows);
                    continue;
                }
                Entry::Occupied(o) => o.into_mut(),
            };
            for (group, row) in rows {
                match mine.entry(group) {
                    Entry::Vacant(v) => {
                        v.insert(row);
                    }
                    Entry::Occupied(mut o) => o.get_mut().merge_max(row),
                }
            }
        }
        self.gpus_as_given |= other.gpus_as_given;
    }

    /// Add one group's value of one window, combined as the query combines series.
    /// The group is copied only the first time it is seen: a server's answer gives thousands of
    /// points per group.
    pub(crate) fn add(&mut self, q: Q, group: &[String], k: u32, v: f64) {
        let rows = self.rows.entry(q).or_default();
        match rows.get_mut(group) {
            Some(row) => combine(row, k, v),
            None => {
                rows.insert(group.to_vec(), std::iter::once((k, v)).collect());
            }
        }
    }
}

/// Samples of one window of one raw series.
#[derive(Debug, Clone, Copy)]
struct Acc {
    k: u32,
    sum: f64,
    count: u32,
    max: f64,
}

/// What one raw series keeps per window: only the aggregates its queries read.
#[derive(Default)]
struct Kept {
    sum: Option<Row>,
    count: Option<Row>,
    max: Option<Row>,
}

impl Kept {
    fn for_queries(groups: &[(Q, Vec<String>)]) -> Self {
        let overs = || groups.iter().map(|(q, _)| Answers::query(*q).over);
        let needs = |f: fn(Over) -> bool| overs().any(f).then(Row::new);
        Kept {
            sum: needs(|o| matches!(o, Over::Sum | Over::Avg)),
            count: needs(|o| matches!(o, Over::Count | Over::Avg)),
            max: needs(|o| matches!(o, Over::Max)),
        }
    }
    /// Window `a.k`'s samples joined in (the window may hold some already: a sample that
    /// came after a later window's).
    fn add(&mut self, a: &Acc) {
        if let Some(r) = &mut self.sum {
            r.add(a.k, a.sum);
        }
        if let Some(r) = &mut self.count {
            r.add(a.k, f64::from(a.count));
        }
        if let Some(r) = &mut self.max {
            let m = a.max;
            r.update(a.k, |x| x.map_or(m, |x| x.max(m)));
        }
    }
    /// Query `over`'s row; `last` when no other query of the series reads it after.
    fn row(&mut self, over: Over, last: bool) -> Row {
        let take = |r: &mut Option<Row>| {
            if last {
                r.take().unwrap_or_default()
            } else {
                r.clone().unwrap_or_default()
            }
        };
        match over {
            Over::Sum => take(&mut self.sum),
            Over::Count => take(&mut self.count),
            Over::Max => take(&mut self.max),
            Over::Avg => {
                let (Some(sum), Some(count)) = (&self.sum, &self.count) else {
                    return Row::new();
                };
                sum.iter()
                    .zip(count.iter())
                    .map(|((k, s), (_, c))| (k, s / c))
                    .collect()
            }
        }
    }
}

struct Series {
    /// The queries it answers, with its group in each.
    groups: Vec<(Q, Vec<String>)>,
    /// The window samples arrive in, not yet in `kept`: samples come in time order, so a
    /// window is joined in once, when the next begins.
    open: Option<Acc>,
    kept: Kept,
    last_ms: i64,
    last_value: f64,
    /// Every sample time, kept only for series that a first pass saw out of order (a file
    /// concatenated twice, two exports merged): duplicates there are found exactly.
    seen: Option<HashMap<i64, f64>>,
}

/// A label block that does not parse.
#[derive(Debug)]
pub(crate) struct BadLabels;

/// Raw samples in, [`Answers`] out: the file path's evaluator of [`QUERIES`].
pub(crate) struct Collector {
    pub grid: Grid,
    cluster: Option<String>,
    index: HashMap<String, usize>,
    series: Vec<Series>,
    pub duplicates: u64,
    pub conflicts: u64,
}

/// The largest value a GPU request, allocatable count or usage sample may have: no node holds
/// a million GPUs. A larger one is a broken exporter or a hand-edited file.
pub(crate) const MAX_GPUS: f64 = 1e6;

/// The largest value one raw sample of metric `name` may have, on both paths: a ratio
/// (`DCGM_FI_PROF_GR_ENGINE_ACTIVE`, 0 to 1) is never a thousand, utilisation is a
/// percentage, a state or info metric is 0 or 1, a token counter is a counter.
pub(crate) fn sample_max(name: &str) -> f64 {
    match name {
        "DCGM_FI_PROF_GR_ENGINE_ACTIVE" => 1.0,
        "DCGM_FI_DEV_GPU_UTIL" => 100.0,
        "kube_pod_status_phase"
        | "kube_pod_labels"
        | "kube_pod_init_container_info"
        | "kube_node_labels" => 1.0,
        n if n.contains("tokens") => 1e18,
        _ => MAX_GPUS,
    }
}

/// Samples a second a scrape can give at most (a 100 ms interval): what bounds a count or a
/// sum over a window that a server computed.
const MAX_SAMPLES_PER_SECOND: f64 = 10.0;

impl Query {
    /// The largest value this query's answer may hold for one window of `step` seconds, if
    /// every sample was in bounds ([`sample_max`]): what a server's answer is held to.
    pub(crate) fn answer_max(&self, step: i64) -> f64 {
        let per_sample = self
            .metrics
            .iter()
            .map(|m| sample_max(m))
            .fold(0.0, f64::max);
        let samples = MAX_SAMPLES_PER_SECOND * step as f64;
        match self.over {
            Over::Avg | Over::Max => per_sample,
            Over::Count => samples,
            Over::Sum => per_sample * samples,
        }
    }
}

/// Whether any query reads metric `name`: asked of every line of a file, so a `match`
/// (length first, then bytes) rather than a scan of [`QUERIES`]; a test keeps them equal.
pub(crate) fn wanted(name: &str) -> bool {
    matches!(
        name,
        "kube_pod_container_resource_requests"
            | "kube_pod_init_container_resource_requests"
            | "kube_pod_init_container_info"
            | "kube_pod_status_phase"
            | "kube_pod_status_scheduled"
            | "kube_pod_container_status_waiting_reason"
            | "kube_pod_labels"
            | "kube_pod_info"
            | "kube_replicaset_owner"
            | "kube_job_owner"
            | "DCGM_FI_PROF_GR_ENGINE_ACTIVE"
            | "DCGM_FI_DEV_GPU_UTIL"
            | "vllm:generation_tokens_total"
            | "vllm_generation_tokens_total"
            | "vllm:num_requests_waiting"
            | "vllm_num_requests_waiting"
            | "vllm:num_requests_running"
            | "vllm_num_requests_running"
            | "vllm:gpu_cache_usage_perc"
            | "vllm_gpu_cache_usage_perc"
            | "vllm:kv_cache_usage_perc"
            | "vllm_kv_cache_usage_perc"
            | "vllm:time_to_first_token_seconds_bucket"
            | "vllm_time_to_first_token_seconds_bucket"
            | "kube_node_status_allocatable"
            | "kube_node_labels"
    )
}

impl Collector {
    pub(crate) fn new(grid: Grid, cluster: Option<String>) -> Self {
        Collector {
            grid,
            cluster,
            index: HashMap::new(),
            series: Vec::new(),
            duplicates: 0,
            conflicts: 0,
        }
    }

    /// The series id of `key` (its metric name and label text as written), registering it
    /// with `labels()` the first time. `None` when no query wants it.
    pub(crate) fn series(
        &mut self,
        key: &str,
        name: &str,
        labels: impl FnOnce() -> Option<BTreeMap<String, String>>,
        out_of_order: bool,
    ) -> Result<Option<usize>, BadLabels> {
        if let Some(&i) = self.index.get(key) {
            return Ok((i != usize::MAX).then_some(i));
        }
        let got = self.register(name, labels, out_of_order)?;
        self.index.insert(key.to_owned(), got.unwrap_or(usize::MAX));
        Ok(got)
    }

    /// Register a new series of metric `name`: its id, or `None` when no query wants it.
    pub(crate) fn register(
        &mut self,
        name: &str,
        labels: impl FnOnce() -> Option<BTreeMap<String, String>>,
        out_of_order: bool,
    ) -> Result<Option<usize>, BadLabels> {
        let labels = labels().ok_or(BadLabels)?;
        let groups: Vec<(Q, Vec<String>)> = QUERIES
            .iter()
            .filter(|q| q.selects(name, &labels, self.cluster.as_deref()))
            .map(|q| (q.id, q.group(&labels)))
            .collect();
        if groups.is_empty() {
            return Ok(None);
        }
        let i = self.series.len();
        self.series.push(Series {
            kept: Kept::for_queries(&groups),
            groups,
            open: None,
            last_ms: i64::MIN,
            last_value: f64::NAN,
            seen: out_of_order.then(HashMap::new),
        });
        Ok(Some(i))
    }

    pub(crate) fn sample(&mut self, id: usize, ms: i64, v: f64) {
        let s = &mut self.series[id];
        if let Some(seen) = &mut s.seen {
            match seen.get(&ms) {
                Some(x) if *x == v => {
                    self.duplicates += 1;
                    return;
                }
                Some(_) => {
                    self.conflicts += 1;
                    return;
                }
                None => {
                    seen.insert(ms, v);
                }
            }
        } else if ms == s.last_ms {
            if v == s.last_value {
                self.duplicates += 1;
            } else {
                self.conflicts += 1;
            }
            return;
        }
        s.last_ms = s.last_ms.max(ms);
        s.last_value = v;
        let Some(k) = self.grid.window(ms) else {
            return;
        };
        match &mut s.open {
            Some(a) if a.k == k => a.take(v),
            Some(a) if a.k > k => {
                let mut late = Acc::new(k);
                late.take(v);
                s.kept.add(&late);
            }
            open => {
                if let Some(done) = open.replace(Acc::new(k)) {
                    s.kept.add(&done);
                }
                if let Some(a) = open {
                    a.take(v);
                }
            }
        }
    }

    pub(crate) fn finish(self) -> Answers {
        let mut out = Answers::default();
        for mut s in self.series {
            if let Some(a) = s.open.take() {
                s.kept.add(&a);
            }
            let overs: Vec<Over> = s
                .groups
                .iter()
                .map(|(q, _)| Answers::query(*q).over)
                .collect();
            for (i, (q, group)) in s.groups.into_iter().enumerate() {
                let over = overs[i];
                let last = !overs[i + 1..].iter().any(|o| o.shares(over));
                let row = s.kept.row(over, last);
                match out.rows.entry(q).or_default().entry(group) {
                    std::collections::btree_map::Entry::Vacant(v) => {
                        v.insert(row);
                    }
                    std::collections::btree_map::Entry::Occupied(mut o) => {
                        o.get_mut().merge_max(row);
                    }
                }
            }
        }
        out.compact();
        out
    }
}

impl Acc {
    fn new(k: u32) -> Self {
        Acc {
            k,
            sum: 0.0,
            count: 0,
            max: f64::NEG_INFINITY,
        }
    }
    fn take(&mut self, v: f64) {
        self.sum += v;
        self.count += 1;
        self.max = self.max.max(v);
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn the_allowlist_render_writes_is_every_label_the_review_reads() {
        let nodes: Vec<String> = crate::core::labels::ALLOWLIST_NODES
            .iter()
            .map(|l| prometheus_label(l))
            .collect();
        let read: Vec<&str> = NODE_LABELS
            .iter()
            .copied()
            .filter(|l| l.starts_with("label_"))
            .collect();
        assert_eq!(nodes, read);
        let pods: Vec<String> = crate::core::labels::ALLOWLIST_PODS
            .iter()
            .map(|l| prometheus_label(l))
            .collect();
        let by_pods: Vec<&str> = QUERIES
            .iter()
            .filter(|q| q.metrics == ["kube_pod_labels"])
            .flat_map(|q| q.by.iter().copied().filter(|l| l.starts_with("label_")))
            .collect();
        for l in &by_pods {
            assert!(
                pods.iter().any(|p| p == l),
                "{l} is read but not allow-listed"
            );
        }
        assert_eq!(pods.len(), by_pods.len());
    }

    use super::*;

    #[test]
    fn windows_are_right_open_and_prometheus_ends_them_a_millisecond_early() {
        let g = Grid {
            from: 100,
            step: 60,
            windows: 2,
        };
        assert_eq!(g.window(99_999), None);
        assert_eq!(g.window(100_000), Some(0));
        assert_eq!(g.window(159_999), Some(0));
        assert_eq!(g.window(160_000), Some(1));
        assert_eq!(g.window(219_999), Some(1));
        assert_eq!(g.window(220_000), None);
        assert_eq!(g.window_ending(159_999), Some(0));
        assert_eq!(g.window_ending(219_999), Some(1));
        assert_eq!(g.window_ending(160_000), None);
        assert_eq!(g.window_ending(279_999), None);
    }

    #[test]
    fn wanted_names_are_the_queries_metrics() {
        let mut from_queries: Vec<&str> = QUERIES
            .iter()
            .flat_map(|q| q.metrics.iter().copied())
            .collect();
        from_queries.sort_unstable();
        from_queries.dedup();
        for m in &from_queries {
            assert!(wanted(m), "{m}");
        }
        for m in [
            "kube_pod_created",
            "DCGM_FI_DEV_FB_USED",
            "up",
            "kube_pod_status_phase_x",
        ] {
            assert!(!wanted(m), "{m}");
        }
        assert_eq!(from_queries.len(), 26);
    }

    #[test]
    fn promql_reads_as_written() {
        let q = Answers::query(Q::Running);
        assert_eq!(
            q.promql(60, Some("prod"), false),
            // Rewritten into labels of their own, grouped, then named back: raw series never
            // collide (two exporters on hostNetwork differing only by their own `pod`).
            "max by (cluster, namespace, pod) (label_replace(label_replace(max by (cluster, gpuplan_namespace, gpuplan_pod) (label_replace(label_replace(label_replace(label_replace(label_replace(label_replace(sum_over_time(kube_pod_status_phase{phase=\"Running\",cluster=\"prod\"}[59999ms]), \"gpuplan_namespace\", \"$1\", \"namespace\", \"(.+)\"), \"gpuplan_pod\", \"$1\", \"pod\", \"(.+)\"), \"gpuplan_pod\", \"$1\", \"pod_name\", \"(.+)\"), \"gpuplan_namespace\", \"$1\", \"pod_namespace\", \"(.+)\"), \"gpuplan_pod\", \"$1\", \"exported_pod\", \"(.+)\"), \"gpuplan_namespace\", \"$1\", \"exported_namespace\", \"(.+)\")), \"namespace\", \"$1\", \"gpuplan_namespace\", \"(.*)\"), \"pod\", \"$1\", \"gpuplan_pod\", \"(.*)\"))"
        );
        assert!(Answers::query(Q::Tokens)
            .promql(60, None, true)
            .contains("{__name__=~\"vllm:generation_tokens_total|vllm_generation_tokens_total\"}"));
    }

    #[test]
    fn the_collector_evaluates_like_promql() {
        let g = Grid {
            from: 0,
            step: 60,
            windows: 2,
        };
        let mut c = Collector::new(g, None);
        let labels = |pod: &str| {
            let mut m = BTreeMap::new();
            m.insert("namespace".into(), "gpu-operator".into());
            m.insert("pod".into(), "dcgm".into());
            m.insert("exported_namespace".into(), "ml".into());
            m.insert("exported_pod".into(), pod.into());
            m.insert("gpu".into(), "0".into());
            m
        };
        let a = c
            .series(
                "a",
                "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
                || Some(labels("p")),
                false,
            )
            .expect("labels")
            .expect("wanted");
        for (ms, v) in [(0, 0.5), (26_800, 0.5), (41_800, 0.25), (60_000, 1.0)] {
            c.sample(a, ms, v);
        }
        c.sample(a, 60_000, 1.0);
        let ans = c.finish();
        let rows: Vec<_> = ans.get(Q::Active).collect();
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].0[Answers::col(Q::Active, "pod")], "p");
        assert_eq!(rows[0].0[Answers::col(Q::Active, "namespace")], "ml");
        assert_eq!(rows[0].1[&0], 1.25);
        assert_eq!(rows[0].1[&1], 1.0);
        let counts: Vec<_> = ans.get(Q::ActiveCount).collect();
        assert_eq!(counts[0].1[&0], 3.0);
    }
}
