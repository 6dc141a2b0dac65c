//! Telemetry from a Prometheus HTTP API (or Thanos / Mimir behind the same API). Each query
//! is aggregated by pod in Prometheus (`sum by (namespace, pod)`), over a step chosen so a
//! series stays under Prometheus's 11,000 points; raw per-GPU series never leave the server.

use std::time::Duration;

use crate::http::Failure;

use serde::Deserialize;

use super::telemetry::Telemetry;

/// How to reach the server.
pub struct Client {
    pub base: String,
    pub bearer: Option<String>,
    pub basic: Option<(String, String)>,
    pub timeout: Duration,
}

/// Whole GPUs, and MIG instances of the mixed strategy kept apart by resource so each counts
/// as its profile's share.
pub const ALLOCATED: &str =
    "sum by (namespace, pod, resource) (kube_pod_container_resource_requests{resource=~\"nvidia_com_gpu|nvidia_com_mig_.*\"})";
/// DCGM names the exporter in `namespace`/`pod` when it also sets `exported_*`: those win.
/// Kept apart by `GPU_I_PROFILE`: on a MIG instance the activity is of the instance.
pub const USED: &str = "sum by (namespace, pod, GPU_I_PROFILE) (label_replace(label_replace(DCGM_FI_PROF_GR_ENGINE_ACTIVE, \"namespace\", \"$1\", \"exported_namespace\", \"(.+)\"), \"pod\", \"$1\", \"exported_pod\", \"(.+)\"))";
pub const TOKENS: &str = "sum by (namespace, pod) (vllm:generation_tokens_total)";
/// GPUs each node offers, and what pods on it request; summed in the server per node.
pub const NODE_CAPACITY: &str =
    "sum by (node, resource) (kube_node_status_allocatable{resource=~\"nvidia_com_gpu|nvidia_com_mig_.*\"})";
pub const NODE_ALLOCATED: &str =
    "sum by (node, resource) (kube_pod_container_resource_requests{resource=~\"nvidia_com_gpu|nvidia_com_mig_.*\",node!=\"\"})";
/// A node's pool, from whichever pool label kube-state-metrics was allowed to export.
pub const NODE_POOL: &str = "max by (node, label_kubernetes_azure_com_agentpool, label_agentpool, label_eks_amazonaws_com_nodegroup, label_karpenter_sh_nodepool) (kube_node_labels)";

#[derive(Deserialize)]
struct Envelope {
    status: String,
    data: Option<Data>,
    #[serde(rename = "errorType")]
    error_type: Option<String>,
    error: Option<String>,
}

#[derive(Deserialize)]
struct Data {
    #[serde(rename = "resultType")]
    result_type: String,
    result: Vec<Matrix>,
}

#[derive(Deserialize)]
struct Matrix {
    metric: std::collections::BTreeMap<String, String>,
    values: Vec<(f64, String)>,
}

/// A step of whole minutes that keeps the window under 11,000 points.
pub fn step_for(window: i64) -> i64 {
    let min = (window + 10_999) / 11_000;
    (min.max(60) + 59) / 60 * 60
}

/// The longest stretch one query asks for. Prometheus evaluates a range query in one go under
/// its own timeout (2 minutes by default); a quarter of a large fleet over many small blocks
/// does not fit, so long windows are asked for a week at a time and joined, as Thanos's and
/// Mimir's query frontends split them.
pub const SPLIT_SECONDS: i64 = 7 * 86_400;

impl Client {
    /// `query` over `[start, end]` at `step`, in consecutive pieces of at most
    /// `SPLIT_SECONDS`; each series' values joined in time order.
    fn query_split(
        &self,
        query: &str,
        start: i64,
        end: i64,
        step: i64,
    ) -> Result<Vec<Matrix>, String> {
        let per = (SPLIT_SECONDS / step).max(1);
        let mut out: Vec<Matrix> = Vec::new();
        let mut index: std::collections::BTreeMap<
            std::collections::BTreeMap<String, String>,
            usize,
        > = Default::default();
        let mut from = start;
        while from <= end {
            let to = (from + (per - 1) * step).min(end);
            for m in self.query_range(query, from, to, step)? {
                match index.get(&m.metric) {
                    Some(&i) => out[i].values.extend(m.values),
                    None => {
                        index.insert(m.metric.clone(), out.len());
                        out.push(m);
                    }
                }
            }
            from = to + step;
        }
        Ok(out)
    }

