//! Telemetry from a Prometheus HTTP API (or Thanos / Mimir behind the same API). Each of
//! [`QUERIES`] is evaluated in the server over a step chosen so a series stays under
//! Prometheus's 11,000 points: per-window over-time aggregates by pod and device, never raw
//! samples.

use super::ReviewError;
use std::time::Duration;

use crate::http::Failure;

use super::query::{Answers, Grid, Q, QUERIES};

mod split;
mod stream;

use split::size_limit;

/// How to reach the server.
/// Where a long wait is said, from any of the review's request threads.
pub(crate) type Notice = Box<dyn Fn(&str) + Send + Sync>;

pub(crate) struct Client {
    pub base: String,
    pub bearer: Option<String>,
    pub basic: Option<(String, String)>,
    pub timeout: Duration,
    /// The most windows one request has been answered for in time since a request ran out of
    /// time (`u32::MAX` until one does): later requests are asked in pieces no longer, so a
    /// slow store waits out `--timeout` once, not for every week-long piece.
    pub fits: std::sync::atomic::AtomicU32,
    /// Where the review says what it is waiting for on a slow store (standard error, unless
    /// `--quiet`): a request asked again or in halves, a startup probe that ran out of time.
    pub notice: Option<Notice>,
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
pub(crate) const SPLIT_SECONDS: i64 = 7 * 86_400;

/// Requests to the server in flight at once: a review is 16 queries over a few week-long
/// pieces each; four at a time keeps a shared Prometheus responsive.
pub(crate) const CONCURRENCY: usize = 4;

/// One request of a review: a query over windows `first..=last` of the grid.
#[derive(Clone)]
struct Job<'q> {
    query: &'q super::query::Query,
    promql: String,
    first: u32,
    last: u32,
}

impl Job<'_> {
    /// The windows it asks for.
    fn windows(&self) -> u32 {
        self.last - self.first + 1
    }
}

/// Why a request gave no answer.
enum Attempt {
    /// The store refused the request for its size (a sample or point limit, HTTP 422): a
    /// shorter range may pass.
    TooBig(String),
    /// The request ran out of time (the store's own query timeout, or `--timeout`): asked
    /// again in halves, once, after a pause.
    TooSlow(String),
    Failed(ReviewError),
}

impl From<ReviewError> for Attempt {
    fn from(e: ReviewError) -> Attempt {
        Attempt::Failed(e)
    }
}

impl Client {
    fn shown(&self) -> String {
        crate::core::redact_short(&self.base)
    }

    /// The pieces of the window a query is asked for, as first and last window: at most
    /// `SPLIT_SECONDS` each.
    fn pieces(grid: Grid) -> Vec<(u32, u32)> {
        let per = (SPLIT_SECONDS / grid.step).max(1) as u32;
        let mut out = Vec::new();
        let mut k = 0u32;
        while k < grid.windows {
            let last = (k + per - 1).min(grid.windows - 1);
            out.push((k, last));
            k = last + 1;
        }
        out
    }

    /// The time a query evaluates window `k` at: its last millisecond (seconds with a
    /// fraction, as Prometheus takes times).
    fn end_of(grid: Grid, k: u32) -> String {
        let ms = (grid.from + grid.step * (i64::from(k) + 1)) * 1000 - 1;
        format!("{}.{:03}", ms.div_euclid(1000), ms.rem_euclid(1000))
    }

