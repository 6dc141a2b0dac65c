//! The figures a workload's proposal rests on, as data (`report::forecast` words them; the
//! JSON's `figures` and the next plan's comment on a changed count are those words).

use crate::review::numbers::Quantiles;
use crate::review::serving::{Arrivals, ServingRow, ServingSignal, KV_FULL};

/// What a proposal was sized from.
#[derive(Debug, Clone, PartialEq)]
pub struct Grounds {
    /// The serving metrics that sized it, for an inference workload whose pods export them.
    pub serving: Option<ServingGrounds>,
    /// Replicas held over its running hours, and GPUs held at their p95.
    pub replicas: Quantiles,
    pub gpus_p95: f64,
    pub covered_days: f64,
    pub level: Level,
    /// Whether `level` is of the replicas serving metrics said each hour needed (the
    /// projection that sized it), rather than of the replicas held.
    pub of_needed: bool,
    pub sized: SizedBy,
    /// The share of held time its GPUs were busy, when measured.
    pub busy: Option<f64>,
    /// The share of covered time it ran, when its hours a month change.
    pub ran: Option<f64>,
    /// Its `replicas.max`, when it held it at p95 (an autoscaler at its ceiling hides demand).
    pub capped_at: Option<i64>,
    /// Its pods crash-looped while holding GPUs, so it is not sized down on its idleness.
    pub crashing: bool,
}

/// Where its daily peaks of replicas go.
#[derive(Debug, Clone, PartialEq)]
pub enum Level {
    /// A significant decline: held at today's fitted level, never extrapolated lower.
    Declining { slope: f64, r2: f64, band: Band },
    /// A significant rise, projected to the quarter's end.
    Rising {
        slope: f64,
        r2: f64,
        quarter: String,
        band: Band,
    },
    /// A fitted line without a significant slope: the peak as seen.
    NoTrend { slope: f64, r2: f64, peak: f64 },
    /// Too few days to fit: the peak as seen.
    AsSeen { peak: f64 },
}

/// A projection's central figure and its 95% band.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Band {
    pub center: f64,
    pub low: f64,
    pub high: f64,
}

/// How the count was sized from the level.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SizedBy {
    /// Consolidated to `target` busy per replica (GPUs busy p95 `busy95`), plus headroom.
    Consolidated {
        target: f64,
        busy95: f64,
        headroom: f64,
    },
    /// By serving metrics: their own figures say how.
    Serving,
    /// Busy below the idle threshold: never grown.
    NeverGrown,
    /// The level plus headroom.
    Headroom(f64),
}

/// The serving metrics an inference workload was sized by.
#[derive(Debug, Clone, PartialEq)]
pub struct ServingGrounds {
    pub signal: Signal,
    /// What one replica carried, when an hour met the objective; `None` when none did.
    pub carried: Option<Carried>,
    /// The arrivals and queueing figures that sized it, where the servers exported their
    /// finished requests (then `carried` decided nothing).
    pub queued: Option<Queued>,
    /// The projected peak of replicas needed, and the headroom added.
    pub peak: f64,
    pub headroom: f64,
    /// The most replicas that ran in an hour that missed the objective: the floor.
    pub ran_when_missed: Option<f64>,
    /// Replicas that held its GPUs without exporting serving series, at most at once.
    pub unscraped: Option<f64>,
}

/// The serving signal that decided.
#[derive(Debug, Clone, PartialEq)]
pub enum Signal {
    /// Time to first token against its objective, missed in `missed` of `hours` hours.
    Ttft {
        p95: Option<f64>,
        objective: f64,
        missed: usize,
        hours: usize,
    },
    /// Requests waiting and the KV cache, against no queue and the cache under `kv_full`.
    Queue {
        waiting_p95: f64,
        kv_p95: Option<f64>,
        kv_full: f64,
    },
}

/// What the arrivals needed by queueing arithmetic.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Queued {
    pub figures: Arrivals,
    pub needed: Quantiles,
}

/// What one replica carried within the objective, and the replicas that makes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Carried {
    pub per_replica: f64,
    pub in_flight_p95: f64,
    pub needed: Quantiles,
}

impl ServingGrounds {
    pub(super) fn of(r: &ServingRow, peak: f64, headroom: f64) -> ServingGrounds {
        let signal = match (r.decided_by, r.ttft_objective_seconds) {
            (ServingSignal::TimeToFirstToken, Some(objective)) => Signal::Ttft {
                p95: r.ttft_p95_seconds,
                objective,
                missed: r.hours_over_objective.unwrap_or(0),
                hours: r.hours_with_ttft,
            },
            _ => Signal::Queue {
                waiting_p95: r.waiting.p95,
                kv_p95: r.kv_cache.map(|k| k.p95),
                kv_full: KV_FULL,
            },
        };
        let carried = match (r.concurrency_per_replica, r.needed_replicas) {
            (Some(per_replica), Some(needed)) => Some(Carried {
                per_replica,
                in_flight_p95: r.concurrency.p95,
                needed,
            }),
            _ => None,
        };
        let queued = match (r.arrivals, r.needed_replicas) {
            (Some(figures), Some(needed)) => Some(Queued { figures, needed }),
            _ => None,
        };
        ServingGrounds {
            signal,
            carried,
            queued,
            peak,
            headroom,
            ran_when_missed: r.ran_when_missed,
            unscraped: r.unscraped_replicas,
        }
    }
}
