//! How often each exporter was scraped, overall, per window and per card, and which windows
//! each covered: what a sample's seconds are.

use std::collections::{BTreeMap, BTreeSet};

use super::columns::{card, col};
use crate::review::query::{Answers, Grid, Row, Q};
use crate::review::timeline::Timeline;

/// The scrape interval of a family of series, from how many samples fall in a window whose
/// neighbours both hold samples too (such a window is covered end to end, so its count is
/// step / interval on average whatever the offsets). Falls back to the typical gap between
/// windows with samples when the interval is longer than the step.
pub(crate) fn interval<'a>(rows: impl Iterator<Item = &'a Row>, step: i64) -> Option<f64> {
    // Over each run of a series (windows with samples, with the gaps between them no longer
    // than twice the typical one: a sample jittered across a boundary, or an interval longer
    // than the step), samples per second: the samples of its inner windows over their span.
    // Only runs of ten windows or more count, weighed by length; a longer gap (a pod gone and
    // back) ends a run instead of stretching it.
    let rows: Vec<&Row> = rows.collect();
    let mut gaps: Vec<u32> = rows
        .iter()
        .flat_map(|r| r.keys().zip(r.keys().skip(1)).map(|(a, b)| b - a))
        .collect();
    gaps.sort_unstable();
    let typical = gaps.get(gaps.len() / 2).copied();
    let allowed = run_gap(typical);
    let (mut samples, mut windows) = (0.0, 0u64);
    for r in rows {
        let keys: Vec<u32> = r.keys().collect();
        let mut start = 0;
        for i in 0..keys.len() {
            let end_of_run = i + 1 == keys.len() || keys[i + 1] - keys[i] > allowed;
            if end_of_run {
                // Its inner windows only: the first and last are partial (a pod that starts
                // or ends inside them).
                let span = u64::from(keys[i] - keys[start]).saturating_sub(1);
                if span >= 8 {
                    samples += r
                        .range(keys[start + 1], keys[i])
                        .map(|(_, v)| v)
                        .sum::<f64>();
                    windows += span;
                }
                start = i + 1;
            }
        }
    }
    if windows > 0 && samples > 0.0 {
        let i = windows as f64 * step as f64 / samples;
        // Scrape intervals are whole seconds; the edges leave a hair of noise.
        return Some(if (i - i.round()).abs() < 0.02 * i {
            i.round()
        } else {
            i
        });
    }
    typical.map(|g| f64::from(g) * step as f64)
}

/// The longest gap (in windows) inside one run of a series: two windows (one left empty by
/// a sample jittered across a boundary), or twice the typical gap where the scrape interval
/// is longer than the step (10-minute scrapes at a 4-minute step leave gaps of 2 and 3).
pub(super) fn run_gap(typical: Option<u32>) -> u32 {
    typical.map_or(2, |g| (2 * g).max(2))
}

/// Seconds each sample stands for, per window, for one source (kube-state-metrics, one
/// card's dcgm-exporter): each window's own neighbourhood of samples, so targets scraped at
/// different intervals and an interval changed mid-window are each counted at their own rate.
///
/// Per window, the series present before and after it (interior: a series that starts or
/// ends inside a window has a partial count there) give samples per window; their
/// mean between changes of rate is the rate. A change is where the mean rates of up to
/// [`RADIUS`] windows before and after a window differ by more than 15%; that window's
/// samples stand for the step (its interior series cover it whole), so a change is never
/// smeared over the windows around it. Windows with no interior data take the
/// nearest window's rate, else the source's overall interval.
pub(crate) struct Intervals {
    /// Seconds a sample stands for, at each window with interior data.
    pub(super) at: Timeline<u32, f64>,
    pub(super) fallback: Option<f64>,
}

/// Windows each side a rate is taken over: a sample jittered across a boundary moves a
/// window's count by one, under 2% of 61 windows' samples.
pub(super) const RADIUS: usize = 30;

/// Scrape intervals people configure: an estimate within 3% of one is that one.
pub(super) const COMMON_INTERVALS: [f64; 14] = [
    1.0, 2.0, 5.0, 10.0, 15.0, 20.0, 30.0, 45.0, 60.0, 90.0, 120.0, 180.0, 300.0, 600.0,
];