    /// The server's major version (`/api/v1/status/buildinfo`); 2 when it does not say
    /// (Thanos and Mimir answer differently, and keep Prometheus 2's closed ranges).
    fn major_version(&self) -> u32 {
        let url = format!(
            "{}/api/v1/status/buildinfo",
            self.base.trim_end_matches('/')
        );
        let agent = crate::http::agent(self.timeout);
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

    /// Whether the store's range selectors leave out a sample exactly `range` before the
    /// evaluation time (Prometheus 3 and VictoriaMetrics: `(t - range, t]`) or keep it
    /// (Prometheus 2, Thanos, Mimir 2: `[t - range, t]`). Measured on one series the window
    /// holds: its raw samples, then `count_over_time` over the second after one of them. A
    /// store's version does not tell (VictoriaMetrics answers `buildinfo` with no version,
    /// or with the Prometheus version it emulates); `None` where nothing could be measured.
    fn left_open(&self, grid: Grid, cluster: Option<&str>) -> Option<bool> {
        let base = self.base.trim_end_matches('/');
        let agent = crate::http::agent(self.timeout);
        let c = cluster.map_or(String::new(), |c| {
            format!(",cluster=\"{}\"", crate::review::query::promql_escape(c))
        });
        let series =
            format!("kube_pod_container_resource_requests{{resource=\"nvidia_com_gpu\"{c}}}");
        let instant = |query: &str, at_ms: i64| -> Option<serde_json::Value> {
            let url = format!("{base}/api/v1/query");
            let time = format!("{}.{:03}", at_ms.div_euclid(1000), at_ms.rem_euclid(1000));
            let v: serde_json::Value = crate::http::get_json(|| {
                self.authorize(agent.get(&url).query("query", query).query("time", &time))
            })
            .ok()?;
            (v["status"] == "success").then(|| v["data"]["result"].clone())
        };
        // One series (the first hour's, else the last's), then its raw samples in that hour.
        let hour = grid.step.clamp(3600, 86_400);
        let (exact, times) = [grid.from + hour, grid.to()].iter().find_map(|end| {
            let one = instant(
                &format!("topk(1, last_over_time({series}[{hour}s]))"),
                end * 1000,
            )?;
            let labels = one.as_array()?.first()?["metric"].as_object()?.clone();
            let exact: Vec<String> = labels
                .iter()
                .filter(|(k, _)| k.as_str() != "__name__")
                .filter_map(|(k, v)| {
                    let v = crate::review::query::promql_escape(v.as_str()?);
                    Some(format!("{k}=\"{v}\""))
                })
                .collect();
            let exact = format!(
                "kube_pod_container_resource_requests{{{}}}",
                exact.join(",")
            );
            let raw = instant(&format!("{exact}[{hour}s]"), end * 1000)?;
            let times: Vec<i64> = raw.as_array()?.first()?["values"]
                .as_array()?
                .iter()
                .filter_map(|p| p[0].as_f64())
                .map(|t| (t * 1000.0).round() as i64)
                .collect();
            Some((exact, times))
        })?;
        // A sample alone in the second after it.
        let s = times
            .windows(2)
            .find(|w| w[1] - w[0] > 1000)
            .map(|w| w[0])?;
        let probe = format!("count_over_time({exact}[1000ms])");
        let counted = instant(&probe, s + 1000)?;
        Some(counted.as_array()?.is_empty())
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

    fn no_data(&self, grid: Grid) -> ReviewError {
        ReviewError::Prometheus(format!(
            "Prometheus at {} has no kube_pod_container_resource_requests{{resource=\"nvidia_com_gpu\"}} (kube-state-metrics) or DCGM_FI_PROF_GR_ENGINE_ACTIVE (dcgm-exporter) series between {} and {}: are they scraped, and is the window right?",
            self.shown(),
            super::telemetry::format_time(grid.from),
            super::telemetry::format_time(grid.to())
        ))
    }

    /// Whether the window holds any series a review reads, asked once of the series index
    /// (`/api/v1/series`, no samples read) before the review's requests: a window with no
    /// data says so in one request, not after hundreds. A server without the endpoint (some
    /// gateways) is asked the queries themselves.
    fn has_data(&self, grid: Grid, cluster: Option<&str>) -> Option<bool> {
        let url = format!("{}/api/v1/series", self.base.trim_end_matches('/'));
        let sel = |m: &str, extra: &str| {
            let c = cluster.map_or(String::new(), |c| {
                format!(",cluster=\"{}\"", crate::review::query::promql_escape(c))
            });
            format!("{m}{{{extra}{c}}}").replace("{,", "{")
        };
        let agent = crate::http::agent(self.timeout);
        let request = || {
            self.authorize(
                agent
                    .get(&url)
                    .query(
                        "match[]",
                        &sel(
                            "kube_pod_container_resource_requests",
                            "resource=\"nvidia_com_gpu\"",
                        ),
                    )
                    .query("match[]", &sel("DCGM_FI_PROF_GR_ENGINE_ACTIVE", ""))
                    .query("match[]", &sel("DCGM_FI_DEV_GPU_UTIL", ""))
                    .query("start", &grid.from.to_string())
                    .query("end", &grid.to().to_string())
                    .query("limit", "1"),
            )
        };
        let v: serde_json::Value = crate::http::get_json(request).ok()?;
        (v["status"] == "success").then(|| v["data"].as_array().is_some_and(|a| !a.is_empty()))
    }

    /// One request's answer, folded into `out` as it streams in, every value held to the
    /// file reader's bounds.
    fn run(&self, job: &Job<'_>, grid: Grid, out: &mut Answers) -> Result<(), Attempt> {
        let url = format!("{}/api/v1/query_range", self.base.trim_end_matches('/'));
        let agent = crate::http::agent(self.timeout);
        let step = grid.step.to_string();
        let (start, end) = (Self::end_of(grid, job.first), Self::end_of(grid, job.last));
        let request = || {
            self.authorize(
                agent
                    .get(&url)
                    .query("query", &job.promql)
                    .query("start", &start)
                    .query("end", &end)
                    .query("step", &step)
                    // VictoriaMetrics moves a range's times onto multiples of the step for
                    // its response cache unless told not to; the review needs the times it
                    // asks for. Prometheus, Thanos and Mimir ignore the argument.
                    .query("nocache", "1"),
            )
        };
        let q = job.query;
        // The file reader's bounds, held on what the server computed from the same samples:
        // NaN, infinity, a negative or a value no sample in bounds could give is a broken
        // exporter, refused as the file path refuses it.
        let max = q.answer_max(grid.step);
        let max_series = super::telemetry::max_series();
        // Points answered, and those at a time this review asked for.
        let (mut points, mut landed) = (0u64, 0u64);
        // The group of the series whose points are streaming in: worked out once per series.
        let mut series: Option<(std::collections::BTreeMap<String, String>, Vec<String>)> = None;
        let status = crate::http::send_with(request, None, |r| {
            stream::read(r, &mut |labels, ts, raw| {
                let v = raw
                    .parse::<f64>()
                    .ok()
                    .filter(|v| v.is_finite() && (0.0..=max).contains(v))
                    .ok_or_else(|| {
                        format!(
                            "it answered `{}` for {} of {} at {}: expected a number from 0 to {max:e} (a broken exporter or a relabelled metric?)",
                            crate::core::printable(raw),
                            q.metrics.join("|"),
                            crate::core::printable(&format!("{labels:?}")),
                            super::telemetry::format_time((ts.floor() as i64).max(0)),
                        )
                    })?;
                points += 1;
                if let Some(k) = grid.window_ending((ts * 1000.0).round() as i64) {
                    landed += 1;
                    if series.as_ref().is_none_or(|(l, _)| l != labels) {
                        let group =
                            q.by.iter()
                                .map(|l| labels.get(*l).cloned().unwrap_or_default())
                                .collect();
                        series = Some((labels.clone(), group));
                    }
                    if let Some((_, group)) = &series {
                        out.add(q.id, group, k, v);
                    }
                    if out.rows.get(&q.id).map_or(0, |r| r.len()) > max_series {
                        return Err(super::telemetry::too_many_series(&format!(
                            "the answer to {}",
                            q.metrics.join("|")
                        )));
                    }
                }
                Ok(())
            })
        });
        let status = status.map_err(|f| self.failed(q, f))?;
        self.answered(q, status, points, landed)
    }

    /// A request that got no answer, as the attempt it was: too big or too slow for the
    /// server (the caller splits it), or a failure.
    fn failed(&self, q: &super::query::Query, f: Failure) -> Attempt {
        match f {
            // A body that stopped arriving is a timeout like any other, not a bad answer.
            Failure::Decode(e) if crate::http::timed_out(&e) => Attempt::TooSlow(format!(
                "Prometheus at {} did not finish answering a query of {} within --timeout {} s",
                self.shown(),
                q.metrics.join("|"),
                self.timeout.as_secs(),
            )),
            Failure::Decode(e) => Attempt::Failed(ReviewError::Prometheus(format!(
                "Prometheus at {}: not a query_range answer ({e})",
                self.shown()
            ))),
            Failure::Status(code, body) => {
                let detail = serde_json::from_str::<serde_json::Value>(&body)
                    .ok()
                    .and_then(|e| e["error"].as_str().map(str::to_owned))
                    .unwrap_or_else(|| crate::core::excerpt(&body, 200).into_owned());
                let why = format!(
                    "Prometheus at {} answered HTTP {code}: {}",
                    self.shown(),
                    crate::core::printable(&crate::core::redact(&detail))
                );
                // 422 is how Prometheus (`--query.max-samples`), VictoriaMetrics
                // (`-search.maxPointsPerTimeseries`, `-search.maxSamplesPerQuery`), Thanos and
                // Mimir refuse a query for its size; 503 with a timeout is Prometheus's own
                // `--query.timeout`.
                if code == 422 && size_limit(&detail) {
                    Attempt::TooBig(why)
                } else if code == 422 {
                    // Refused for what it is, not its size: splitting cannot help.
                    Attempt::Failed(ReviewError::Prometheus(format!(
                        "{why} (the store refused the query itself, not its size: a coarser `--step` or a longer `--timeout` will not help)"
                    )))
                } else if code >= 500 && crate::http::timed_out(&detail) {
                    Attempt::TooSlow(why)
                } else {
                    Attempt::Failed(ReviewError::Prometheus(why))
                }
            }
            Failure::Transport(t) if crate::http::timed_out(&t) => Attempt::TooSlow(format!(
                "Prometheus at {} did not answer a query of {} within --timeout {} s",
                self.shown(),
                q.metrics.join("|"),
                self.timeout.as_secs(),
            )),
            Failure::Transport(t) => {
                Attempt::Failed(ReviewError::Prometheus(crate::core::redact_short(
                    &format!("cannot reach Prometheus at {}: {t}", self.base),
                )))
            }
            Failure::Redirect(code, to) => Attempt::Failed(ReviewError::Prometheus(
                crate::http::redirected(&format!("Prometheus at {}", self.shown()), code, &to),
            )),
            // Out of waits: the status decides as it would have after its last try.
            Failure::Throttled { code, body, .. } => self.failed(q, Failure::Status(code, body)),
        }
    }

    /// An answer read whole: it held the times asked for, succeeded, and was a matrix.
    fn answered(
        &self,
        q: &super::query::Query,
        status: stream::Status,
        points: u64,
        landed: u64,
    ) -> Result<(), Attempt> {
        if points > 0 && landed == 0 {
            return Err(Attempt::Failed(ReviewError::Prometheus(format!(
                "Prometheus at {} answered {points} point(s) of {}, none at a time the review asked for: a query frontend moved the range onto multiples of the step for its cache (Thanos `--query-range.align-range-with-step`, Mimir `-query-frontend.align-queries-with-step`; VictoriaMetrics is asked with `nocache=1`). Turn that alignment off, or point `--prometheus` at the store itself",
                self.shown(),
                q.metrics.join("|")
            ))));
        }
        if status.status != "success" {
            return Err(Attempt::Failed(ReviewError::Prometheus(format!(
                "Prometheus at {} refused the query: {}: {}",
                self.shown(),
                status.error_type.unwrap_or_default(),
                crate::core::redact(&status.error.unwrap_or_default())
            ))));
        }
        match status.result_type.as_deref() {
            Some("matrix") => Ok(()),
            None => Err(Attempt::Failed(ReviewError::Prometheus(format!(
                "Prometheus at {}: no data in the answer",
                self.shown()
            )))),
            Some(other) => Err(Attempt::Failed(ReviewError::Prometheus(format!(
                "Prometheus at {}: expected a matrix, got `{}`",
                self.shown(),
                crate::core::printable(other)
            )))),
        }
    }

    /// Every query of [`QUERIES`] over `grid`, evaluated at each window's end: first whether
    /// the window holds data at all (one cheap request), then the queries over week-long
    /// pieces, [`CONCURRENCY`] at a time, `progress(done, total)` after each.
    pub(crate) fn fetch(
        &self,
        grid: Grid,
        cluster: Option<&str>,
        progress: &(dyn Fn(usize, usize) + Sync),
    ) -> Result<Answers, ReviewError> {
        let has = self.probe("whether the window holds data", || {
            self.has_data(grid, cluster)
        });
        if has == Some(false) {
            return Err(self.no_data(grid));
        }
        // Whether a window's range leaves its first millisecond out: measured on the store
        // where it can be, else read from its version.
        let v3 = self
            .probe("how its ranges end", || self.left_open(grid, cluster))
            .unwrap_or_else(|| self.probe("its version", || self.major_version()) >= 3);
        let pieces = Self::pieces(grid);
        let jobs: Vec<Job<'_>> = QUERIES
            .iter()
            .flat_map(|q| {
                let promql = q.promql(grid.step, cluster, v3);
                pieces.iter().map(move |&(first, last)| Job {
                    query: q,
                    promql: promql.clone(),
                    first,
                    last,
                })
            })
            .collect();
        let total = jobs.len();
        // The first request alone: a server that refuses or fails answers it, not four at
        // once with their retries.
        let mut first = Answers::default();
        if let Some(job) = jobs.first() {
            self.run_split(job, grid, &mut first, 0)?;
            progress(1, total);
        }
        let next = std::sync::atomic::AtomicUsize::new(1);
        let done = std::sync::atomic::AtomicUsize::new(1);
        let failed: std::sync::Mutex<Option<ReviewError>> = std::sync::Mutex::new(None);
        let parts: std::sync::Mutex<Vec<Answers>> = std::sync::Mutex::new(Vec::new());
        std::thread::scope(|s| {
            for _ in 0..CONCURRENCY.min(total) {
                s.spawn(|| {
                    let mut mine = Answers::default();
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let stop = failed.lock().map_or(true, |f| f.is_some());
                        let Some(job) = jobs.get(i).filter(|_| !stop) else {
                            break;
                        };
                        if let Err(e) = self.run_split(job, grid, &mut mine, 0) {
                            if let Ok(mut f) = failed.lock() {
                                f.get_or_insert(e);
                            }
                            break;
                        }
                        let d = done.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
                        progress(d, total);
                    }
                    if let Ok(mut p) = parts.lock() {
                        p.push(mine);
                    }
                });
            }
        });
        if let Some(e) = failed.into_inner().ok().flatten() {
            return Err(e);
        }
        // Each request's windows are its own; joined by the queries' own rule (max).
        let mut out = first;
        for part in parts.into_inner().unwrap_or_default() {
            out.merge(part);
        }
        let has = |q: Q| out.rows.get(&q).is_some_and(|r| !r.is_empty());
        if !has(Q::Requests) && !has(Q::Active) && !has(Q::Util) {
            return Err(self.no_data(grid));
        }
        out.compact();
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
