//! GPU telemetry as the review needs it: per pod, at a fixed step, the GPUs allocated
//! (`kube_pod_container_resource_requests{resource="nvidia_com_gpu"}`), the GPUs in use
//! (`DCGM_FI_PROF_GR_ENGINE_ACTIVE` summed over the pod's GPUs or MIG instances: 0.2 on one
//! GPU is a fifth of a GPU busy) and, where the server exports it, a generated-token counter
//! (`vllm:generation_tokens_total`). Per node, where exported: GPUs offered
//! (`kube_node_status_allocatable`), GPUs requested by pods on it, and its pool label.
//!
//! Inputs: a Prometheus server (see `prometheus`), a CSV export, or the Prometheus text /
//! OpenMetrics exposition format. A sample stands for the step that starts at its time.

use std::collections::BTreeMap;

use super::noticed::Noticed;

/// A value per step window, keyed by the window's start (Unix seconds).
pub(crate) type Windows = super::timeline::Timeline<i64, f64>;

/// Every pod run, by (namespace, pod name): the runs of one name in start order. A name used
/// again is a new run: JupyterHub's `jupyter-<user>` each working day, a StatefulSet pod
/// recreated on another node, a fixed-name Job rerun (`PodSeries::start`).
pub(crate) type Pods = BTreeMap<(String, String), Vec<PodSeries>>;

/// The run of a name that window `t` falls in: the last to start at or before it, else the
/// first.
pub(crate) fn run_at(runs: &mut [PodSeries], t: i64) -> Option<&mut PodSeries> {
    let i = runs.partition_point(|p| p.start <= t);
    runs.get_mut(i.saturating_sub(1))
}

/// One pod run over the window, per step window (keyed by the window's start, Unix seconds).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PodSeries {
    pub namespace: String,
    pub pod: String,
    /// The start of the first window of this run (Unix seconds). A run is one pod object:
    /// one `uid` where kube-state-metrics exports it; else one node and one start, the name
    /// absent from the samples in between ending a run.
    pub start: i64,
    /// `gpuplan.io/workload`, else `app.kubernetes.io/name`, when exported.
    pub app: Option<String>,
    /// The controller that made it (a ReplicaSet's Deployment, a Job's CronJob), when
    /// kube-state-metrics exported `kube_pod_info`.
    pub controller: Option<String>,
    /// The only workload of its team that may run on its node's GPU model, if one alone may.
    pub only_on_gpu: Option<String>,
    /// The node it ran on.
    pub node: Option<String>,
    /// GPU-seconds held while Running on a node: requests of app containers and native
    /// sidecars (or of the largest init container, when larger), at the share of a physical
    /// GPU each unit is (a MIG profile's, a time-sliced replica's).
    pub allocated: Windows,
    /// GPUs it held in each window (the level, not GPU-seconds), carried across the windows
    /// between samples when the scrape interval is longer than the step: for peaks and
    /// quantiles, never for totals.
    pub gpus: Windows,
    /// GPU-seconds busy inside the windows it held GPUs.
    pub used: Windows,
    /// GPU-seconds requested while Pending: demand that was not met.
    pub pending: f64,
    /// The part of `pending` while no node would take it (`kube_pod_status_scheduled`
    /// `condition="false"`); the rest was scheduled and starting (image pulls, init).
    pub unscheduled: f64,
    /// `unscheduled` per window: when no node would take it (the unmet-demand advice reads
    /// whether its pool was full then, or growing).
    pub waiting: Windows,
    /// Whether kube-state-metrics said whether it was scheduled (`kube_pod_status_scheduled`).
    pub scheduled_known: bool,
    /// The part of `pending`, scheduled, that a container waited in `ErrImagePull` or
    /// `ImagePullBackOff`.
    pub image_pull: f64,
    /// Seconds a container of it waited in `CrashLoopBackOff` while it held GPUs.
    pub crashloop: f64,
    /// Seconds it held GPUs (for the crash-loop share).
    pub held_seconds: f64,
    /// Generated tokens (counter increase across resets).
    pub tokens: f64,
    /// vLLM's serving metrics, where the pod exports them.
    pub serving: Option<Box<Serving>>,
    /// Whether a usage series covers it (its own, or its time-sliced GPU's).
    pub has_usage: bool,
    /// The usage signal its GPUs were read from.
    pub signal: Option<Signal>,
    /// Windows (start, Unix seconds) it held GPUs while its node's dcgm-exporter reported
    /// nothing: no data there, never idle.
    pub unobserved: std::collections::BTreeSet<i64>,
}

