//! Inference judged by serving metrics, not GPU activity: a vLLM server's GPU can be busy
//! while requests wait, or look idle while its KV cache is full. Per inference workload whose
//! pods export vLLM's metrics, hour by hour: replicas serving, requests in flight and
//! waiting, KV-cache use and the time-to-first-token p95; the concurrency one replica
//! carried while the workload met its objective (its `ttft_p95_seconds`, else no queue and
//! KV cache below [`KV_FULL`]). Where the servers export their finished requests (or,
//! without that counter, a TTFT histogram), the replicas each hour needed come from its
//! arrivals by queueing arithmetic ([`queueing`]); otherwise from the concurrency one replica
//! carried within the objective.

use std::collections::BTreeMap;

use serde::Serialize;

use super::numbers::Quantiles;
use super::numbers::{quantile, round, round4};
use super::owners::owner;
use super::telemetry::{Serving, Telemetry, Windows};
use crate::core::Kind;
use crate::plan::Plan;

mod attach;
mod queueing;

pub(super) use attach::attach;
pub(crate) use queueing::{Arrivals, Counted, SlotsFrom};

/// KV-cache use from which vLLM starts preempting requests: a replica this full is saturated
/// whatever its queue says.
pub(crate) const KV_FULL: f64 = 0.9;
/// Requests waiting per replica below which a replica is not queueing.
pub(crate) const QUEUE_FREE: f64 = 0.1;
/// Requests an hour needs before its TTFT p95 is read (fewer is too few for a percentile).
const MIN_REQUESTS: f64 = 20.0;

/// The `q` quantile of a cumulative histogram (bound, count) exactly as PromQL's
/// `histogram_quantile` reads it (Prometheus `promql/quantile.go`, `bucketQuantile`): buckets
/// in bound order made monotonic, the observations are the `+Inf` bucket's count, the
/// quantile falls in the first bucket whose count reaches its rank and is interpolated
/// linearly from the bound below (0 for the first bucket), a quantile in the `+Inf` bucket is
/// the highest finite bound. `None` where PromQL answers NaN: no `+Inf` bucket, fewer than two
/// buckets, or no observation. Every bound the series export must be present, those that
/// counted nothing with 0: a missing bound moves the interpolation's start.
pub(crate) fn histogram_quantile(buckets: &BTreeMap<u64, f64>, q: f64) -> Option<f64> {
    if q.is_nan() {
        return None;
    }
    if q < 0.0 {
        return Some(f64::NEG_INFINITY);
    }
    if q > 1.0 {
        return Some(f64::INFINITY);
    }
    // Bounds are non-negative (`attach` keeps no other), so their bits sort as the values do.
    let mut b: Vec<(f64, f64)> = buckets
        .iter()
        .map(|(bits, n)| (f64::from_bits(*bits), *n))
        .collect();
    if !b.last().is_some_and(|(le, _)| *le == f64::INFINITY) || b.len() < 2 {
        return None;
    }
    let mut most = 0.0_f64;
    for (_, n) in &mut b {
        most = most.max(*n);
        *n = most;
    }
    let observations = b[b.len() - 1].1;
    if observations <= 0.0 {
        return None;
    }
    let mut rank = q * observations;
    // sort.Search over every bucket but `+Inf`: the first whose count reaches the rank.
    let i = b[..b.len() - 1].partition_point(|(_, n)| *n < rank);
    if i == b.len() - 1 {
        return Some(b[b.len() - 2].0);
    }
    if i == 0 && b[0].0 <= 0.0 {
        return Some(b[0].0);
    }
    let (end, mut count) = b[i];
    let mut start = 0.0;
    if i > 0 {
        start = b[i - 1].0;
        count -= b[i - 1].1;
        rank -= b[i - 1].1;
    }
    let v = start + (end - start) * (rank / count);
    (!v.is_nan()).then_some(v)
}

/// What decided a serving row's replicas.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ServingSignal {
    /// Hours that met the plan's `ttft_p95_seconds`.
    TimeToFirstToken,
    /// Hours with no queue and the KV cache below 90% (no objective stated, or no
    /// time-to-first-token histogram exported).
    QueueAndKvCache,
}

