//! The statistics of a forecast: per-window series as hourly means and daily peaks, a
//! least-squares line through the peaks with Student's t for its significance and its 95%
//! prediction band, a projection to a horizon, and the quarter a date plans for.

use std::collections::BTreeMap;

use super::telemetry::{PodSeries, Telemetry};
use crate::core::Date;

/// A least-squares line through (day, value) points.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fit {
    pub n: usize,
    pub slope: f64,
    pub intercept: f64,
    pub r2: f64,
    /// Residual standard deviation (n - 2 degrees of freedom).
    pub sd: f64,
    x_mean: f64,
    sxx: f64,
}

/// Student's t at 97.5% (a two-sided 95% band) for `df` degrees of freedom, interpolated in
/// 1/df between tabulated values.
pub(crate) fn t975(df: usize) -> f64 {
    const T: [(f64, f64); 16] = [
        (1.0, 12.706),
        (2.0, 4.303),
        (3.0, 3.182),
        (4.0, 2.776),
        (5.0, 2.571),
        (6.0, 2.447),
        (7.0, 2.365),
        (8.0, 2.306),
        (10.0, 2.228),
        (12.0, 2.179),
        (15.0, 2.131),
        (20.0, 2.086),
        (30.0, 2.042),
        (60.0, 2.000),
        (120.0, 1.980),
        (f64::INFINITY, 1.960),
    ];
    let d = (df.max(1)) as f64;
    for pair in T.windows(2) {
        let ((d0, t0), (d1, t1)) = (pair[0], pair[1]);
        if d <= d1 {
            let (u0, u1, u) = (1.0 / d0, 1.0 / d1, 1.0 / d);
            return t0 + (t1 - t0) * (u0 - u) / (u0 - u1);
        }
    }
    1.960
}

impl Fit {
    /// The line through `pts`; `None` with fewer than three points or one x.
    pub fn new(pts: &[(f64, f64)]) -> Option<Fit> {
        let n = pts.len();
        if n < 3 {
            return None;
        }
        let nf = n as f64;
        let x_mean = pts.iter().map(|p| p.0).sum::<f64>() / nf;
        let y_mean = pts.iter().map(|p| p.1).sum::<f64>() / nf;
        let sxx: f64 = pts.iter().map(|p| (p.0 - x_mean).powi(2)).sum();
        let sxy: f64 = pts.iter().map(|p| (p.0 - x_mean) * (p.1 - y_mean)).sum();
        let syy: f64 = pts.iter().map(|p| (p.1 - y_mean).powi(2)).sum();
        if sxx <= 0.0 {
            return None;
        }
        let slope = sxy / sxx;
        let intercept = y_mean - slope * x_mean;
        let sse: f64 = pts
            .iter()
            .map(|p| (p.1 - intercept - slope * p.0).powi(2))
            .sum();
        Some(Fit {
            n,
            slope,
            intercept,
            r2: if syy > 0.0 { 1.0 - sse / syy } else { 1.0 },
            sd: (sse / (nf - 2.0)).max(0.0).sqrt(),
            x_mean,
            sxx,
        })
    }

    pub fn at(&self, x: f64) -> f64 {
        self.intercept + self.slope * x
    }

    /// Half-width of the 95% prediction band for one new day at `x`.
    pub fn half_band(&self, x: f64) -> f64 {
        let n = self.n as f64;
        t975(self.n - 2) * self.sd * (1.0 + 1.0 / n + (x - self.x_mean).powi(2) / self.sxx).sqrt()
    }

    /// Whether the slope differs from zero at 95% (its t statistic against Student's t).
    pub fn significant(&self) -> bool {
        let se = self.sd / self.sxx.sqrt();
        if se <= 1e-12 {
            return self.slope.abs() > 1e-9;
        }
        (self.slope / se).abs() >= t975(self.n - 2)
    }
}

/// Where a series of daily peaks goes by `horizon` (days after its first day).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Projection {
    /// The central forecast at the horizon, and its 95% band.
    pub center: f64,
    pub low: f64,
    pub high: f64,
    /// The peak to size for between now and the horizon.
    pub peak: f64,
    /// The fitted line, when one was fitted; whether it is the forecast.
    pub fit: Option<Fit>,
    pub trend: bool,
}