/// A local interval estimate, settled: the source's overall interval where it agrees within
/// 5% (no change there, only jitter); else a common scrape interval within 3%; else whole
/// seconds within 2%.
pub(super) fn snap(iv: f64, overall: Option<f64>) -> f64 {
    if let Some(o) = overall.filter(|o| (iv - o).abs() <= 0.05 * o) {
        return o;
    }
    if let Some(c) = COMMON_INTERVALS
        .iter()
        .find(|c| (iv - **c).abs() <= 0.03 * **c)
    {
        return *c;
    }
    if (iv - iv.round()).abs() < 0.02 * iv {
        iv.round()
    } else {
        iv
    }
}

impl Intervals {
    pub(crate) fn of<'a>(
        rows: impl Iterator<Item = &'a Row>,
        step: i64,
        fallback: Option<f64>,
    ) -> Intervals {
        // window -> (interior series, their samples)
        let mut per: BTreeMap<u32, (f64, f64)> = BTreeMap::new();
        let allowed = run_gap(fallback.map(|f| (f / step as f64).ceil() as u32));
        for r in rows {
            // Runs of the series: windows with samples, a single empty window allowed inside
            // (a sample jittered across a boundary, or an interval longer than the step); its
            // inner windows count, empty ones at zero, so a jitter never biases the rate.
            let keys: Vec<u32> = r.keys().collect();
            let mut start = 0;
            for i in 0..keys.len() {
                if i + 1 < keys.len() && keys[i + 1] - keys[i] <= allowed {
                    continue;
                }
                for w in keys[start] + 1..keys[i] {
                    let e = per.entry(w).or_insert((0.0, 0.0));
                    e.0 += 1.0;
                    e.1 += r.get(&w).copied().unwrap_or(0.0);
                }
                start = i + 1;
            }
        }
        let keys: Vec<u32> = per.keys().copied().collect();
        let rate: Vec<f64> = per.values().map(|(n, s)| s / n).collect();
        let n: Vec<f64> = per.values().map(|x| x.0).collect();
        let s_: Vec<f64> = per.values().map(|x| x.1).collect();
        // Prefix sums over the keys: series, samples, rate.
        let prefix = |v: &dyn Fn(usize) -> f64| -> Vec<f64> {
            let mut out = vec![0.0; keys.len() + 1];
            for i in 0..keys.len() {
                out[i + 1] = out[i] + v(i);
            }
            out
        };
        let (pn, ps, pr) = (prefix(&|i| n[i]), prefix(&|i| s_[i]), prefix(&|i| rate[i]));
        let len = keys.len();
        // Where the rate changes: the mean rate of up to RADIUS windows before and after a
        // window differ by more than 15%, most there of its neighbourhood.
        let mean = |a: usize, b: usize| (pr[b] - pr[a]) / (b - a).max(1) as f64;
        let jump: Vec<f64> = (0..len)
            .map(|i| {
                let (lo, hi) = (i.saturating_sub(RADIUS), (i + 1 + RADIUS).min(len));
                if i - lo < 3 || hi - i - 1 < 3 {
                    return 0.0;
                }
                let (l, r) = (mean(lo, i), mean(i + 1, hi));
                (l - r).abs() / l.max(r).max(1e-9)
            })
            .collect();
        let change: Vec<bool> = (0..len)
            .map(|i| {
                let (lo, hi) = (i.saturating_sub(RADIUS), (i + 1 + RADIUS).min(len));
                jump[i] > 0.15
                    && (lo..hi).all(|j| jump[j] < jump[i] || (jump[j] == jump[i] && j >= i))
            })
            .collect();
        // Between changes the rate is one: the segment's samples over its series-windows. A
        // window of change is its own (its interior series cover it whole).
        let stepf = step as f64;
        let mut at = vec![fallback.unwrap_or(stepf); len];
        let mut start = 0;
        for i in 0..=len {
            if i < len && !change[i] {
                continue;
            }
            if i > start {
                let per_window = (ps[i] - ps[start]) / (pn[i] - pn[start]).max(1e-9);
                if per_window > 0.0 {
                    let iv = snap(stepf / per_window, fallback);
                    at[start..i].fill(iv);
                }
            }
            if i < len {
                if rate[i] > 0.0 {
                    at[i] = stepf / rate[i];
                } else if i > start {
                    at[i] = at[i - 1];
                }
            }
            start = i + 1;
        }
        Intervals {
            at: keys.into_iter().zip(at).collect(),
            fallback,
        }
    }

    /// Seconds a sample in window `k` stands for.
    pub(crate) fn at(&self, k: u32) -> Option<f64> {
        // The nearest window with a rate; the earlier on a tie.
        let near = [self.at.lower(k), self.at.ceil(k)]
            .into_iter()
            .flatten()
            .min_by_key(|(j, _)| j.abs_diff(k));
        match near {
            Some((j, at)) if j.abs_diff(k) <= 3 * RADIUS as u32 => Some(*at),
            _ => self.fallback,
        }
    }
}