/// One inference workload's serving, over the hours its pods exported vLLM's metrics.
#[derive(Debug, Clone, Serialize, PartialEq, schemars::JsonSchema)]
pub struct ServingRow {
    pub workload: String,
    pub team: String,
    /// Hours with serving data.
    pub hours: usize,
    /// Replicas exporting serving metrics, per hour.
    pub replicas: Quantiles,
    /// Requests in flight (running + waiting) per hour, the workload's whole load.
    pub concurrency: Quantiles,
    /// Requests waiting per hour.
    pub waiting: Quantiles,
    /// Mean KV-cache use of its replicas per hour, 0..1; `None` where not exported.
    pub kv_cache: Option<Quantiles>,
    /// The plan's objective, seconds.
    pub ttft_objective_seconds: Option<f64>,
    /// Time-to-first-token p95 over the whole window; `None` where not exported.
    pub ttft_p95_seconds: Option<f64>,
    /// Hours whose TTFT p95 exceeded the objective (of those with enough requests to tell).
    pub hours_over_objective: Option<usize>,
    pub hours_with_ttft: usize,
    pub decided_by: ServingSignal,
    /// Requests in flight one replica carried within the objective (the most of any hour
    /// that met it); `None` where no hour met it.
    pub concurrency_per_replica: Option<f64>,
    /// Where the servers exported their finished requests (or a TTFT histogram, whose count
    /// is then the arrivals): the arrivals and the queueing figures the replicas needed came
    /// from (`concurrency_per_replica` then decides nothing).
    pub arrivals: Option<Arrivals>,
    /// Replicas each hour needed: for its arrivals at the objective where `arrivals` is
    /// given, else at the concurrency one replica carried within it.
    pub needed_replicas: Option<Quantiles>,
    /// Per hour (Unix seconds of its start): replicas needed, for the forecast.
    #[serde(skip)]
    pub needed_by_hour: BTreeMap<i64, f64>,
    /// The most replicas that ran in an hour that missed the objective: no proposal goes
    /// below it (those replicas were too few). `None` where no hour missed.
    pub ran_when_missed: Option<f64>,
    /// The GPU model its serving pods ran on (the most of them): the capacity it was sized by
    /// is that GPU's. `None` where no node said.
    pub measured_on: Option<String>,
    /// The plan lets it run on another GPU model than `measured_on`.
    #[serde(skip)]
    pub(crate) may_move: bool,
    /// The most replicas at once that held the workload's GPUs without exporting its serving
    /// series (a ServiceMonitor that selects some pods); each is read as carrying the
    /// exporting replicas' mean, and `replicas` counts them. `None` where every one exported.
    pub unscraped_replicas: Option<f64>,
    /// The hours that missed, with the replicas that ran in each.
    #[serde(skip)]
    pub(crate) missed: BTreeMap<i64, f64>,
    /// Where sized from arrivals: the queue each replica is, and each hour's arrivals per
    /// second, so the forecast adds its headroom to the arrivals.
    #[serde(skip)]
    pub(crate) queue: Option<(queueing::Model, BTreeMap<i64, f64>)>,
}

/// One hour of a workload's serving.
#[derive(Default, Clone, Copy)]
struct Hour {
    windows: f64,
    replicas: f64,
    running: f64,
    waiting: f64,
    kv: f64,
    kv_windows: f64,
    /// Requests that left the servers (any reason), and of them aborted.
    finished: f64,
    aborted: f64,
    /// Requests arriving per second in the hour's busiest block of [`BLOCK`] seconds (or of
    /// one window where the step is longer): requests finished plus the growth of those in
    /// flight, so a spike shorter than the hour is not averaged away.
    arrivals: f64,
    /// The same in the hour's busiest single window (one scrape step): the finest evidence
    /// of a burst, read where the hour missed its objective (a block's mean then understated
    /// what came), and when that window started.
    burst: f64,
    burst_at: i64,
}

/// One block of [`BLOCK`] seconds of a workload's serving: requests finished, requests in
/// flight in its first and last window with gauges, and how many such windows.
#[derive(Default)]
struct Block {
    finished: f64,
    first: f64,
    last: f64,
    windows: f64,
}

/// Seconds over which an arrival rate is read: long enough to count hundreds of requests
/// of a busy service, short enough that a burst of tens of minutes shows.
pub(crate) const BLOCK: i64 = 600;

