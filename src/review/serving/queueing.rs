//! How many replicas a service's arrivals need at its objective.
//!
//! Each replica is a queue in front of `c` batch slots: vLLM runs at most `max_num_seqs`
//! requests at once (fewer where their KV cache fills first) and queues the rest. A request
//! holds a slot for its service time `S`, the time it runs. With `λ` requests a second spread
//! over `n` replicas (a Service balances connections, so each replica queues its own), one
//! replica is an M/M/c queue with offered load `a = λ·S/n` Erlangs. Erlang's C formula gives
//! the chance an arrival waits, `C(c, a)`, and the waiting time's tail,
//! `P(W > t) = C(c, a)·e^(−(c − a)·t/S)`. The time to first token is that wait plus the first
//! token's own time `t0` (measured in hours without a queue), so the objective holds at the
//! 95th percentile when `P(W > objective − t0) ≤ 5%`. Without an objective the replica must
//! not queue: its mean queue `C(c, a)·a/(c − a)` under [`super::QUEUE_FREE`] per replica, the
//! level the review judges queueing by. The replicas needed are the fewest that hold.
//!
//! Arrivals are every request that left a server (served, cut at its length, or aborted by a
//! client that gave up) plus the growth of the requests in flight: what came, not how long
//! its clients were willing to wait for it.

use std::collections::BTreeMap;

use serde::Serialize;

use super::super::numbers::{quantile, round, round4, Quantiles};
use super::super::telemetry::Serving;
use super::{histogram_quantile, Hour, Hours, Judging, KV_FULL, QUEUE_FREE};

/// The share of requests allowed over the objective: it is a 95th percentile.
const TAIL: f64 = 0.05;
/// vLLM's default `max_num_seqs` for an engine on a GPU under 70 GiB (`EngineArgs`; larger
/// GPUs default higher), the batch limit read where nothing else tells it.
const VLLM_MAX_NUM_SEQS: f64 = 256.0;
/// Requests waiting in a window's mean from which a replica's batch counts as full.
const QUEUED: f64 = 1.0;

/// Where a replica's batch slots were read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SlotsFrom {
    /// The requests a replica ran while others waited, typically (the median of those
    /// readings): its batch was full.
    SeenFull,
    /// The plan's `server.max_num_seqs`, or fewer where the KV cache each request used
    /// fills first.
    MaxNumSeqs,
    /// The KV cache each running request used: the requests that fill it to 90%.
    KvCache,
    /// vLLM's default `max_num_seqs` (256): no queue, no KV-cache figures and no plan value.
    VllmDefault,
}

/// What the arrivals were counted from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Counted {
    /// `vllm:request_success_total`, every finish reason: abandoned requests arrived too.
    Finished,
    /// `vllm:request_success_total` with no `finished_reason="abort"` series (vLLM V0, which
    /// counts only requests that were scheduled): a request abandoned while it waited is
    /// unseen, so the arrivals are at least these.
    FinishedWithoutAborts,
    /// The time-to-first-token histogram's count, where a server exported no
    /// finished-request counter: a client that gave up before its first token is unseen.
    FirstTokens,
}

/// The queueing figures that sized a service from its arrivals.
#[derive(Debug, Clone, Copy, Serialize, PartialEq, schemars::JsonSchema)]
pub struct Arrivals {
    pub counted: Counted,
    /// Requests arriving per second, per hour: in the hour's busiest block of
    /// `block_seconds`.
    pub per_second: Quantiles,
    /// The block the arrivals of an hour are read in: its busiest one decides the hour.
    pub block_seconds: f64,
    /// The busiest burst that decided an hour instead of its block: in an hour that missed
    /// the objective, the arrivals of its busiest single window where they exceed the
    /// block's. `None` where no missed hour held one.
    pub burst: Option<Burst>,
    /// Share of the requests that finished by a client giving up (`finished_reason="abort"`);
    /// `None` where the servers cannot count them ([`Counted::FinishedWithoutAborts`],
    /// [`Counted::FirstTokens`]): no share is known, 0 least of all.
    pub aborted_share: Option<f64>,
    /// Seconds a request held a batch slot (requests running over requests served, Little's
    /// law, in hours without a queue where there were any).
    pub service_seconds: f64,
    /// Requests one replica runs at once.
    pub slots_per_replica: f64,
    pub slots_from: SlotsFrom,
    /// Time to first token without a queue (p95 over the hours without one), seconds.
    pub first_token_seconds: f64,
    /// The wait the objective leaves a request at the 95th percentile; `None` without an
    /// objective (then no queue is the target).
    pub wait_budget_seconds: Option<f64>,
}