/// One node's GPUs over the window, in GPU-seconds per step window.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NodeSeries {
    /// The node pool / node group label (`kube_node_labels`), when exported.
    pub pool: Option<String>,
    /// The plan pool the node belongs to, when its labels name one (`gpuplan.io/pool`, the
    /// AKS node pool name render gives it, its EKS node group or Karpenter NodePool) or a
    /// workload of a declared pool runs on it.
    pub plan_pool: Option<String>,
    /// GPU model: its plan pool's, else GPU feature discovery's `nvidia.com/gpu.product`.
    pub model: Option<String>,
    /// What the node itself says its GPU is (GPU feature discovery's product label, else
    /// dcgm-exporter's `modelName`), whatever pool it was matched to: what ran there.
    pub reported_model: Option<String>,
    /// Device plugin replicas per GPU when time-sliced (1 otherwise).
    pub replicas: u32,
    /// Physical GPUs it offers (the most seen).
    pub gpus: f64,
    /// Whole physical cards: `gpus`, or for a MIG node the cards its instances sit on.
    pub cards: f64,
    /// Physical GPU-seconds offered: what its devices (MIG instances at their share) offer.
    pub capacity: Windows,
    /// GPU-seconds of its whole cards, paid for whether a MIG instance covers every slice or
    /// not: only for a MIG node whose instances leave slices uncovered; empty means
    /// `capacity`.
    pub paid: Windows,
    /// Physical GPU-seconds requested by running pods on it.
    pub allocated: Windows,
    /// The usage signal its GPUs were read from.
    pub signal: Option<Signal>,
}

/// Where "used" came from.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Signal {
    /// `DCGM_FI_PROF_GR_ENGINE_ACTIVE`: the share of time any engine was busy; also on MIG.
    GrEngineActive,
    /// `DCGM_FI_DEV_GPU_UTIL / 100`, where the profiling metric is absent or stuck at zero
    /// while utilisation moves (pre-Volta GPUs, another profiler holding the counters).
    GpuUtil,
}

impl Signal {
    pub(crate) fn metric(self) -> &'static str {
        match self {
            Signal::GrEngineActive => "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
            Signal::GpuUtil => "DCGM_FI_DEV_GPU_UTIL / 100 (fallback)",
        }
    }
}