/// Serving rows of the plan's inference workloads whose pods exported vLLM's metrics, and
/// the names of those that state a vLLM server but exported none.
pub(crate) fn serving(
    plan: &Plan,
    catalog: &crate::catalog::Catalog,
    t: &Telemetry,
) -> (Vec<ServingRow>, Vec<String>) {
    let mut rows = Vec::new();
    let mut missing = Vec::new();
    // Each serving pod's workload, told once.
    let mut by_workload: BTreeMap<&str, Vec<&Serving>> = BTreeMap::new();
    let mut silent: BTreeMap<&str, Vec<&Windows>> = BTreeMap::new();
    // The GPU model each workload's serving pods ran on, by pod: its capacity was measured
    // there (a KV cache of that size, that speed).
    let mut models: BTreeMap<&str, BTreeMap<String, usize>> = BTreeMap::new();
    for p in t.pods.values().flatten() {
        match (p.serving.as_ref(), owner(plan, p)) {
            (Some(s), Some(w)) => {
                by_workload.entry(w).or_default().push(s);
                let model = p
                    .node
                    .as_ref()
                    .and_then(|n| t.nodes.get(n))
                    .and_then(|n| n.reported_model.as_deref().or(n.model.as_deref()))
                    .map(|m| {
                        catalog
                            .gpu_named(m)
                            .map_or(m, |g| g.name.as_str())
                            .to_owned()
                    });
                if let Some(m) = model {
                    *models.entry(w).or_default().entry(m).or_default() += 1;
                }
            }
            (None, Some(w)) => silent.entry(w).or_default().push(&p.gpus),
            _ => {}
        }
    }
    for w in plan.workloads() {
        if w.kind() != Kind::Inference {
            continue;
        }
        let name = w.name.get();
        let pods = by_workload.remove(name.as_str()).unwrap_or_default();
        if pods.is_empty() {
            if w.server.as_ref().is_some_and(|s| s.get().is_vllm()) {
                missing.push(name.clone());
            }
            continue;
        }
        let objective = w.ttft_p95_seconds.as_ref().map(|v| *v.get());
        let max_num_seqs = w
            .server
            .as_ref()
            .and_then(|s| s.max_num_seqs.as_ref())
            .map(|n| *n.get());
        let judged_by = Judging {
            step: t.step,
            objective,
            max_num_seqs,
            silent: silent_per_window(&silent.remove(name.as_str()).unwrap_or_default()),
        };
        if let Some(mut row) = row(name, w.team.get(), &pods, &judged_by) {
            row.measured_on = models.get(name.as_str()).and_then(|m| {
                m.iter()
                    .max_by_key(|(name, n)| (**n, std::cmp::Reverse((*name).clone())))
                    .map(|(name, _)| name.clone())
            });
            row.may_move = row
                .measured_on
                .as_deref()
                .is_some_and(|m| may_move_off(plan, catalog, w, m));
            rows.push(row);
        }
    }
    (rows, missing)
}

/// Whether the plan lets a workload measured on GPU `model` run on another: it names no GPU
/// model or SKU, or several models between them. Only a catalog model can be written back.
fn may_move_off(
    plan: &Plan,
    catalog: &crate::catalog::Catalog,
    w: &crate::plan::Workload,
    model: &str,
) -> bool {
    let Some(measured) = catalog.gpu(model) else {
        return false;
    };
    // The GPU models of the provider's sizes the workload's allow-lists let it take, as the
    // recommender reads them.
    let allowed: std::collections::BTreeSet<&str> = catalog
        .provider(plan.provider())
        .into_iter()
        .flat_map(|pc| pc.skus.values())
        .filter(|s| w.allows_sku(&s.name))
        .filter_map(|s| catalog.gpu(&s.gpu_model))
        .filter(|g| w.allows_gpu(catalog, &g.name))
        .map(|g| g.name.as_str())
        .collect();
    allowed.contains(measured.name.as_str()) && allowed.len() > 1
}

