//! A piece of a query the store would not answer whole: asked again, or in halves, and what
//! to ask instead when even the smallest piece is refused.

use std::time::Duration;

use super::{Attempt, Client, Job};
use crate::review::query::{Answers, Grid};
use crate::review::ReviewError;

/// Whether a 422's message is a size limit: Prometheus's `--query.max-samples` ("too many
/// samples") and resolution ("exceeded maximum resolution"), VictoriaMetrics'
/// `-search.maxPointsPerTimeseries` and `-search.maxSamplesPerQuery`, Thanos' and Mimir's
/// limits ("exceeded", "limit"). Anything else (two series with one labelset, a bad query)
/// is not helped by asking less.
pub(super) fn size_limit(detail: &str) -> bool {
    let d = detail.to_ascii_lowercase();
    [
        "too many",
        "exceed",
        "limit",
        "maxpoints",
        "maxsamples",
        "max-samples",
        "resolution",
    ]
    .iter()
    .any(|w| d.contains(w))
}

/// How many times a refused piece is halved before the review gives up on it: a week-long
/// piece comes down to under three hours.
const MAX_HALVINGS: u32 = 6;

impl Client {
    /// [`Client::run`], and where the store refuses a piece for its size, its two halves in
    /// turn, down to [`MAX_HALVINGS`] halvings; past that, what to ask instead.
    pub(super) fn run_split(
        &self,
        job: &Job<'_>,
        grid: Grid,
        out: &mut Answers,
        depth: u32,
    ) -> Result<(), ReviewError> {
        // Longer than the store has answered in time since a request ran out of it: asked
        // in halves at once.
        let n = job.windows();
        if n > self.fits.load(std::sync::atomic::Ordering::Relaxed) && depth < MAX_HALVINGS {
            return self.halves(job, grid, out, depth);
        }
        match self.run(job, grid, out) {
            Ok(()) => Ok(()),
            Err(Attempt::Failed(e)) => Err(e),
            Err(Attempt::TooBig(_)) if job.last > job.first && depth < MAX_HALVINGS => {
                self.halves(job, grid, out, depth)
            }
            // Asked again once as it was: stores cache work (VictoriaMetrics' rollup cache,
            // Thanos' and Mimir's query frontends), so the same request is often fast the
            // second time where new halves would not be. Then in halves, and no later request
            // is asked for as long a stretch.
            Err(Attempt::TooSlow(_)) => {
                self.say(&format!(
                    "the store did not answer {} over {n} step(s) within --timeout {} s; asking the same again (stores cache work), then in halves",
                    job.query.metrics[0],
                    self.timeout.as_secs()
                ));
                self.retried(job, grid, out, depth)
            }
            Err(Attempt::TooBig(why)) => Err(self.gave_up(job, grid, &why)),
        }
    }

    /// A request that ran out of time, asked again as it was, then in halves.
    fn retried(
        &self,
        job: &Job<'_>,
        grid: Grid,
        out: &mut Answers,
        depth: u32,
    ) -> Result<(), ReviewError> {
        let halve = |size: bool| {
            // Too slow twice: halved once, since a store too slow for half a piece twice is
            // too slow for this review and is told what to ask instead rather than waited out
            // again. Refused for its size: halved at any depth, as a piece refused for its
            // size at once is (a store both slow and tight stopped at the first halving,
            // issue 75).
            job.last > job.first && (depth == 0 || (size && depth < MAX_HALVINGS))
        };
        match self.run(job, grid, out) {
            Ok(()) => Ok(()),
            Err(Attempt::Failed(e)) => Err(e),
            Err(a @ (Attempt::TooBig(_) | Attempt::TooSlow(_)))
                if halve(matches!(a, Attempt::TooBig(_))) =>
            {
                let n = job.windows();
                self.fits
                    .fetch_min(n / 2, std::sync::atomic::Ordering::Relaxed);
                self.halves(job, grid, out, depth)
            }
            Err(Attempt::TooBig(w) | Attempt::TooSlow(w)) => Err(self.gave_up(job, grid, &w)),
        }
    }

    /// A startup probe, said when it ran out of `--timeout` (the review goes on without it):
    /// a slow store is never waited on in silence.
    pub(super) fn probe<T>(&self, what: &str, f: impl FnOnce() -> T) -> T {
        let t = std::time::Instant::now();
        let out = f();
        if t.elapsed() + Duration::from_millis(200) >= self.timeout {
            self.say(&format!(
                "the store took --timeout {} s to answer {what}; going on without it",
                self.timeout.as_secs()
            ));
        }
        out
    }

    fn say(&self, text: &str) {
        if let Some(f) = &self.notice {
            f(text);
        }
    }

    /// What a piece refused down to its smallest tells the user to do: the advice that can
    /// help for the limit that was hit.
    fn gave_up(&self, job: &Job<'_>, grid: Grid, why: &str) -> ReviewError {
        let n = job.windows();
        let series = why.contains("maxSamplesPerQuery") || why.contains("max-samples");
        let advice = if series {
            // A sample limit counts the raw samples a query reads: a coarser step reads the
            // same samples, a shorter window or a higher limit reads fewer or allows more.
            "a shorter window (`--window`), or raise the store's sample limit (VictoriaMetrics `-search.maxSamplesPerQuery`, Prometheus `--query.max-samples`)".to_owned()
        } else {
            format!(
                "ask less at once with a coarser `--step` (e.g. `--step {}s`), a longer `--timeout SECONDS`, or raise the store's limit",
                grid.step * 4
            )
        };
        ReviewError::Prometheus(format!(
            "{why}; gpuplan asked for it in pieces down to {n} step(s) of {} s and the store still refused: {advice}",
            grid.step
        ))
    }

    /// The two halves of `job`, one after the other.
    fn halves(
        &self,
        job: &Job<'_>,
        grid: Grid,
        out: &mut Answers,
        depth: u32,
    ) -> Result<(), ReviewError> {
        let mid = job.first + (job.last - job.first) / 2;
        let left = Job {
            last: mid,
            ..job.clone()
        };
        let right = Job {
            first: mid + 1,
            ..job.clone()
        };
        self.run_split(&left, grid, out, depth + 1)?;
        self.run_split(&right, grid, out, depth + 1)
    }
}