/// A burst that sized an hour: one scrape window's arrivals.
#[derive(Debug, Clone, Copy, Serialize, PartialEq, schemars::JsonSchema)]
pub struct Burst {
    /// The window's start, Unix seconds.
    pub starts_at: i64,
    /// The window's length: the finest the data holds.
    pub seconds: f64,
    /// Requests arriving per second in it: those that finished in it plus the growth of
    /// those in flight.
    pub per_second: f64,
    /// The same averaged over the block it fell in, which the hour would have been sized on.
    pub block_per_second: f64,
}

/// One replica's queue: its slots and service time, and what it must meet.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Model {
    pub slots: u32,
    pub service: f64,
    pub budget: Option<f64>,
}

/// Erlang's C formula: the chance an arrival waits at `c` servers offered `a` Erlangs, by
/// Erlang B's recurrence (stable at any size); 1 where `a ≥ c`.
pub(crate) fn erlang_c(c: u32, a: f64) -> f64 {
    if a <= 0.0 {
        return 0.0;
    }
    let cf = f64::from(c);
    if a >= cf {
        return 1.0;
    }
    let mut b = 1.0;
    for k in 1..=c {
        b = a * b / (f64::from(k) + a * b);
    }
    (cf * b / (cf - a * (1.0 - b))).clamp(0.0, 1.0)
}

impl Model {
    /// Whether `n` replicas meet the target for `lambda` requests a second.
    pub(crate) fn meets(&self, lambda: f64, n: f64) -> bool {
        let a = lambda * self.service / n;
        let c = f64::from(self.slots);
        if a >= c {
            return false;
        }
        let waits = erlang_c(self.slots, a);
        match self.budget {
            Some(w) if w > 0.0 => waits * (-(c - a) * w / self.service).exp() <= TAIL,
            Some(_) => waits <= TAIL,
            None => waits * a / (c - a) < QUEUE_FREE,
        }
    }