/// A workload's serving per hour, and its time-to-first-token histogram per hour and over
/// the whole window.
struct Hours {
    hours: BTreeMap<i64, Hour>,
    /// Arrivals counted from first tokens: a pod exported no finished-request counter.
    first_tokens: bool,
    /// A pod's finished-request counter has no `abort` series: its abandoned requests are
    /// unseen.
    aborts_unseen: bool,
    ttft: BTreeMap<i64, BTreeMap<u64, f64>>,
    all: BTreeMap<u64, f64>,
    /// Seconds of the blocks each hour's arrivals were read in: [`BLOCK`], or one window
    /// where the step is longer.
    block: i64,
}

/// A window's figures with `silent` more replicas, each carrying the exporting ones' mean.
fn with_silent(x: &Hour, silent: f64) -> Hour {
    if silent <= 0.0 || x.replicas <= 0.0 {
        return *x;
    }
    let k = (x.replicas + silent) / x.replicas;
    Hour {
        replicas: x.replicas + silent,
        running: x.running * k,
        waiting: x.waiting * k,
        finished: x.finished * k,
        aborted: x.aborted * k,
        ..*x
    }
}

/// Per window, the workload's replicas that held GPUs without exporting serving series.
fn silent_per_window(silent: &[&Windows]) -> BTreeMap<i64, f64> {
    let mut out: BTreeMap<i64, f64> = BTreeMap::new();
    for gpus in silent {
        for (w, g) in gpus.iter() {
            if *g > 0.0 {
                *out.entry(w).or_default() += 1.0;
            }
        }
    }
    out
}

fn hours(pods: &[&Serving], silent: &BTreeMap<i64, f64>, step: i64) -> Hours {
    let hour_of = |w: &i64| w.div_euclid(3600) * 3600;
    // Per window: replicas reporting, running, waiting and KV-cache sums; then per hour.
    let mut windows: BTreeMap<i64, Hour> = BTreeMap::new();
    let mut ttft: BTreeMap<i64, BTreeMap<u64, f64>> = BTreeMap::new();
    let mut all: BTreeMap<u64, f64> = BTreeMap::new();
    let mut first_tokens = false;
    let mut aborts_unseen = false;
    for s in pods {
        aborts_unseen |= !s.finished.is_empty() && !s.aborts_counted;
        for (w, r) in &s.running {
            let e = windows.entry(w).or_default();
            e.replicas += 1.0;
            e.running += r;
            e.waiting += s.waiting.get(&w).copied().unwrap_or(0.0);
            if let Some(kv) = s.kv_cache.get(&w) {
                let engines = s.kv_engines.get(&w).copied().unwrap_or(1.0).max(1.0);
                e.kv += kv / engines;
                e.kv_windows += 1.0;
            }
        }
        for (w, n) in &s.finished {
            let e = windows.entry(w).or_default();
            e.finished += n;
            e.aborted += s.aborted.get(&w).copied().unwrap_or(0.0);
        }
        if s.finished.is_empty() {
            // No finished-request counter: the requests that got a first token (the
            // histogram's `+Inf` bucket) arrived, those that gave up first are unseen.
            for (w, b) in &s.ttft {
                windows.entry(*w).or_default().finished += b.values().copied().fold(0.0, f64::max);
                first_tokens = true;
            }
        }
        for (w, b) in &s.ttft {
            for (le, n) in b {
                *ttft.entry(hour_of(w)).or_default().entry(*le).or_default() += n;
                *all.entry(*le).or_default() += n;
            }
        }
    }
    let mut hours: BTreeMap<i64, Hour> = BTreeMap::new();
    let block = BLOCK.max(step);
    let mut blocks: BTreeMap<i64, Block> = BTreeMap::new();
    // The load of the window before, where it was covered: a window's arrivals are what
    // finished in it plus what its load grew by since.
    let mut before: Option<(i64, f64)> = None;
    for (w, x) in &windows {
        let b = blocks.entry(w.div_euclid(block) * block).or_default();
        if x.replicas == 0.0 {
            // Requests finished in a window no gauge covered: counted, not a window of load.
            b.finished += x.finished;
            continue;
        }
        // Replicas that held the workload's GPUs without exporting its series (a
        // ServiceMonitor that selects some pods) served their share of what came: the window
        // is read as if each served what the exporting ones did on average.
        let x = &with_silent(x, silent.get(w).copied().unwrap_or(0.0));
        b.finished += x.finished;
        let load = x.running + x.waiting;
        if b.windows == 0.0 {
            b.first = load;
        }
        b.last = load;
        b.windows += 1.0;
        let grew = before
            .filter(|(at, _)| *at == w - step)
            .map_or(0.0, |(_, l)| load - l);
        before = Some((*w, load));
        let burst = ((x.finished + grew) / step.max(1) as f64).max(0.0);
        let e = hours.entry(hour_of(w)).or_default();
        // Finer evidence only where a window is shorter than a block: at one window a block
        // the block's rate is the window's.
        if step < block && burst > e.burst {
            e.burst = burst;
            e.burst_at = *w;
        }
        e.finished += x.finished;
        e.aborted += x.aborted;
        e.windows += 1.0;
        e.replicas += x.replicas;
        e.running += x.running;
        e.waiting += x.waiting;
        if x.kv_windows > 0.0 {
            e.kv += x.kv / x.kv_windows;
            e.kv_windows += 1.0;
        }
    }
    for (start, b) in &blocks {
        if let Some(h) = hours.get_mut(&hour_of(start)).filter(|_| b.windows > 0.0) {
            let rate =
                ((b.finished + b.last - b.first) / (b.windows * step.max(1) as f64)).max(0.0);
            h.arrivals = h.arrivals.max(rate);
        }
    }
    // An hour is read where its windows cover at least half of it.
    let half = (1800 / step.max(1)).max(1) as f64;
    hours.retain(|_, h| h.windows >= half);
    Hours {
        hours,
        first_tokens,
        aborts_unseen,
        ttft,
        all,
        block,
    }
}