    fn query_range(
        &self,
        query: &str,
        start: i64,
        end: i64,
        step: i64,
    ) -> Result<Vec<Matrix>, String> {
        let url = format!("{}/api/v1/query_range", self.base.trim_end_matches('/'));
        let agent = ureq::AgentBuilder::new().timeout(self.timeout).build();
        let request = || {
            let req = agent
                .get(&url)
                .query("query", query)
                .query("start", &start.to_string())
                .query("end", &end.to_string())
                .query("step", &step.to_string());
            if let Some(t) = &self.bearer {
                req.set("Authorization", &format!("Bearer {t}"))
            } else if let Some((u, p)) = &self.basic {
                req.set(
                    "Authorization",
                    &format!("Basic {}", base64(&format!("{u}:{p}"))),
                )
            } else {
                req
            }
        };
        let env: Envelope = match crate::http::get_json(request) {
            Ok(env) => env,
            Err(Failure::Decode(e)) => {
                return Err(format!(
                    "Prometheus at {}: not a query_range answer ({e})",
                    crate::core::redact(&self.base)
                ))
            }
            Err(Failure::Status(code, body)) => {
                let detail = serde_json::from_str::<Envelope>(&body)
                    .ok()
                    .and_then(|e| e.error)
                    .unwrap_or_else(|| body.chars().take(200).collect());
                return Err(format!(
                    "Prometheus at {} answered HTTP {code}: {detail}",
                    crate::core::redact(&self.base)
                ));
            }
            Err(Failure::Transport(t)) => {
                return Err(crate::core::redact(&format!(
                    "cannot reach Prometheus at {}: {t}",
                    self.base
                )));
            }
        };
        if env.status != "success" {
            return Err(format!(
                "Prometheus at {} refused the query: {}: {}",
                crate::core::redact(&self.base),
                env.error_type.unwrap_or_default(),
                env.error.unwrap_or_default()
            ));
        }
        let data = env.data.ok_or_else(|| {
            format!(
                "Prometheus at {}: no data in the answer",
                crate::core::redact(&self.base)
            )
        })?;
        if data.result_type != "matrix" {
            return Err(format!(
                "Prometheus at {}: expected a matrix, got `{}`",
                crate::core::redact(&self.base),
                data.result_type
            ));
        }
        Ok(data.result)
    }

    /// The window `[from, to)` at `step`: evaluations at from, from + step, ..., to - step.
    pub fn fetch(
        &self,
        from: i64,
        to: i64,
        step: i64,
        catalog: &crate::catalog::Catalog,
    ) -> Result<Telemetry, String> {
        let end = to - step;
        if end < from {
            return Err("the window is shorter than one step".into());
        }
        let mut t = Telemetry {
            from,
            to,
            step,
            source: format!("Prometheus {}", crate::core::redact(&self.base)),
            ..Telemetry::default()
        };
        for (i, (query, what)) in [
            (ALLOCATED, "kube_pod_container_resource_requests{resource=\"nvidia_com_gpu\"} (kube-state-metrics)"),
            (USED, "DCGM_FI_PROF_GR_ENGINE_ACTIVE (dcgm-exporter)"),
            (TOKENS, "vllm:generation_tokens_total"),
        ]
        .into_iter()
        .enumerate()
        {
            let result = self.query_split(query, from, end, step)?;
            if result.is_empty() && i < 2 {
                return Err(format!(
                    "Prometheus at {} has no {what} series between {} and {}: is it scraped, and is the window right?",
                    crate::core::redact(&self.base),
                    super::telemetry::format_time(from),
                    super::telemetry::format_time(to)
                ));
            }
            for m in result {
                let (Some(ns), Some(pod)) = (m.metric.get("namespace"), m.metric.get("pod")) else {
                    return Err(format!(
                        "Prometheus at {}: a {what} series has no namespace/pod labels ({:?})",
                        crate::core::redact(&self.base), m.metric
                    ));
                };
                let weight = match i {
                    0 => self.resource_weight(&m, catalog)?,
                    1 => match m.metric.get("GPU_I_PROFILE").filter(|p| !p.is_empty()) {
                        Some(p) => super::telemetry::mig_share(catalog, p).ok_or_else(|| {
                            format!("Prometheus at {}: GPU_I_PROFILE `{p}`: no such MIG profile in the catalog", crate::core::redact(&self.base))
                        })?,
                        None => 1.0,
                    },
                    _ => 1.0,
                };
                let p = t.pod_mut(ns, pod);
                let series = match i {
                    0 => &mut p.allocated,
                    1 => &mut p.used,
                    _ => &mut p.tokens,
                };
                self.add_samples(series, m.values, weight)?;
            }
        }
        self.fetch_nodes(&mut t, from, end, step, catalog)?;
        Ok(t)
    }