    /// The fewest replicas that meet the target for `lambda` requests a second; 0 for none.
    pub(crate) fn replicas(&self, lambda: f64) -> f64 {
        if !(lambda > 0.0 && lambda.is_finite()) || self.service <= 0.0 {
            return 0.0;
        }
        // Stable needs a < c: at least λS/c replicas.
        let mut lo = (lambda * self.service / f64::from(self.slots))
            .floor()
            .max(0.0);
        let mut hi = (lo + 1.0).max(1.0);
        while !self.meets(lambda, hi) {
            lo = hi;
            hi *= 2.0;
            if hi > 1e7 {
                return hi;
            }
        }
        // lo fails (or is 0), hi meets: the fewest that meet lies in (lo, hi].
        while hi - lo > 1.0 {
            let mid = ((lo + hi) / 2.0).floor();
            if self.meets(lambda, mid) {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        hi
    }
}

/// The replicas each hour needs for its arrivals grown by `headroom` (0.15 for 15% more).
pub(crate) fn needed(
    model: &Model,
    rate: &BTreeMap<i64, f64>,
    headroom: f64,
) -> BTreeMap<i64, f64> {
    rate.iter()
        .map(|(k, l)| (*k, model.replicas(l * (1.0 + headroom.max(0.0)))))
        .collect()
}

/// Per window of one pod: requests running, waiting, and the KV cache each running request
/// used (summed over the pod's engines).
fn slots_seen(pods: &[&Serving]) -> (Option<f64>, Option<f64>, f64) {
    let mut full: Vec<f64> = Vec::new();
    let mut shares: Vec<f64> = Vec::new();
    let mut engines: f64 = 1.0;
    for s in pods {
        // A sample with requests waiting is a full batch: what ran beside it is the limit
        // (where the peaks were exported; else a window whose mean held a queue).
        for (w, q) in &s.waiting_peak {
            let r = s.running_peak.get(&w).copied().unwrap_or(0.0);
            if *q >= 1.0 && r > 0.0 {
                full.push(r);
            }
        }
        for (w, r) in &s.running {
            let waiting = s.waiting.get(&w).copied().unwrap_or(0.0);
            if waiting >= QUEUED && *r > 0.0 {
                full.push(*r);
            }
            if let (Some(kv), Some(n)) = (s.kv_cache.get(&w), s.kv_engines.get(&w)) {
                if *r >= 1.0 && *kv > 0.0 && *n > 0.0 {
                    // Each engine's cache is its own: a request's share of one engine's.
                    shares.push(kv / r);
                    engines = engines.max(*n);
                }
            }
        }
    }
    let kv_slots = (!shares.is_empty())
        .then(|| quantile(&shares, 0.5))
        .filter(|s| *s > 0.0)
        // A hair under a whole number is that number: a ratio of stored floats.
        .map(|share| (KV_FULL / share + 1e-6).floor().max(1.0) * engines);
    // The typical full batch, not the largest: where the KV cache bounds the batch, how many
    // fit depends on the mix of prompt lengths, and the most seen is a lucky mix of short
    // ones; where max_num_seqs bounds it, every full batch is that many.
    let full = (!full.is_empty()).then(|| quantile(&full, 0.5));
    (full, kv_slots, engines)
}

/// The model and its figures, where the servers exported their finished requests.
pub(super) fn arrivals(
    pods: &[&Serving],
    h: &Hours,
    by: &Judging,
    missed: &BTreeMap<i64, f64>,
) -> Option<(Arrivals, Model, BTreeMap<i64, f64>)> {
    // Returns the figures, the model, and the arrivals per second of each hour's busiest
    // block (its busiest window where the hour missed its objective).
    let (step, objective, max_num_seqs) = (by.step, by.objective, by.max_num_seqs);
    let (hours, ttft) = (&h.hours, &h.ttft);
    if !hours.values().any(|h| h.finished > 0.0) {
        return None;
    }
    let step = step.max(1) as f64;
    let free = |h: &Hour| h.replicas() > 0.0 && h.mean(h.waiting) / h.replicas() < QUEUE_FREE;
    let served = |h: &Hour| (h.finished - h.aborted).max(0.0);
    let service_over = |pick: &dyn Fn(&Hour) -> bool| {
        let (busy, done) = hours
            .values()
            .filter(|h| pick(h) && served(h) > 0.0)
            .fold((0.0, 0.0), |(b, d), h| {
                (b + h.running * step, d + served(h))
            });
        (done > 0.0).then(|| busy / done)
    };
    let service = service_over(&free).or_else(|| service_over(&|_| true))?;
    let (seen, kv, engines) = slots_seen(pods);
    let counted = if h.first_tokens {
        Counted::FirstTokens
    } else if h.aborts_unseen {
        Counted::FinishedWithoutAborts
    } else {
        Counted::Finished
    };
    let (slots, from) = match (seen, max_num_seqs, kv) {
        // A mean over a window of integers at the limit: the nearest is the limit.
        (Some(s), _, _) => (s.round(), SlotsFrom::SeenFull),
        // Per engine: a pod's engines each batch their own.
        (None, Some(m), k) => (
            (m as f64 * engines).min(k.unwrap_or(f64::MAX)),
            SlotsFrom::MaxNumSeqs,
        ),
        (None, None, Some(k)) => (k.min(VLLM_MAX_NUM_SEQS * engines), SlotsFrom::KvCache),
        (None, None, None) => (VLLM_MAX_NUM_SEQS * engines, SlotsFrom::VllmDefault),
    };
    let mut quiet: BTreeMap<u64, f64> = BTreeMap::new();
    for (k, _) in hours.iter().filter(|(_, h)| free(h)) {
        for (le, n) in ttft.get(k).into_iter().flatten() {
            *quiet.entry(*le).or_default() += n;
        }
    }
    let first = histogram_quantile(&quiet, 0.95).unwrap_or(0.0);
    let budget = objective.map(|o| (o - first).max(0.0));
    let model = Model {
        slots: slots.floor().clamp(1.0, f64::from(u32::MAX)) as u32,
        service,
        budget,
    };
    // A block's mean that met the objective was enough evidence; in an hour that missed it,
    // the burst inside the block is what the replicas did not absorb.
    let mut burst: Option<Burst> = None;
    let rate: BTreeMap<i64, f64> = hours
        .iter()
        .map(|(k, h)| {
            if !missed.contains_key(k) || h.burst <= h.arrivals {
                return (*k, h.arrivals);
            }
            if burst.is_none_or(|b| h.burst > b.per_second) {
                burst = Some(Burst {
                    starts_at: h.burst_at,
                    seconds: step,
                    per_second: round(h.burst),
                    block_per_second: round(h.arrivals),
                });
            }
            (*k, h.burst)
        })
        .collect();
    let finished: f64 = hours.values().map(|h| h.finished).sum();
    let aborted: f64 = hours.values().map(|h| h.aborted).sum();
    let figures = Arrivals {
        counted,
        per_second: Quantiles::of(&rate.values().copied().collect::<Vec<_>>()),
        block_seconds: h.block as f64,
        burst,
        aborted_share: (counted == Counted::Finished).then(|| round4(aborted / finished.max(1e-9))),
        service_seconds: round4(service),
        slots_per_replica: round(f64::from(model.slots)),
        slots_from: from,
        first_token_seconds: round4(first),
        wait_budget_seconds: budget.map(round4),
    };
    Some((figures, model, rate))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Erlang C against the textbook figures: one server is M/M/1 (waits with probability
    /// ρ); two servers at 1 Erlang wait a third of the time.
    #[test]
    fn erlang_c_is_the_textbook_formula() {
        assert!((erlang_c(1, 0.5) - 0.5).abs() < 1e-12);
        assert!((erlang_c(2, 1.0) - 1.0 / 3.0).abs() < 1e-12);
        // c = 10, a = 8: 0.4092 (standard Erlang C tables)
        assert!(
            (erlang_c(10, 8.0) - 0.4092).abs() < 1e-3,
            "{}",
            erlang_c(10, 8.0)
        );
        assert_eq!(erlang_c(4, 4.0), 1.0);
        assert_eq!(erlang_c(4, 0.0), 0.0);
        // large batches stay finite
        let big = erlang_c(1024, 1000.0);
        assert!(big.is_finite() && big > 0.0 && big < 1.0, "{big}");
    }

    /// A batch is read full from one sample with requests waiting (the window's peaks), not
    /// only from a window whose mean held a queue; without either, from the KV cache each
    /// running request used.
    #[test]
    fn slots_are_the_running_beside_a_queue() {
        let mut s = Serving::default();
        for w in 0..6 {
            let t = w * 600;
            s.running.add(t, 5.0);
            s.waiting.add(t, 0.2);
            s.kv_cache.add(t, 0.25);
            s.kv_engines.add(t, 1.0);
            s.running_peak.add(t, if w == 3 { 8.0 } else { 6.0 });
            s.waiting_peak.add(t, if w == 3 { 2.0 } else { 0.0 });
        }
        let (full, kv, engines) = slots_seen(&[&s]);
        assert_eq!(full, Some(8.0));
        // 0.05 of the cache a request: 18 fill it to 90%
        assert_eq!((kv, engines), (Some(18.0), 1.0));
        s.waiting_peak = Default::default();
        assert_eq!(slots_seen(&[&s]).0, None);
    }

    /// Issue 73 item 4: a KV-bound replica runs as many requests as their prompts fit, 3 to
    /// 5 of 24,000 tokens in a 100,000-token cache; its batch is the typical full one (4),
    /// not the luckiest (5).
    #[test]
    fn a_kv_bound_batch_is_the_typical_full_one() {
        let mut s = Serving::default();
        for (w, running) in [5.0, 4.0, 4.0, 3.0, 4.0, 4.0].into_iter().enumerate() {
            let t = w as i64 * 600;
            s.running.add(t, running);
            s.waiting.add(t, 3.0);
        }
        assert_eq!(slots_seen(&[&s]).0, Some(4.0));
    }

    /// The fewest replicas: each meets, one fewer does not; none for no arrivals.
    #[test]
    fn replicas_are_the_fewest_that_meet_the_target() {
        for (slots, service, budget) in [
            (16, 4.0, Some(0.5)),
            (64, 10.0, Some(2.0)),
            (8, 1.0, None),
            (256, 20.0, Some(0.0)),
        ] {
            let m = Model {
                slots,
                service,
                budget,
            };
            for lambda in [0.01, 0.5, 3.0, 17.0, 240.0] {
                let n = m.replicas(lambda);
                assert!(m.meets(lambda, n), "{slots} {service} {lambda}: {n}");
                assert!(n == 1.0 || !m.meets(lambda, n - 1.0), "{n}");
                assert!(n >= lambda * service / f64::from(slots), "{n}");
            }
            assert_eq!(m.replicas(0.0), 0.0);
        }
    }
}