/// Usage a pod label claims but no pod with GPU requests matches.
#[derive(Debug, Clone, PartialEq)]
pub struct Orphan {
    /// The node and GPU (index, and MIG instance) the usage was on.
    pub node: String,
    pub gpu: String,
    /// The pod dcgm-exporter named: one that requested no GPU, or the exporter itself.
    pub namespace: String,
    pub pod: String,
    pub used_gpu_seconds: f64,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Telemetry {
    /// Inclusive start and exclusive end of the window asked for, Unix seconds.
    pub from: i64,
    pub to: i64,
    /// Seconds of each step window.
    pub step: i64,
    /// By (namespace, pod), each name's runs in start order.
    pub pods: Pods,
    /// By node name; empty when the source has no node metrics.
    pub nodes: BTreeMap<String, NodeSeries>,
    /// Seconds of the window that hold any kube-state-metrics data, and the first and last
    /// of them: costs and advice are over this span, never over hours without data.
    pub covered: i64,
    /// The covered windows themselves (their starts): a forecast counts a window without
    /// data as unknown, never as zero demand.
    pub covered_windows: std::collections::BTreeSet<i64>,
    /// The windows holding a kube-state-metrics sample themselves (covered windows less
    /// those a scrape interval longer than the step leaves between samples): whether a pod
    /// ran is read from these.
    pub sampled_windows: std::collections::BTreeSet<i64>,
    pub data_from: Option<i64>,
    pub data_to: Option<i64>,
    /// Scrape intervals inferred from the data (seconds), kube-state-metrics and DCGM.
    pub ksm_interval: Option<f64>,
    /// Each interval kube-state-metrics was scraped at over the window (one where it never
    /// changed).
    pub ksm_intervals: Vec<f64>,
    /// The spacing of a file's rows where one row carries both a pod's allocation and its
    /// use (CSV): no exporter was scraped, and the intervals above are this one.
    pub rows_every: Option<f64>,
    pub dcgm_interval: Option<f64>,
    /// The distinct intervals the DCGM targets were scraped at, each card's own, sorted.
    pub dcgm_intervals: Vec<f64>,
    /// Usage series whose pod has no GPU request.
    pub orphans: Vec<Orphan>,
    /// Spans a node's dcgm-exporter reported nothing while kube-state-metrics saw the node:
    /// (node, from, to), Unix seconds.
    pub dcgm_gaps: Vec<(String, i64, i64)>,
    /// Where the numbers came from, for the report.
    pub source: String,
    /// What the reader noticed and worked around, said to the user as warnings.
    pub notes: Vec<Noticed>,
}

impl Telemetry {
    /// Several clusters' telemetry as one fleet: every pod and node kept apart by its
    /// cluster (a node is `CLUSTER/NODE`; a pod keyed by its cluster too, its name as
    /// written), the windows covered by any, the intervals the shortest any inferred.
    pub(crate) fn fleet(parts: Vec<(String, Telemetry)>) -> Telemetry {
        let mut out = Telemetry::default();
        let min = |a: Option<f64>, b: Option<f64>| match (a, b) {
            (Some(x), Some(y)) => Some(x.min(y)),
            (x, y) => x.or(y),
        };
        for (i, (c, t)) in parts.into_iter().enumerate() {
            let node = |n: &str| format!("{c}/{n}");
            if i == 0 {
                (out.from, out.to, out.step) = (t.from, t.to, t.step);
                out.source = t.source.clone();
            }
            for ((ns, pod), mut runs) in t.pods {
                for p in &mut runs {
                    p.node = p.node.as_deref().map(node);
                }
                out.pods.insert((ns, format!("{c}/{pod}")), runs);
            }
            for (name, n) in t.nodes {
                out.nodes.insert(node(&name), n);
            }
            out.covered_windows.extend(t.covered_windows);
            out.sampled_windows.extend(t.sampled_windows);
            out.data_from = t.data_from.into_iter().chain(out.data_from).min();
            out.data_to = t.data_to.into_iter().chain(out.data_to).max();
            out.ksm_interval = min(out.ksm_interval, t.ksm_interval);
            out.dcgm_interval = min(out.dcgm_interval, t.dcgm_interval);
            out.dcgm_intervals.extend(t.dcgm_intervals);
            out.ksm_intervals.extend(t.ksm_intervals);
            out.rows_every = min(out.rows_every, t.rows_every);
            out.orphans.extend(t.orphans.into_iter().map(|mut o| {
                o.node = node(&o.node);
                o
            }));
            out.dcgm_gaps
                .extend(t.dcgm_gaps.into_iter().map(|(n, a, b)| (node(&n), a, b)));
            out.notes
                .extend(t.notes.into_iter().map(|n| Noticed::InCluster {
                    cluster: c.clone(),
                    noticed: Box::new(n),
                }));
        }
        out.covered = out.covered_windows.len() as i64 * out.step;
        out.dcgm_intervals.sort_by(f64::total_cmp);
        out.ksm_intervals.sort_by(f64::total_cmp);
        out.ksm_intervals.dedup();
        out.dcgm_intervals.dedup();
        out
    }
}

/// The share of one GPU a MIG profile holds (its compute slices of the GPU's), from the
/// catalog's MIG tables: `3g.40gb` is 3/7 of an A100 or H100.
pub(crate) fn mig_share(catalog: &crate::catalog::Catalog, profile: &str) -> Option<f64> {
    catalog.gpus.values().find_map(|g| {
        let spec = g.mig.as_ref()?;
        let p = spec.profile(profile)?;
        Some(f64::from(p.compute) / f64::from(spec.compute_slices.max(1)))
    })
}

/// How many GPUs one unit of a requested resource is: `nvidia_com_gpu` one, a MIG resource
/// of the mixed strategy (`nvidia_com_mig_3g_40gb`, kube-state-metrics' spelling of
/// `nvidia.com/mig-3g.40gb`) its profile's share; `None` for other resources or an unknown
/// profile.
pub(crate) fn resource_share(catalog: &crate::catalog::Catalog, resource: &str) -> Option<f64> {
    if resource == "nvidia_com_gpu" {
        return Some(1.0);
    }
    let rest = resource.strip_prefix("nvidia_com_mig_")?;
    let (slices, memory) = rest.split_once('_')?;
    let profile = match memory.strip_suffix("_me") {
        Some(m) => format!("{slices}.{m}+me"),
        None => format!("{slices}.{memory}"),
    };
    mig_share(catalog, &profile)
}

/// The longest duration a review takes (`--window`, `--step`, `--stalled-after`): ten years.
/// Anything longer is a typo, and would overflow the arithmetic on times.
pub(crate) const MAX_DURATION: i64 = 3660 * 86_400;

/// The most distinct series a review holds, on either path: a fleet of thousands of GPUs
/// over a quarter is some hundreds of thousands; past this (10^6 series took 7.4 GB) the
/// review stops with what to do instead of exhausting memory. `GPUPLAN_REVIEW_MAX_SERIES`
/// sets another bound (a machine with the memory for more, or a test).
pub(crate) fn max_series() -> usize {
    std::env::var("GPUPLAN_REVIEW_MAX_SERIES")
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(1_000_000)
}

/// What to say when [`max_series`] is passed.
pub(crate) fn too_many_series(what: &str) -> String {
    format!(
        "{what} holds more than {} distinct series, the most a review holds in memory (GPUPLAN_REVIEW_MAX_SERIES); review one cluster at a time (`--cluster NAME`) or a shorter window",
        max_series()
    )
}

/// The latest time a review takes: 9999-12-31T23:59:59Z.
pub(crate) const MAX_TIME: i64 = 253_402_300_799;

/// `90d`, `12h`, `30m`, `45s`, `2w` in seconds; at most [`MAX_DURATION`].
pub(crate) fn parse_duration(s: &str) -> Option<i64> {
    let s = s.trim();
    let (num, unit) = s.split_at(s.find(|c: char| !c.is_ascii_digit())?);
    let n: i64 = num.parse().ok()?;
    let mult = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        "w" => 604_800,
        _ => return None,
    };
    n.checked_mul(mult).filter(|&v| v > 0 && v <= MAX_DURATION)
}