/// Daily peaks to a projection: the fitted line where there are `min_trend_days` days and
/// its slope is significant; otherwise a flat level (the mean, with the highest peak seen as
/// the peak to size for).
pub(crate) fn project(
    daily: &[(f64, f64)],
    now: f64,
    horizon: f64,
    min_trend_days: usize,
) -> Projection {
    let fit = Fit::new(daily);
    if let Some(f) = fit.filter(|f| f.n >= min_trend_days && f.significant()) {
        // A decline is not extrapolated: a line through a workload that shrank from 24 to 12
        // reaches zero long before the quarter ends, which no running service supports. It
        // is held at today's fitted level, with today's band.
        if f.slope < 0.0 {
            let now_at = f.at(now).max(0.0);
            let half = f.half_band(now);
            return Projection {
                center: now_at,
                low: (now_at - half).max(0.0),
                high: now_at + half,
                peak: now_at,
                fit,
                trend: true,
            };
        }
        let center = f.at(horizon).max(0.0);
        let half = f.half_band(horizon);
        return Projection {
            center,
            low: (f.at(horizon) - half).max(0.0),
            high: (f.at(horizon) + half).max(0.0),
            peak: f.at(now).max(center).max(0.0),
            fit,
            trend: true,
        };
    }
    let n = daily.len().max(1) as f64;
    let mean = daily.iter().map(|p| p.1).sum::<f64>() / n;
    let sd = if daily.len() > 1 {
        (daily.iter().map(|p| (p.1 - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt()
    } else {
        0.0
    };
    let half = t975(daily.len().saturating_sub(1)) * sd * (1.0 + 1.0 / n).sqrt();
    let seen = daily.iter().map(|p| p.1).fold(0.0, f64::max);
    Projection {
        center: mean,
        low: (mean - half).max(0.0),
        high: mean + half,
        peak: seen.max(mean),
        fit,
        trend: false,
    }
}

/// The quarter after the one holding `t` (Unix seconds): its name and its end (Unix seconds,
/// exclusive).
pub(crate) fn next_quarter(t: i64) -> (String, i64) {
    let d = Date::from_days(t.div_euclid(86_400));
    let q = (i32::from(d.month) - 1) / 3; // 0..=3
    let (year, nq) = if q == 3 {
        (d.year + 1, 0)
    } else {
        (d.year, q + 1)
    };
    // The quarter after next begins where next ends.
    let (ey, eq) = if nq == 3 {
        (year + 1, 0)
    } else {
        (year, nq + 1)
    };
    let end = Date::new(ey, (eq * 3 + 1) as u8, 1).map_or(t, |d| d.days() * 86_400);
    (format!("{year}-Q{}", nq + 1), end)
}

/// A per-window series as hourly means, over the hours covered whole and not at either end
/// of the data. Hours, not windows: a scrape interval longer than the step leaves some
/// windows without a sample and gives others more than a step's worth, which an hour
/// averages out; an hour at the data's edge or with a gap holds samples that stand for time
/// outside it.
pub(super) fn hourly(t: &Telemetry, v: &super::telemetry::Windows) -> BTreeMap<i64, f64> {
    let per_hour = (3600 / t.step.max(1)).max(1) as usize;
    let edge = |w: Option<&i64>| w.map(|w| w.div_euclid(3600) * 3600);
    let (first, last) = (
        edge(t.covered_windows.first()),
        edge(t.covered_windows.last()),
    );
    let mut hours: BTreeMap<i64, (usize, f64)> = BTreeMap::new();
    for w in &t.covered_windows {
        let e = hours.entry(w.div_euclid(3600) * 3600).or_default();
        e.0 += 1;
        e.1 += v.get(w).copied().unwrap_or(0.0);
    }
    hours
        .into_iter()
        .filter(|(h, (n, _))| *n >= per_hour && Some(*h) != first && Some(*h) != last)
        .map(|(h, (n, sum))| (h, sum / n as f64))
        .collect()
}

/// Per hour, the share of its windows with samples in which `on` ran (an hour without any is
/// left out): whether a workload ran is read from the windows with samples.
pub(super) fn ran_share(t: &Telemetry, on: &super::telemetry::Windows) -> BTreeMap<i64, f64> {
    let mut ran: BTreeMap<i64, (usize, usize)> = BTreeMap::new();
    for w in &t.sampled_windows {
        let e = ran.entry(w.div_euclid(3600) * 3600).or_default();
        e.0 += 1;
        e.1 += usize::from(on.get(w).is_some_and(|g| *g > 1e-9));
    }
    ran.into_iter()
        .filter(|(_, (n, r))| *n > 0 && *r > 0)
        .map(|(h, (n, r))| (h, r as f64 / n as f64))
        .collect()
}

/// An hourly series (`hourly`'s) as means over the part of each hour it ran (`ran_share`):
/// a job that starts at 01:20 holds its 4 replicas from then, not 2.67 over the hour from
/// 01:00 (issue 72: a nightly job read at 2.67 replicas and priced at 61% of what ran).
pub(super) fn while_running(
    hourly: BTreeMap<i64, f64>,
    ran: &BTreeMap<i64, f64>,
) -> BTreeMap<i64, f64> {
    hourly
        .into_iter()
        .map(|(h, mean)| (h, mean / ran.get(&h).copied().unwrap_or(1.0)))
        .collect()
}

/// Daily peaks of an hourly series (days with at least half their hours, so a partial first
/// or last day does not read as a dip; a step over an hour gives fewer hours a day): (day
/// since 1970, peak).
pub(super) fn daily_peaks(v: &BTreeMap<i64, f64>, step: i64) -> Vec<(i64, f64)> {
    let half = (12 * 3600 / step.max(3600)).max(1) as usize;
    let mut days: BTreeMap<i64, (usize, f64)> = BTreeMap::new();
    for (h, x) in v {
        let e = days.entry(h.div_euclid(86_400)).or_default();
        e.0 += 1;
        e.1 = e.1.max(*x);
    }
    days.into_iter()
        .filter(|(_, (n, _))| *n >= half)
        .map(|(d, (_, peak))| (d, peak))
        .collect()
}

/// A pod's GPUs (its request, at the share of a GPU each unit is): its most in an hour it
/// held from start to end (an hour between its first and last), where a window's share of a
/// scrape interval longer than the step cancels out; a pod younger than that, the most it held
/// in one window.
pub(super) fn request(p: &PodSeries, per_hour: &BTreeMap<i64, usize>, step: f64) -> f64 {
    let mut sums: BTreeMap<i64, f64> = BTreeMap::new();
    for (w, a) in &p.allocated {
        *sums.entry(w.div_euclid(3600)).or_default() += a;
    }
    let (first, last) = match (sums.keys().next(), sums.keys().next_back()) {
        (Some(f), Some(l)) => (*f, *l),
        _ => return 0.0,
    };
    let interior = sums
        .iter()
        .filter(|(h, _)| **h > first && **h < last)
        .filter_map(|(h, a)| {
            let n = *per_hour.get(h)?;
            (n > 0).then(|| a / (n as f64 * step))
        })
        .fold(0.0f64, f64::max);
    if interior > 0.0 {
        interior
    } else {
        p.allocated.values().fold(0.0f64, |a, v| a.max(*v)) / step
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn least_squares_recovers_a_line_and_its_significance() {
        let pts: Vec<(f64, f64)> = (0..28)
            .map(|d| (f64::from(d), 2.0 + 0.5 * f64::from(d)))
            .collect();
        let f = Fit::new(&pts).expect("fit");
        assert!((f.slope - 0.5).abs() < 1e-9 && (f.intercept - 2.0).abs() < 1e-9);
        assert!((f.r2 - 1.0).abs() < 1e-9 && f.significant());
        // Alternating noise around a flat level has no significant slope.
        let flat: Vec<(f64, f64)> = (0..28)
            .map(|d| (f64::from(d), 4.0 + if d % 2 == 0 { 0.5 } else { -0.5 }))
            .collect();
        let f = Fit::new(&flat).expect("fit");
        assert!(!f.significant(), "{f:?}");
        let p = project(&flat, 28.0, 120.0, 14);
        assert!(!p.trend && (p.center - 4.0).abs() < 1e-9 && (p.peak - 4.5).abs() < 1e-9);
        assert!(p.low < 4.0 && p.high > 4.5);
    }

    #[test]
    fn t_quantiles_match_the_table() {
        assert!((t975(1) - 12.706).abs() < 1e-9);
        assert!((t975(26) - 2.056).abs() < 0.003);
        assert!((t975(100_000) - 1.96).abs() < 0.001);
    }

    #[test]
    fn the_next_quarter_ends_where_the_one_after_begins() {
        let t = |s: &str| super::super::telemetry::parse_time(s).expect("time");
        assert_eq!(
            next_quarter(t("2026-12-05T00:00:00Z")),
            ("2027-Q1".to_owned(), t("2027-04-01T00:00:00Z"))
        );
        assert_eq!(
            next_quarter(t("2026-02-28T12:00:00Z")),
            ("2026-Q2".to_owned(), t("2026-07-01T00:00:00Z"))
        );
        // The last second of a quarter plans the next one.
        assert_eq!(
            next_quarter(t("2027-01-01T00:00:00Z") - 1),
            ("2027-Q1".to_owned(), t("2027-04-01T00:00:00Z"))
        );
        assert_eq!(
            next_quarter(t("2026-09-30T23:59:59Z")),
            ("2026-Q4".to_owned(), t("2027-01-01T00:00:00Z"))
        );
    }
}
