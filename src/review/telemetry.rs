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

/// One pod's samples, keyed by time (Unix seconds).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PodSeries {
    pub namespace: String,
    pub pod: String,
    /// `app.kubernetes.io/name`, when known.
    pub app: Option<String>,
    pub allocated: BTreeMap<i64, f64>,
    pub used: BTreeMap<i64, f64>,
    pub tokens: BTreeMap<i64, f64>,
}

/// One node's GPUs, keyed by time: what the node offers (`kube_node_status_allocatable`) and
/// what pods on it request (`kube_pod_container_resource_requests`, by its `node` label).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NodeSeries {
    /// The node pool / node group label (`kube_node_labels`), when exported.
    pub pool: Option<String>,
    pub capacity: BTreeMap<i64, f64>,
    pub allocated: BTreeMap<i64, f64>,
}

/// Node labels that name a node's pool: AKS, EKS managed node groups, Karpenter, in the
/// `label_` form kube-state-metrics exports them in (`--metric-labels-allowlist`).
pub const POOL_LABELS: [&str; 4] = [
    "label_kubernetes_azure_com_agentpool",
    "label_agentpool",
    "label_eks_amazonaws_com_nodegroup",
    "label_karpenter_sh_nodepool",
];

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Telemetry {
    /// Inclusive start and exclusive end of the window, Unix seconds.
    pub from: i64,
    pub to: i64,
    /// Seconds each sample stands for.
    pub step: i64,
    /// By (namespace, pod).
    pub pods: BTreeMap<(String, String), PodSeries>,
    /// By node name; empty when the source has no node metrics.
    pub nodes: BTreeMap<String, NodeSeries>,
    /// Where the numbers came from, for the report.
    pub source: String,
    /// What the reader noticed and worked around (duplicate series, skipped lines, an
    /// ignored `--step`), said to the user as warnings.
    pub notes: Vec<String>,
}

impl Telemetry {
    pub fn pod_mut(&mut self, namespace: &str, pod: &str) -> &mut PodSeries {
        self.pods
            .entry((namespace.to_owned(), pod.to_owned()))
            .or_insert_with(|| PodSeries {
                namespace: namespace.to_owned(),
                pod: pod.to_owned(),
                ..PodSeries::default()
            })
    }

    /// Drop samples outside the window.
    pub fn clip(&mut self) {
        let (from, to) = (self.from, self.to);
        for p in self.pods.values_mut() {
            for m in [&mut p.allocated, &mut p.used, &mut p.tokens] {
                m.retain(|t, _| *t >= from && *t < to);
            }
        }
        self.pods
            .retain(|_, p| !p.allocated.is_empty() || !p.used.is_empty());
        for n in self.nodes.values_mut() {
            for m in [&mut n.capacity, &mut n.allocated] {
                m.retain(|t, _| *t >= from && *t < to);
            }
        }
        self.nodes.retain(|_, n| !n.capacity.is_empty());
    }

    pub fn node_mut(&mut self, node: &str) -> &mut NodeSeries {
        self.nodes.entry(node.to_owned()).or_default()
    }
}

/// The share of one GPU a MIG profile holds (its compute slices of the GPU's), from the
/// catalog's MIG tables: `3g.40gb` is 3/7 of an A100 or H100.
pub fn mig_share(catalog: &crate::catalog::Catalog, profile: &str) -> Option<f64> {
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
pub fn resource_share(catalog: &crate::catalog::Catalog, resource: &str) -> Option<f64> {
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
pub const MAX_DURATION: i64 = 3660 * 86_400;

/// The latest time a review takes: 9999-12-31T23:59:59Z.
pub const MAX_TIME: i64 = 253_402_300_799;

/// `90d`, `12h`, `30m`, `45s`, `2w` in seconds; at most [`MAX_DURATION`].
pub fn parse_duration(s: &str) -> Option<i64> {
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
pub fn parse_time(s: &str) -> Option<i64> {
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
pub fn format_time(t: i64) -> String {
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
