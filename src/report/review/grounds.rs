//! The words of the figures a forecast's proposal rests on, in one line (`review::forecast`
//! holds them as data; the JSON's `figures` and the next plan's comment are these).

use std::fmt;

use crate::core::num;
use crate::review::forecast::grounds::{
    Band, Grounds, Level, Queued, ServingGrounds, Signal, SizedBy,
};
use crate::review::serving::{Counted, SlotsFrom, QUEUE_FREE};

impl fmt::Display for Grounds {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(s) = &self.serving {
            write!(f, "{s}; ")?;
        }
        let r = &self.replicas;
        write!(
            f,
            "replicas held p10 {} / p50 {} / p95 {} / max {} ({} GPUs at p95) over {:.0} day(s); {}{}{}; ",
            num(r.p10),
            num(r.p50),
            num(r.p95),
            num(r.max),
            num(self.gpus_p95),
            self.covered_days,
            if self.of_needed {
                "replicas needed: "
            } else {
                ""
            },
            self.level,
            self.sized,
        )?;
        match self.busy {
            Some(e) => write!(f, "busy {:.0}% of held time", e * 100.0)?,
            None => f.write_str("busy unknown")?,
        }
        if let Some(share) = self.ran {
            write!(f, "; ran {:.0}% of covered time", share * 100.0)?;
        }
        if let Some(max) = self.capped_at {
            write!(
                f,
                "; held its replicas.max {max} at p95: demand may be higher than seen"
            )?;
        }
        if self.crashing {
            f.write_str(
                "; pods crash-looped while holding GPUs, so it is not sized down on this idleness",
            )?;
        }
        Ok(())
    }
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Level::Declining { slope, r2, band } => write!(
                f,
                "daily peaks {slope:+.3}/day (R\u{b2} {r2:.2}): declining, so held at today's fitted level {:.1} (95% band {:.1}-{:.1}), never extrapolated lower",
                band.center, band.low, band.high
            ),
            Level::Rising {
                slope,
                r2,
                quarter,
                band: Band { center, low, high },
            } => write!(
                f,
                "daily peaks {slope:+.3}/day (R\u{b2} {r2:.2}) give {center:.1} by {quarter} (95% band {low:.1}-{high:.1})"
            ),
            Level::NoTrend { slope, r2, peak } => write!(
                f,
                "no significant trend ({slope:+.3}/day, R\u{b2} {r2:.2}): peak {peak:.1} as seen"
            ),
            Level::AsSeen { peak } => write!(f, "peak {peak:.1} as seen"),
        }
    }
}

impl fmt::Display for SizedBy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SizedBy::Consolidated {
                target,
                busy95,
                headroom,
            } => write!(
                f,
                "; consolidated to {:.0}% busy per replica (p95 of GPUs busy {busy95:.2}), +{:.0}% headroom",
                target * 100.0,
                headroom * 100.0
            ),
            // The serving figures before it say how.
            SizedBy::Serving => Ok(()),
            SizedBy::NeverGrown => f.write_str("; busy below the idle threshold, so never grown"),
            SizedBy::Headroom(h) => write!(f, ", +{:.0}% headroom", h * 100.0),
        }
    }
}

impl fmt::Display for ServingGrounds {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.signal {
            Signal::Ttft {
                p95,
                objective,
                missed,
                hours,
            } => write!(
                f,
                "sized by serving metrics: TTFT p95 {} s against the objective {} s (missed in {missed} of {hours} hours)",
                p95.map_or("-".to_owned(), |v| format!("{v:.2}")),
                num(*objective),
            )?,
            Signal::Queue {
                waiting_p95,
                kv_p95,
                kv_full,
            } => write!(
                f,
                "sized by serving metrics: requests waiting (p95 {}) and KV cache (p95 {}) against no queue and under {:.0}% full",
                num(*waiting_p95),
                kv_p95.map_or("not exported".to_owned(), |k| format!("{:.0}%", k * 100.0)),
                kv_full * 100.0
            )?,
        }
        let mut floor = self.ran_when_missed.map_or(String::new(), |n| {
            format!(
                "; never below the {} replicas that ran in an hour that missed it",
                num(n)
            )
        });
        if let Some(n) = self.unscraped {
            floor.push_str(&format!(
                "; up to {} of its replicas held GPUs without exporting serving series: each read as carrying what the exporting ones did on average",
                num(n)
            ));
        }
        if let Some(q) = &self.queued {
            return write!(
                f,
                "; {q}; with {:.0}% more arrivals as headroom, {} at the busiest projected{floor}; GPU activity not used",
                self.headroom * 100.0,
                num(self.peak.ceil()),
            );
        }
        match &self.carried {
            Some(c) => write!(
                f,
                "; a replica carried up to {} requests in flight within it, so the {} p95 in flight need {} replicas at p95 and {} at most (peak {:.1} projected), +{:.0}% headroom{floor}; GPU activity not used",
                num(c.per_replica),
                num(c.in_flight_p95),
                num(c.needed.p95),
                num(c.needed.max),
                self.peak,
                self.headroom * 100.0
            ),
            None => f.write_str(
                "; no hour met it, so one replica's capacity is unknown and the replicas that ran were too few: never sized down, raise replicas.max until hours meet it",
            ),
        }
    }
}