impl Hour {
    fn mean(&self, v: f64) -> f64 {
        v / self.windows
    }
    fn replicas(&self) -> f64 {
        self.mean(self.replicas)
    }
    /// Requests in flight: running and waiting.
    fn load(&self) -> f64 {
        self.mean(self.running + self.waiting)
    }
    fn kv(&self) -> Option<f64> {
        (self.kv_windows > 0.0).then(|| self.kv / self.kv_windows)
    }
}

/// How the hours were judged, and what they tell.
struct Judged {
    signal: ServingSignal,
    /// The most requests in flight one replica carried in an hour that met the objective.
    per_replica: Option<f64>,
    over: usize,
    with_ttft: usize,
    /// Hours that missed (TTFT p95 over the objective; without one, a queue or a full KV
    /// cache), each with the replicas that ran then: too few, so never proposed fewer.
    missed: BTreeMap<i64, f64>,
}

fn judge(h: &Hours, objective: Option<f64>) -> Judged {
    let p95_of = |hour: &i64| {
        h.ttft
            .get(hour)
            .filter(|b| b.values().copied().fold(0.0, f64::max) >= MIN_REQUESTS)
            .and_then(|b| histogram_quantile(b, 0.95))
    };
    let signal = if objective.is_some() && h.hours.keys().any(|k| p95_of(k).is_some()) {
        ServingSignal::TimeToFirstToken
    } else {
        ServingSignal::QueueAndKvCache
    };
    let mut j = Judged {
        signal,
        per_replica: None,
        over: 0,
        with_ttft: 0,
        missed: BTreeMap::new(),
    };
    for (k, x) in &h.hours {
        let replicas = x.replicas();
        if replicas <= 0.0 {
            continue;
        }
        let p95 = p95_of(k);
        j.with_ttft += usize::from(p95.is_some());
        let (met, missed) = match (signal, objective, p95) {
            (ServingSignal::TimeToFirstToken, Some(o), Some(p)) => {
                j.over += usize::from(p > o);
                (p <= o, p > o)
            }
            // An hour without enough requests to read its p95 tells nothing under an objective.
            (ServingSignal::TimeToFirstToken, _, _) => (false, false),
            (ServingSignal::QueueAndKvCache, _, _) => {
                let met =
                    x.mean(x.waiting) / replicas < QUEUE_FREE && x.kv().is_none_or(|k| k < KV_FULL);
                (met, !met)
            }
        };
        if missed {
            // A mean of whole replicas over the hour's windows: the most that ran is its
            // ceiling (a replica that joined mid-hour ran too).
            j.missed.insert(*k, (replicas - 1e-6).ceil());
        }
        if met && x.load() > 0.0 {
            let per = x.load() / replicas;
            j.per_replica = Some(j.per_replica.map_or(per, |b: f64| b.max(per)));
        }
    }
    j
}

