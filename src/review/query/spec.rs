//! What a query is: the grid of step windows, how a window's samples become one value,
//! label matchers, and the PromQL each query is asked as.

use std::collections::BTreeMap;

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
    /// The whole steps of `[from, to)`, a window the user asked for: where it is not a whole
    /// number of steps, its last part (less than one step) is not read and its seconds are
    /// returned, so nothing past `to` is counted (the grid of [`Grid::new`] would end up to
    /// a step later, and the review said so as if it had been asked: issue 75).
    pub(crate) fn within(
        from: i64,
        to: i64,
        step: i64,
    ) -> Result<(Grid, i64), crate::review::ReviewError> {
        let step = step.max(1);
        if from < to && to - from < step {
            return Err(crate::review::ReviewError::Window(format!(
                "the window ({} s) is shorter than one step ({step} s): give a smaller `--step`",
                to - from
            )));
        }
        let tail = if from < to { (to - from) % step } else { 0 };
        Grid::new(from, to - tail, step).map(|g| (g, tail))
    }

    /// The grid of `[from, to)` at `step`, or why not.
    pub(crate) fn new(from: i64, to: i64, step: i64) -> Result<Grid, crate::review::ReviewError> {
        if from >= to {
            return Err(crate::review::ReviewError::Window(
                "the window is empty: `--from` must come before `--to`".into(),
            ));
        }
        let windows = (to - from + step - 1) / step.max(1);
        if windows > MAX_WINDOWS {
            return Err(crate::review::ReviewError::Window(format!(
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
    pub(super) fn shares(self, other: Over) -> bool {
        self == other || self == Over::Avg || other == Over::Avg
    }
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
    /// The most requests running and waiting in any sample of a window, per pod: a sample
    /// with requests waiting has its batch full, so the running beside it is the batch limit
    /// (window means blur it where the queue came and went).
    ServingRunningPeak,
    ServingWaitingPeak,
    /// vLLM's KV-cache blocks in use, 0..1 (`vllm:gpu_cache_usage_perc`, renamed
    /// `vllm:kv_cache_usage_perc` by the V1 engine), per pod.
    ServingKvCache,
    /// vLLM's time-to-first-token histogram: each bucket counter's highest value per window.
    ServingTtft,
    /// vLLM's requests finished per reason (`vllm:request_success_total`), each counter's
    /// highest value per window.
    ServingFinished,
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
        sel.extend(self.matchers.iter().map(|(l, m)| m.promql(l)));
        if let Some(c) = cluster {
            sel.push(format!("cluster=\"{}\"", promql_escape(c)));
        }
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
        // Each of a metric's names on its own, joined by `or`: `*_over_time` drops the name,
        // so one selector over two names a server exports together (vLLM's V1 logger
        // registers `vllm:gpu_cache_usage_perc` beside `vllm:kv_cache_usage_perc`) would give
        // two series of one labelset, which Prometheus refuses (HTTP 422). `or` keeps the
        // first name a pod exports.
        let one = |name: &str| format!("{over}_over_time({name}{{{}}}[{range}ms])", sel.join(","));
        let mut e = if self.metrics.len() > 1 {
            format!(
                "({})",
                self.metrics
                    .iter()
                    .map(|m| one(m))
                    .collect::<Vec<_>>()
                    .join(" or ")
            )
        } else {
            one(self.metrics[0])
        };
        if !self.pod_labels {
            return format!("max by ({}) ({e})", self.by.join(", "));
        }
        // The rewrites write into labels of their own (`gpuplan_pod` ...), so every raw series
        // keeps its own labels and stays unique: rewriting `pod` in place would give an old
        // and a new dcgm-exporter on hostNetwork (the same `instance`, differing only by the
        // exporter's `pod`) the same labelset, which Prometheus refuses (HTTP 422). The groups
        // are then formed on the rewritten labels, as the file path forms them, and only then
        // named back.
        // `(?s)`: a label value may hold a newline (the exposition formats escape it), which
        // `.` does not match in Go's regexp; without it such a pod kept no `pod` and its
        // hours went to nobody (issue 72: 20.6 of 41.2 GPU-h read through Prometheus).
        let rewritten = |l: &str| REWRITES.iter().any(|(dst, _)| *dst == l);
        let own = |l: &str| format!("gpuplan_{l}");
        for dst in self.by.iter().filter(|l| rewritten(l)) {
            e = format!(
                "label_replace({e}, \"{}\", \"$1\", \"{dst}\", \"(?s)(.+)\")",
                own(dst)
            );
        }
        for (dst, src) in REWRITES.iter().filter(|(dst, _)| self.by.contains(dst)) {
            e = format!(
                "label_replace({e}, \"{}\", \"$1\", \"{src}\", \"(?s)(.+)\")",
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
                "label_replace({e}, \"{l}\", \"$1\", \"{}\", \"(?s)(.*)\")",
                own(l)
            );
        }
        format!("max by ({}) ({e})", self.by.join(", "))
    }

    pub(super) fn selects(
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
    pub(super) fn group(&self, labels: &BTreeMap<String, String>) -> Vec<String> {
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

/// A PromQL string literal's contents for `s`: a backslash, a double quote and a newline
/// escaped, as Go's string literals (which PromQL's are) read them. A label value may hold a
/// newline (the exposition formats escape it): written raw, the selector is refused (HTTP
/// 422) and the series it names is never read.
pub(crate) fn promql_escape(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
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
        // Counters and histograms count requests since a server started: a busy one passes a
        // million (a histogram's `_bucket`, `_count` and `_sum`, any `_total`).
        n if ["_bucket", "_count", "_sum", "_total"]
            .iter()
            .any(|s| n.ends_with(s)) =>
        {
            1e18
        }
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
            | "vllm:request_success_total"
            | "vllm_request_success_total"
            | "kube_node_status_allocatable"
            | "kube_node_labels"
    )
}