/// Covered windows of a source scraped every `interval` seconds: a window left empty by a
/// scrape jittered across its boundary is covered; a gap longer than a scrape interval is not.
pub(super) fn fill_jitter(covered: &mut BTreeSet<u32>, interval: Option<f64>, step: f64) {
    let reach = interval.map_or(1, |i| (i / step).ceil() as u32 + 1);
    let filled: Vec<u32> = covered
        .iter()
        .zip(covered.iter().skip(1))
        .filter(|(a, b)| *b - *a > 1 && *b - *a <= reach)
        .flat_map(|(a, b)| a + 1..*b)
        .collect();
    covered.extend(filled);
}

/// Seconds a window's samples stand for: count x the source's interval at that window (the
/// step where the interval is unknown). Not capped at the window: a sample jittered across a
/// boundary leaves one window with one too many and its neighbour one too few, and the total
/// stays exact.
pub(super) fn seconds_of(stepf: f64) -> impl Fn(f64, Option<f64>) -> f64 {
    move |count, iv| count * iv.unwrap_or(stepf)
}

/// How often kube-state-metrics and dcgm-exporter were scraped, overall and per window, and
/// each card's scrape counts.
pub(super) struct Scrapes {
    pub(super) ksm: Option<f64>,
    /// Each interval kube-state-metrics was scraped at, over time.
    pub(super) ksm_intervals: Vec<f64>,
    pub(super) ksm_at: Intervals,
    pub(super) has_phase: bool,
    /// A card's scrape counts per window, by host, card and `vgpu` copy.
    pub(super) cards: BTreeMap<Vec<String>, Row>,
    pub(super) dcgm: Option<f64>,
    pub(super) dcgm_intervals: Vec<f64>,
    pub(super) card_at: BTreeMap<Vec<String>, Intervals>,
}

/// Windows a stretch of one series spans when its interval is read on its own: enough inner
/// windows for [`interval`] to read (it needs ten), few enough that a change shows.
const STRETCH: usize = 12;

/// Each whole-second interval the series were scraped at, read stretch by stretch: a series
/// whose interval changed gives both, a stretch across the change (a blend no scrape had)
/// is dropped for not being whole or for standing alone. Sorted, distinct.
fn used<'a>(rows: impl Iterator<Item = &'a Row>, step: i64) -> Vec<f64> {
    let rows: Vec<&Row> = rows.collect();
    let mut out: Vec<f64> = Vec::new();
    for r in &rows {
        // Within one series: an interval two of its stretches agree on.
        let mut seen: BTreeMap<u64, usize> = BTreeMap::new();
        let keys: Vec<u32> = r.keys().collect();
        for chunk in keys.chunks(STRETCH) {
            let part: Row = chunk
                .iter()
                .map(|k| (*k, r.get(k).copied().unwrap_or(0.0)))
                .collect();
            if let Some(i) = interval(std::iter::once(&part), step) {
                if (i - i.round()).abs() < 1e-9 {
                    *seen.entry(i.round().to_bits()).or_default() += 1;
                }
            }
        }
        out.extend(
            seen.iter()
                .filter(|(_, n)| **n >= 2)
                .map(|(b, _)| f64::from_bits(*b)),
        );
    }
    if out.is_empty() {
        // Series too short for stretches: each one's own interval.
        out = rows
            .iter()
            .filter_map(|r| interval(std::iter::once(*r), step))
            .filter(|i| (i - i.round()).abs() < 1e-9)
            .collect();
    }
    out.sort_by(f64::total_cmp);
    out.dedup();
    out
}