/// What a workload's serving is judged against.
pub(super) struct Judging {
    pub(super) step: i64,
    pub(super) objective: Option<f64>,
    /// The plan's `server.max_num_seqs`.
    pub(super) max_num_seqs: Option<i64>,
    /// Per window, the workload's pods that held GPUs without exporting serving series.
    pub(super) silent: BTreeMap<i64, f64>,
}

fn row(name: &str, team: &str, pods: &[&Serving], by: &Judging) -> Option<ServingRow> {
    let h = hours(pods, &by.silent, by.step);
    if h.hours.is_empty() {
        return None;
    }
    let j = judge(&h, by.objective);
    let queued = queueing::arrivals(pods, &h, by, &j.missed);
    let (arrivals, mut needed_by_hour, queue) = match queued {
        Some((figures, model, rate)) => (
            Some(figures),
            queueing::needed(&model, &rate, 0.0),
            Some((model, rate)),
        ),
        None => (
            None,
            j.per_replica
                .map(|per| {
                    h.hours
                        .iter()
                        .map(|(k, x)| (*k, (x.load() / per - 1e-9).ceil().max(0.0)))
                        .collect()
                })
                .unwrap_or_default(),
            None,
        ),
    };
    at_least_what_missed(&mut needed_by_hour, &j.missed);
    let q = |f: &dyn Fn(&Hour) -> f64| -> Quantiles {
        Quantiles::of(&h.hours.values().map(f).collect::<Vec<_>>())
    };
    let kv: Vec<f64> = h.hours.values().filter_map(Hour::kv).map(round4).collect();
    Some(ServingRow {
        workload: name.to_owned(),
        team: team.to_owned(),
        hours: h.hours.len(),
        replicas: q(&Hour::replicas),
        concurrency: q(&Hour::load),
        waiting: q(&|x| x.mean(x.waiting)),
        kv_cache: (!kv.is_empty()).then(|| Quantiles::of(&kv)),
        ttft_objective_seconds: by.objective,
        ttft_p95_seconds: histogram_quantile(&h.all, 0.95).map(round4),
        hours_over_objective: (j.signal == ServingSignal::TimeToFirstToken).then_some(j.over),
        hours_with_ttft: j.with_ttft,
        decided_by: j.signal,
        concurrency_per_replica: j.per_replica.map(round),
        arrivals,
        needed_replicas: (!needed_by_hour.is_empty())
            .then(|| Quantiles::of(&needed_by_hour.values().copied().collect::<Vec<_>>())),
        needed_by_hour,
        ran_when_missed: j.missed.values().copied().reduce(f64::max),
        measured_on: None,
        may_move: false,
        unscraped_replicas: (!by.silent.is_empty())
            .then(|| round(by.silent.values().copied().fold(0.0, f64::max))),
        missed: j.missed,
        queue,
    })
}

/// An hour that missed its objective needed more than the replicas that ran then: no sizing
/// of it goes below them, whatever the arithmetic says (it read that hour's load too low).
fn at_least_what_missed(needed: &mut BTreeMap<i64, f64>, missed: &BTreeMap<i64, f64>) {
    if needed.is_empty() {
        return;
    }
    for (k, ran) in missed {
        let n = needed.entry(*k).or_insert(0.0);
        *n = n.max(*ran);
    }
}

/// The replicas each hour needs with `headroom` on its arrivals, where arrivals sized the
/// row; `None` otherwise.
pub(crate) fn needed_with_headroom(r: &ServingRow, headroom: f64) -> Option<BTreeMap<i64, f64>> {
    r.queue.as_ref().map(|(model, rate)| {
        let mut n = queueing::needed(model, rate, headroom);
        at_least_what_missed(&mut n, &r.missed);
        n
    })
}