/// RFC 3339 (`2026-09-01T00:00:00Z`, offsets allowed) or Unix seconds, to Unix seconds.
pub(crate) fn parse_time(s: &str) -> Option<i64> {
    parse_time_unbounded(s).filter(|t| (0..=MAX_TIME).contains(t))
}

fn parse_time_unbounded(s: &str) -> Option<i64> {
    let s = s.trim();
    if let Ok(v) = s.parse::<f64>() {
        return (v.is_finite() && v.abs() < 1e15).then_some(v.floor() as i64);
    }
    let (date, rest) = s.split_once(['T', 't', ' '])?;
    let d = crate::plan::Date::parse(date)?;
    let (clock, offset) = match rest.find(['Z', 'z', '+', '-']) {
        Some(i) => (&rest[..i], &rest[i..]),
        None => return None,
    };
    let mut hms = clock.split(':');
    let h: i64 = hms.next()?.parse().ok()?;
    let m: i64 = hms.next()?.parse().ok()?;
    let sec: f64 = hms.next().unwrap_or("0").parse().ok()?;
    if !(0..24).contains(&h) || !(0..60).contains(&m) || !(0.0..61.0).contains(&sec) {
        return None;
    }
    let off = match offset {
        "Z" | "z" => 0,
        o => {
            let sign = if o.starts_with('-') { -1 } else { 1 };
            let (oh, om) = o[1..].split_once(':')?;
            sign * (oh.parse::<i64>().ok()? * 3600 + om.parse::<i64>().ok()? * 60)
        }
    };
    if !(1970..=9999).contains(&d.year) {
        return None;
    }
    Some(d.days() * 86_400 + h * 3600 + m * 60 + sec.floor() as i64 - off)
}

/// Unix seconds as RFC 3339 UTC.
pub(crate) fn format_time(t: i64) -> String {
    let d = crate::plan::Date::from_days(t.div_euclid(86_400));
    let s = t.rem_euclid(86_400);
    format!("{d}T{:02}:{:02}:{:02}Z", s / 3600, (s % 3600) / 60, s % 60)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_and_durations() {
        assert_eq!(parse_duration("90d"), Some(90 * 86_400));
        assert_eq!(parse_duration("2h"), Some(7200));
        assert_eq!(parse_duration("h"), None);
        assert_eq!(parse_duration("0d"), None);
        let t = parse_time("2026-09-01T00:00:00Z").expect("time");
        assert_eq!(format_time(t), "2026-09-01T00:00:00Z");
        assert_eq!(parse_time("2026-09-01T02:00:00+02:00"), Some(t));
        assert_eq!(parse_time(&t.to_string()), Some(t));
        assert_eq!(parse_time("2026-13-01T00:00:00Z"), None);
    }
}

/// One pod's vLLM series, per window start.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Serving {
    /// Requests running and waiting, summed over the pod's engines.
    pub running: Windows,
    pub waiting: Windows,
    /// The most requests running and waiting in any one sample of each window (summed over
    /// the pod's engines).
    pub running_peak: Windows,
    pub waiting_peak: Windows,
    /// KV-cache use summed over the engines that exported it, and how many did.
    pub kv_cache: Windows,
    pub kv_engines: Windows,
    /// Requests that left the server in each window, whatever the reason (served, cut at
    /// their length, aborted by a client that gave up): every one arrived.
    pub finished: Windows,
    /// Of them, aborted.
    pub aborted: Windows,
    /// The server exports a `finished_reason="abort"` series (vLLM V1 declares one per finish
    /// reason when it starts): its abandoned requests are counted. vLLM V0 counts only
    /// requests that were scheduled (`LLMEngine._get_stats`), so one abandoned while waiting
    /// is never seen, and its counter has no such series.
    pub aborts_counted: bool,
    /// Requests whose first token came within each bucket's bound, counted in the window:
    /// window start -> bound (`f64::to_bits`, which orders non-negative bounds) -> count.
    pub ttft: std::collections::BTreeMap<i64, std::collections::BTreeMap<u64, f64>>,
}