/// The queueing arithmetic that sized a service from its arrivals.
impl fmt::Display for Queued {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let a = &self.figures;
        let slots = match a.slots_from {
            SlotsFrom::SeenFull => "what a replica typically ran while requests waited",
            SlotsFrom::MaxNumSeqs => {
                "the plan's max_num_seqs, or what the KV cache holds where fewer"
            }
            SlotsFrom::KvCache => "the requests that fill its KV cache to 90%",
            SlotsFrom::VllmDefault => "vLLM's default max_num_seqs: nothing else told it",
        };
        let counted = match a.counted {
            Counted::Finished => format!(
                "{:.1}% abandoned, counted as arrived",
                a.aborted_share.unwrap_or(0.0) * 100.0
            ),
            Counted::FinishedWithoutAborts => "at least: these servers count no abandoned request (no finished_reason=\"abort\" series, as vLLM V0 exports), so clients that gave up while waiting are unseen".to_owned(),
            Counted::FirstTokens => "counted from first tokens: no finished-request counter, so clients that gave up first are unseen".to_owned(),
        };
        write!(
            f,
            "arrivals {}/s in the busiest {}-minute block of any hour, {}/s at p95 of the hours' busiest blocks ({counted}), each running {} s in one of {} batch slots per replica ({slots}), first token {} s without a queue: by Erlang C per replica, ",
            num(a.per_second.max),
            num(a.block_seconds / 60.0),
            num(a.per_second.p95),
            num(a.service_seconds),
            num(a.slots_per_replica),
            num(a.first_token_seconds),
        )?;
        match a.wait_budget_seconds {
            Some(w) if w > 0.0 => write!(f, "waits over {} s for at most 5% of requests", num(w))?,
            Some(_) => f.write_str(
                "the first token alone spends the objective, so at most 5% of requests wait",
            )?,
            None => write!(
                f,
                "under {} requests waiting per replica on average",
                num(QUEUE_FREE)
            )?,
        }
        if let Some(b) = a.burst {
            let at = crate::review::telemetry::format_time(b.starts_at);
            write!(
                f,
                "; an hour that missed it is sized on its busiest {}-second window, the busiest from {at} at {}/s (its block averaged {}/s),",
                num(b.seconds),
                num(b.per_second),
                num(b.block_per_second),
            )?;
        }
        write!(
            f,
            " needs {} replicas at the busiest hour and {} at p95",
            num(self.needed.max),
            num(self.needed.p95)
        )
    }
}

/// Why nothing is proposed for next quarter.
impl fmt::Display for crate::review::forecast::Withheld {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Cut, never rounded up: 6.996 days is not "7.0" when 7 are needed.
        let days = (self.covered_days * 10.0).floor() / 10.0;
        write!(
            f,
            "the data covers {days:.1} day(s) ({:.1} h); sizing next quarter needs at least {} covered days",
            self.covered_days * 24.0,
            self.min_days
        )
    }
}

crate::core::serialize_as_text!(Grounds, crate::review::forecast::Withheld);

#[cfg(test)]
mod tests {
    //! Each wording as the forecast wrote it before its figures became data (the old format
    //! strings with the figures put in).
    use super::*;
    use crate::review::forecast::grounds::Carried;
    use crate::review::numbers::Quantiles;

    fn q(p10: f64, p50: f64, p95: f64, max: f64) -> Quantiles {
        Quantiles { p10, p50, p95, max }
    }

    fn grounds(level: Level, sized: SizedBy) -> Grounds {
        Grounds {
            of_needed: false,
            serving: None,
            replicas: q(2.0, 3.0, 5.5, 6.0),
            gpus_p95: 11.0,
            covered_days: 28.4,
            level,
            sized,
            busy: Some(0.314),
            ran: None,
            capped_at: None,
            crashing: false,
        }
    }