    /// A series' GPUs per unit: 1 for `nvidia_com_gpu`, a MIG profile's share of its GPU for
    /// `nvidia_com_mig_*`.
    fn resource_weight(
        &self,
        m: &Matrix,
        catalog: &crate::catalog::Catalog,
    ) -> Result<f64, String> {
        let r = m
            .metric
            .get("resource")
            .map_or("nvidia_com_gpu", String::as_str);
        super::telemetry::resource_share(catalog, r).ok_or_else(|| {
            format!(
                "Prometheus at {}: resource `{r}`: no such MIG profile in the catalog",
                crate::core::redact(&self.base)
            )
        })
    }

    /// Add a series' samples, times `weight`, to `series` by time.
    fn add_samples(
        &self,
        series: &mut std::collections::BTreeMap<i64, f64>,
        values: Vec<(f64, String)>,
        weight: f64,
    ) -> Result<(), String> {
        for (ts, v) in values {
            let v: f64 = v.parse().map_err(|_| {
                format!(
                    "Prometheus at {}: sample `{v}` is not a number",
                    crate::core::redact(&self.base)
                )
            })?;
            if v.is_finite() {
                *series.entry(ts.floor() as i64).or_default() += v * weight;
            }
        }
        Ok(())
    }

    /// Node capacity, requests per node and pool labels. Optional: a server without
    /// `kube_node_status_allocatable` gives a review without the node section.
    fn fetch_nodes(
        &self,
        t: &mut Telemetry,
        from: i64,
        end: i64,
        step: i64,
        catalog: &crate::catalog::Catalog,
    ) -> Result<(), String> {
        let capacity = self.query_split(NODE_CAPACITY, from, end, step)?;
        if capacity.is_empty() {
            return Ok(());
        }
        let allocated = self.query_split(NODE_ALLOCATED, from, end, step)?;
        for (i, result) in [capacity, allocated].into_iter().enumerate() {
            for m in result {
                let Some(node) = m.metric.get("node") else {
                    continue;
                };
                let w = self.resource_weight(&m, catalog)?;
                let n = t.node_mut(node);
                let series = if i == 0 {
                    &mut n.capacity
                } else {
                    &mut n.allocated
                };
                self.add_samples(series, m.values, w)?;
            }
        }
        for m in self.query_split(NODE_POOL, from, end, step)? {
            let (Some(node), Some(pool)) = (
                m.metric.get("node"),
                super::telemetry::POOL_LABELS
                    .iter()
                    .find_map(|k| m.metric.get(*k).filter(|v| !v.is_empty())),
            ) else {
                continue;
            };
            if let Some(n) = t.nodes.get_mut(node) {
                n.pool = Some(pool.clone());
            }
        }
        Ok(())
    }
}

/// Standard base64 (RFC 4648) for the basic-auth header.
fn base64(s: &str) -> String {
    const T: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let b = s.as_bytes();
    let mut out = String::new();
    for c in b.chunks(3) {
        let n = (u32::from(c[0]) << 16)
            | (u32::from(*c.get(1).unwrap_or(&0)) << 8)
            | u32::from(*c.get(2).unwrap_or(&0));
        for (i, shift) in [18, 12, 6, 0].into_iter().enumerate() {
            if i <= c.len() {
                out.push(T[((n >> shift) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_and_step() {
        assert_eq!(base64("user:pass"), "dXNlcjpwYXNz");
        assert_eq!(base64("ab"), "YWI=");
        assert_eq!(step_for(3600), 60);
        assert_eq!(step_for(90 * 86_400), 720);
    }
}
