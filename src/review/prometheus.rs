//! Telemetry from a Prometheus HTTP API (or Thanos / Mimir behind the same API). Each of
//! [`QUERIES`] is evaluated in the server over a step chosen so a series stays under
//! Prometheus's 11,000 points: per-window over-time aggregates by pod and device, never raw
//! samples.

use super::ReviewError;
use std::time::Duration;

use crate::http::Failure;

use serde::Deserialize;

use super::query::{Answers, Grid, Q, QUERIES};

/// How to reach the server.
pub(crate) struct Client {
    pub base: String,
    pub bearer: Option<String>,
    pub basic: Option<(String, String)>,
    pub timeout: Duration,
}

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
pub(crate) fn step_for(window: i64) -> i64 {
    let min = (window + 10_999) / 11_000;
    (min.max(60) + 59) / 60 * 60
}

/// The longest stretch one query asks for. Prometheus evaluates a range query in one go under
/// its own timeout (2 minutes by default); a quarter of a large fleet over many small blocks
/// does not fit, so long windows are asked for a week at a time and joined, as Thanos's and
/// Mimir's query frontends split them.
pub(crate) const SPLIT_SECONDS: i64 = 7 * 86_400;

impl Client {
    /// `query` at the end of every window of `grid`, in consecutive pieces of at most
    /// `SPLIT_SECONDS`; each series' values joined in time order.
    fn query_split(&self, query: &str, grid: Grid) -> Result<Vec<Matrix>, ReviewError> {
        let per = (SPLIT_SECONDS / grid.step).max(1) as u32;
        let mut out: Vec<Matrix> = Vec::new();
        let mut index: std::collections::BTreeMap<
            std::collections::BTreeMap<String, String>,
            usize,
        > = Default::default();
        // A window's last millisecond, as Prometheus takes times: seconds with a fraction.
        let end_of = |k: u32| {
            let ms = (grid.from + grid.step * (i64::from(k) + 1)) * 1000 - 1;
            format!("{}.{:03}", ms.div_euclid(1000), ms.rem_euclid(1000))
        };
        let mut k = 0u32;
        while k < grid.windows {
            let last = (k + per - 1).min(grid.windows - 1);
            for m in self.query_range(query, &end_of(k), &end_of(last), grid.step)? {
                match index.get(&m.metric) {
                    Some(&i) => out[i].values.extend(m.values),
                    None => {
                        index.insert(m.metric.clone(), out.len());
                        out.push(m);
                    }
                }
            }
            k = last + 1;
        }
        Ok(out)
    }

    /// The server's major version (`/api/v1/status/buildinfo`); 2 when it does not say
    /// (Thanos and Mimir answer differently, and keep Prometheus 2's closed ranges).
    fn major_version(&self) -> u32 {
        let url = format!(
            "{}/api/v1/status/buildinfo",
            self.base.trim_end_matches('/')
        );
        let agent = ureq::AgentBuilder::new().timeout(self.timeout).build();
        let req = self.authorize(agent.get(&url));
        req.call()
            .ok()
            .and_then(|r| r.into_string().ok())
            .and_then(|b| serde_json::from_str::<serde_json::Value>(&b).ok())
            .and_then(|v| {
                v["data"]["version"]
                    .as_str()
                    .and_then(|s| s.split('.').next())
                    .and_then(|m| m.parse().ok())
            })
            .unwrap_or(2)
    }

    fn authorize(&self, req: ureq::Request) -> ureq::Request {
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
    }

    fn query_range(
        &self,
        query: &str,
        start: &str,
        end: &str,
        step: i64,
    ) -> Result<Vec<Matrix>, ReviewError> {
        let url = format!("{}/api/v1/query_range", self.base.trim_end_matches('/'));
        let agent = ureq::AgentBuilder::new().timeout(self.timeout).build();
        let request = || {
            self.authorize(
                agent
                    .get(&url)
                    .query("query", query)
                    .query("start", start)
                    .query("end", end)
                    .query("step", &step.to_string()),
            )
        };
        let env: Envelope = match crate::http::get_json(request) {
            Ok(env) => env,
            Err(Failure::Decode(e)) => {
                return Err(ReviewError::Prometheus(format!(
                    "Prometheus at {}: not a query_range answer ({e})",
                    crate::core::redact(&self.base)
                )))
            }
            Err(Failure::Status(code, body)) => {
                let detail = serde_json::from_str::<Envelope>(&body)
                    .ok()
                    .and_then(|e| e.error)
                    .unwrap_or_else(|| body.chars().take(200).collect());
                return Err(ReviewError::Prometheus(format!(
                    "Prometheus at {} answered HTTP {code}: {detail}",
                    crate::core::redact(&self.base)
                )));
            }
            Err(Failure::Transport(t)) => {
                return Err(ReviewError::Prometheus(crate::core::redact(&format!(
                    "cannot reach Prometheus at {}: {t}",
                    self.base
                ))));
            }
        };
        if env.status != "success" {
            return Err(ReviewError::Prometheus(format!(
                "Prometheus at {} refused the query: {}: {}",
                crate::core::redact(&self.base),
                env.error_type.unwrap_or_default(),
                env.error.unwrap_or_default()
            )));
        }
        let data = env.data.ok_or_else(|| {
            ReviewError::Prometheus(format!(
                "Prometheus at {}: no data in the answer",
                crate::core::redact(&self.base)
            ))
        })?;
        if data.result_type != "matrix" {
            return Err(ReviewError::Prometheus(format!(
                "Prometheus at {}: expected a matrix, got `{}`",
                crate::core::redact(&self.base),
                data.result_type
            )));
        }
        Ok(data.result)
    }

    /// Every query of [`QUERIES`] over `grid`, evaluated at each window's end.
    pub(crate) fn fetch(&self, grid: Grid, cluster: Option<&str>) -> Result<Answers, ReviewError> {
        let v3 = self.major_version() >= 3;
        let mut out = Answers::default();
        for q in QUERIES {
            let result = self.query_split(&q.promql(grid.step, cluster, v3), grid)?;
            for m in result {
                let group: Vec<String> =
                    q.by.iter()
                        .map(|l| m.metric.get(*l).cloned().unwrap_or_default())
                        .collect();
                for (ts, v) in m.values {
                    let v: f64 = v.parse().map_err(|_| {
                        ReviewError::Prometheus(format!(
                            "Prometheus at {}: sample `{v}` is not a number",
                            crate::core::redact(&self.base)
                        ))
                    })?;
                    let Some(k) = grid.window_ending((ts * 1000.0).round() as i64) else {
                        continue;
                    };
                    if v.is_finite() {
                        out.add(q.id, group.clone(), k, v);
                    }
                }
            }
        }
        let has = |q: Q| out.rows.get(&q).is_some_and(|r| !r.is_empty());
        if !has(Q::Requests) && !has(Q::Active) && !has(Q::Util) {
            return Err(ReviewError::Prometheus(format!(
                "Prometheus at {} has no kube_pod_container_resource_requests{{resource=\"nvidia_com_gpu\"}} (kube-state-metrics) or DCGM_FI_PROF_GR_ENGINE_ACTIVE (dcgm-exporter) series between {} and {}: are they scraped, and is the window right?",
                crate::core::redact(&self.base),
                super::telemetry::format_time(grid.from),
                super::telemetry::format_time(grid.to())
            )));
        }
        Ok(out)
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