/// The replicas needed per hour, p10 and highest, for a sizing.
pub(crate) fn needed_range(r: &ServingRow) -> Option<(f64, f64)> {
    let v: Vec<f64> = r.needed_by_hour.values().copied().collect();
    (!v.is_empty()).then(|| (quantile(&v, 0.10), v.iter().copied().fold(0.0, f64::max)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hist(pairs: &[(f64, f64)]) -> BTreeMap<u64, f64> {
        pairs.iter().map(|(le, n)| (le.to_bits(), *n)).collect()
    }

    /// PromQL's `histogram_quantile`: linear within the bucket, the highest finite bound for
    /// a rank in `+Inf`.
    #[test]
    fn quantiles_interpolate_within_the_bucket_as_promql_does() {
        let h = hist(&[
            (0.1, 50.0),
            (0.5, 90.0),
            (1.0, 100.0),
            (f64::INFINITY, 100.0),
        ]);
        let p95 = histogram_quantile(&h, 0.95).expect("p95");
        assert!((p95 - 0.75).abs() < 1e-9, "{p95}");
        let p50 = histogram_quantile(&h, 0.5).expect("p50");
        assert!((p50 - 0.1).abs() < 1e-9, "{p50}");
        let tail = hist(&[(0.1, 10.0), (f64::INFINITY, 100.0)]);
        assert_eq!(histogram_quantile(&tail, 0.95), Some(0.1));
        assert_eq!(histogram_quantile(&hist(&[]), 0.95), None);
        // bits order non-negative bounds as numbers
        assert!(0.5f64.to_bits() < 1.0f64.to_bits() && 1.0f64.to_bits() < f64::INFINITY.to_bits());
    }

    /// Prometheus's own cases (`promql/promqltest/testdata/histograms.test`, series
    /// `testhistogram_bucket{start="positive"}` at 50m: 50, 70, 110 and 120 observations at
    /// `le` 0.1, 0.2, 1 and `+Inf`) give what PromQL's `histogram_quantile` gives.
    #[test]
    fn prometheus_own_cases_read_the_same() {
        let h = hist(&[
            (0.1, 50.0),
            (0.2, 70.0),
            (1.0, 110.0),
            (f64::INFINITY, 120.0),
        ]);
        let at = |q: f64| histogram_quantile(&h, q).expect("a value");
        for (q, want) in [
            (0.0, 0.0),
            (0.2, 0.048),
            (0.5, 0.15),
            (0.8, 0.72),
            (1.0, 1.0),
        ] {
            assert!((at(q) - want).abs() < 1e-12, "q {q}: {} != {want}", at(q));
        }
        assert_eq!(at(-0.1), f64::NEG_INFINITY);
        assert_eq!(at(1.01), f64::INFINITY);
        assert_eq!(histogram_quantile(&h, f64::NAN), None);
    }

    /// Issue 73: every bound kept, the ones that counted nothing included. Every first token
    /// later than the top finite bound reads as that bound, not 0; a rank in the bucket above
    /// an empty one interpolates from that one's bound; no `+Inf` bucket, or one bucket only,
    /// is NaN as in PromQL; counts that fall (a counter reset read across buckets) are made
    /// monotonic first.
    #[test]
    fn the_bounds_that_counted_nothing_still_bound() {
        let late = hist(&[(1.0, 0.0), (5.0, 0.0), (10.0, 0.0), (f64::INFINITY, 40.0)]);
        assert_eq!(histogram_quantile(&late, 0.95), Some(10.0));
        let mid = hist(&[(1.0, 0.0), (2.5, 0.0), (5.0, 100.0), (f64::INFINITY, 100.0)]);
        let p95 = histogram_quantile(&mid, 0.95).expect("p95");
        assert!((p95 - 4.875).abs() < 1e-12, "{p95}");
        let no_inf = hist(&[(0.5, 10.0), (1.0, 20.0)]);
        assert_eq!(histogram_quantile(&no_inf, 0.95), None);
        assert_eq!(
            histogram_quantile(&hist(&[(f64::INFINITY, 5.0)]), 0.5),
            None
        );
        let empty = hist(&[(1.0, 0.0), (f64::INFINITY, 0.0)]);
        assert_eq!(histogram_quantile(&empty, 0.5), None);
        let falling = hist(&[(1.0, 10.0), (2.0, 8.0), (f64::INFINITY, 10.0)]);
        assert_eq!(histogram_quantile(&falling, 0.5), Some(0.5));
    }
}