    const BAND: Band = Band {
        center: 7.26,
        low: 5.04,
        high: 9.5,
    };

    #[test]
    fn a_window_short_of_the_days_needed_never_reads_as_enough() {
        let w = crate::review::forecast::Withheld {
            covered_days: 167.9 / 24.0,
            min_days: 7.0,
        };
        assert_eq!(
            w.to_string(),
            "the data covers 6.9 day(s) (167.9 h); sizing next quarter needs at least 7 covered days"
        );
    }

    #[test]
    fn each_level_and_sizing_reads_as_before() {
        let head =
            "replicas held p10 2 / p50 3 / p95 5.5 / max 6 (11 GPUs at p95) over 28 day(s); ";
        let cases = [
            (
                grounds(
                    Level::Rising { slope: 0.1234, r2: 0.876, quarter: "2027-Q1".into(), band: BAND },
                    SizedBy::Headroom(0.15),
                ),
                "daily peaks +0.123/day (R\u{b2} 0.88) give 7.3 by 2027-Q1 (95% band 5.0-9.5), +15% headroom; busy 31% of held time",
            ),
            (
                grounds(
                    Level::Declining { slope: -0.05, r2: 0.5, band: BAND },
                    SizedBy::NeverGrown,
                ),
                "daily peaks -0.050/day (R\u{b2} 0.50): declining, so held at today's fitted level 7.3 (95% band 5.0-9.5), never extrapolated lower; busy below the idle threshold, so never grown; busy 31% of held time",
            ),
            (
                grounds(
                    Level::NoTrend { slope: 0.001, r2: 0.02, peak: 6.0 },
                    SizedBy::Consolidated { target: 0.7, busy95: 1.234, headroom: 0.15 },
                ),
                "no significant trend (+0.001/day, R\u{b2} 0.02): peak 6.0 as seen; consolidated to 70% busy per replica (p95 of GPUs busy 1.23), +15% headroom; busy 31% of held time",
            ),
            (
                Grounds {
                    busy: None,
                    ran: Some(0.25),
                    capped_at: Some(6),
                    crashing: true,
                    ..grounds(Level::AsSeen { peak: 6.0 }, SizedBy::Serving)
                },
                "peak 6.0 as seen; busy unknown; ran 25% of covered time; held its replicas.max 6 at p95: demand may be higher than seen; pods crash-looped while holding GPUs, so it is not sized down on this idleness",
            ),
        ];
        for (g, tail) in cases {
            assert_eq!(g.to_string(), format!("{head}{tail}"));
        }
    }

    #[test]
    fn serving_figures_read_as_before() {
        let ttft = ServingGrounds {
            signal: Signal::Ttft {
                p95: Some(1.754),
                objective: 1.0,
                missed: 96,
                hours: 192,
            },
            carried: Some(Carried {
                per_replica: 10.0,
                in_flight_p95: 144.0,
                needed: q(8.0, 9.0, 15.0, 15.0),
            }),
            queued: None,
            peak: 15.0,
            headroom: 0.15,
            ran_when_missed: None,
            unscraped: None,
        };
        assert_eq!(
            ttft.to_string(),
            "sized by serving metrics: TTFT p95 1.75 s against the objective 1 s (missed in 96 of 192 hours); a replica carried up to 10 requests in flight within it, so the 144 p95 in flight need 15 replicas at p95 and 15 at most (peak 15.0 projected), +15% headroom; GPU activity not used"
        );
        let queue = ServingGrounds {
            signal: Signal::Queue {
                waiting_p95: 3.0,
                kv_p95: None,
                kv_full: 0.9,
            },
            carried: None,
            queued: None,
            peak: 0.0,
            headroom: 0.15,
            ran_when_missed: None,
            unscraped: None,
        };
        assert_eq!(
            queue.to_string(),
            "sized by serving metrics: requests waiting (p95 3) and KV cache (p95 not exported) against no queue and under 90% full; no hour met it, so one replica's capacity is unknown and the replicas that ran were too few: never sized down, raise replicas.max until hours meet it"
        );
        let with = Grounds {
            serving: Some(queue),
            ..grounds(Level::AsSeen { peak: 1.0 }, SizedBy::Serving)
        };
        assert!(with
            .to_string()
            .starts_with("sized by serving metrics: requests waiting"));
        assert!(with
            .to_string()
            .contains("hours meet it; replicas held p10 2"));
    }
}