pub(super) fn scrapes(a: &Answers, step: i64) -> Scrapes {
    // A format that fixes its sample interval says it; only the data's own runs are guessed.
    let ksm = a.sample_every.or_else(|| {
        interval(
            a.get(Q::Scraped)
                .map(|(_, r)| r)
                .chain(a.get(Q::NodeScraped).map(|(_, r)| r)),
            step,
        )
    });
    let ksm_at = Intervals::of(
        a.get(Q::Scraped)
            .map(|(_, r)| r)
            .chain(a.get(Q::NodeScraped).map(|(_, r)| r)),
        step,
        ksm,
    );
    let ksm_intervals = used(
        a.get(Q::Scraped)
            .map(|(_, r)| r)
            .chain(a.get(Q::NodeScraped).map(|(_, r)| r)),
        step,
    );
    let has_phase = a.get(Q::Scraped).next().is_some();
    // A GPU reports all along, whichever pod holds it: its rows, summed across pods (not
    // across `vgpu` copies), are long even where each pod's is short (a six-minute job).
    // A row that names neither host nor card (a hand-made export) may be several cards.
    let mut cards: BTreeMap<Vec<String>, Row> = BTreeMap::new();
    for (g, r) in a.get(Q::DeviceScrapes) {
        let Some(mut card) = card(Q::DeviceScrapes, g) else {
            continue;
        };
        // Pods one after another on a card add up; `vgpu` copies stay apart.
        card.push(g[col(Q::DeviceScrapes, "vgpu")].clone());
        let e = cards.entry(card).or_default();
        for (k, c) in r {
            e.add(k, *c);
        }
    }
    let dcgm = a
        .sample_every
        .or_else(|| interval(cards.values(), step))
        .or_else(|| {
            interval(
                a.get(Q::ActiveCount)
                    .map(|(_, r)| r)
                    .chain(a.get(Q::UtilCount).map(|(_, r)| r)),
                step,
            )
        });

    // The intervals the exporters were scraped at, each card's own and each stretch of it
    // (whole seconds): targets scraped at 15 s and 30 s, or one target moved from 30 s to
    // 15 s, are both said, not averaged into a 28 s no target had.
    let dcgm_intervals = used(cards.values(), step);
    // Each card's own interval in time (targets scraped at different intervals); a card
    // without enough samples of its own takes the exporters' overall one.
    let mut card_at: BTreeMap<Vec<String>, Intervals> = BTreeMap::new();
    for (card, r) in &cards {
        let key = card[..card.len() - 1].to_vec();
        card_at
            .entry(key)
            .or_insert_with(|| Intervals::of(std::iter::once(r), step, dcgm));
    }
    Scrapes {
        ksm,
        ksm_intervals,
        ksm_at,
        has_phase,
        cards,
        dcgm,
        dcgm_intervals,
        card_at,
    }
}

/// The windows holding any kube-state-metrics data (jitter filled), and those with samples.
pub(super) fn ksm_coverage(
    a: &Answers,
    grid: Grid,
    ksm: Option<f64>,
) -> (BTreeSet<u32>, BTreeSet<i64>) {
    let stepf = grid.step as f64;
    let mut covered: BTreeSet<u32> = a.idle_samples.clone();
    for q in [Q::Scraped, Q::NodeScraped, Q::Requests] {
        for (_, w) in a.get(q) {
            covered.extend(w.keys());
        }
    }
    let sampled: BTreeSet<i64> = covered.iter().map(|k| grid.start(*k)).collect();
    fill_jitter(&mut covered, ksm, stepf);
    (covered, sampled)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals_come_from_whole_windows_whatever_the_offset() {
        // 30 s scrapes at +7.1 s in 60 s windows: two per window
        let r: Row = (0..10).map(|k| (k, 2.0)).collect();
        assert_eq!(interval([&r].into_iter(), 60), Some(30.0));
        // 45 s into 60 s windows: 1, 2, 1, 1, 2, 1 ...
        let r: Row = (0..12)
            .map(|k| (k, if k % 3 == 1 { 2.0 } else { 1.0 }))
            .collect();
        let i = interval([&r].into_iter(), 60).expect("interval");
        assert!((i - 45.0).abs() < 3.0, "{i}");
        // 120 s scrapes into 60 s windows: every other window (edge windows cost a sample)
        let r: Row = (0..100).map(|k| (k * 2, 1.0)).collect();
        let i = interval([&r].into_iter(), 60).expect("interval");
        assert!((i - 120.0).abs() < 2.0, "{i}");
    }
}
