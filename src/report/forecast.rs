//! The review's "Next quarter": the forecast per team and per workload as Markdown, and per
//! team as an SVG chart of daily peaks with the forecast and its band.

use std::fmt::Write as _;

use super::svg::{esc, PALETTE};
use crate::core::format::md_code;
use crate::report::markdown::md;
use crate::review::{telemetry, Review};

/// The forecast: per team, then per workload with what `--write-plan` writes.
pub(super) fn next_quarter(o: &mut String, r: &Review) {
    let n = &r.next_quarter;
    if let Some(why) = &n.withheld {
        let _ = writeln!(
            o,
            "\n## Next quarter ({})\n\nNot forecast: {}.",
            n.quarter,
            md(&why.to_string())
        );
        return;
    }
    let _ = writeln!(
        o,
        "\n## Next quarter ({})\n\nProjected to {}, {} day(s) after the data, from {} covered day(s): daily peaks of GPUs held, a least-squares trend where it is significant, else their level (`gpuplan explain review` has the method; `review --write-plan NEXT.toml` writes the plan).\n",
        n.quarter,
        n.horizon,
        crate::core::num(n.horizon_days),
        crate::core::num(n.covered_days)
    );
    let trend = |t: &Option<crate::review::forecast::Trend>| match t {
        Some(t) if t.used => format!("{:+.3}/day (R\u{b2} {:.2})", t.slope_per_day, t.r2),
        Some(t) => format!("none significant ({:+.3}/day)", t.slope_per_day),
        None => "-".to_owned(),
    };
    if !n.teams.is_empty() {
        let _ = writeln!(o, "| team | peak GPUs held | trend | projected GPUs | 95% band |\n|---|---:|---|---:|---:|");
        for t in &n.teams {
            let projected = match t.serving_added_gpus {
                Some(a) => format!(
                    "{} (+{} its services need)",
                    crate::core::num(t.projected_gpus),
                    crate::core::num(a)
                ),
                None => crate::core::num(t.projected_gpus),
            };
            let _ = writeln!(
                o,
                "| {} | {} | {} | {} | {}-{} |",
                md(&t.team),
                crate::core::num(t.peak_gpus),
                trend(&t.trend),
                projected,
                crate::core::num(t.band_low),
                crate::core::num(t.band_high)
            );
        }
    }
    if !n.workloads.is_empty() {
        let _ = writeln!(o, "\n| workload | replicas today | held p10 / p50 / p95 / max | trend | projected peak (95% band) | proposed replicas | hours / month | slice |\n|---|---|---|---|---:|---|---:|---|");
        for w in &n.workloads {
            let p = &w.proposed;
            let _ = writeln!(
                o,
                "| {} | {} | {} / {} / {} / {} | {} | {} ({}-{}) | `{}` ({}) | {} | {} |",
                md_code(&w.workload),
                md_code(&w.current),
                crate::core::num(w.replicas_held.p10),
                crate::core::num(w.replicas_held.p50),
                crate::core::num(w.replicas_held.p95),
                crate::core::num(w.replicas_held.max),
                trend(&w.trend),
                crate::core::num(w.projected_replicas),
                crate::core::num(w.band_low),
                crate::core::num(w.band_high),
                crate::review::forecast::count(p.count()),
                match w.written {
                    Some(crate::review::forecast::Written::Unchanged) => "left as written",
                    Some(crate::review::forecast::Written::WithoutRightSize) =>
                        "check refused the slice",
                    _ => p.basis.as_str(),
                },
                match p.hours_per_month {
                    Some(h) => h.to_string(),
                    None => crate::core::num(w.hours_per_month),
                },
                match (&w.right_size, p.gpu_fraction) {
                    (Some(slice), Some(f)) => format!("{} ({f} GPU)", md(&slice.to_string())),
                    _ => "-".to_owned(),
                }
            );
        }
    }
    if !n.without_data.is_empty() {
        let _ = writeln!(
            o,
            "\nLeft as written, no GPU held in the window: {}.",
            n.without_data
                .iter()
                .map(|w| md_code(w))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
}

/// Per team: daily peaks of GPUs held as dots, and from the first day to the horizon the
/// forecast (the trend, or the flat level) with its 95% band shaded.
pub(super) fn forecast_svg(r: &Review) -> String {
    let n = &r.next_quarter;
    let teams: Vec<_> = n.teams.iter().filter(|t| !t.daily.is_empty()).collect();
    if teams.is_empty() {
        return String::new();
    }
    let (w, row, pad_l, pad_r) = (760.0, 96.0, 150.0, 60.0);
    let first = teams.iter().map(|t| t.first_day).min().unwrap_or(0);
    let last = n.horizon_t.div_euclid(86_400).max(first + 1);
    let span = (last - first) as f64;
    let x = |day: f64| pad_l + (day - first as f64) / span * (w - pad_l - pad_r);
    let h = row * teams.len() as f64 + 24.0;
    let mut s = format!(
        "<svg viewBox=\"0 0 {w} {h}\" role=\"img\" aria-label=\"daily peak GPUs per team with the forecast to {}\">",
        esc(&n.horizon)
    );
    for (i, t) in teams.iter().enumerate() {
        let top = row * i as f64 + 8.0;
        let base = top + row - 20.0;
        // The line and band at a day (days since 1970): the fit where it is the forecast,
        // else the level with a constant band.
        let at = |day: f64| -> (f64, f64, f64) {
            match &t.fit {
                Some(f) => {
                    let dx = day - t.first_day as f64;
                    let c = f.at(dx);
                    let hb = f.half_band(dx);
                    (c.max(0.0), (c - hb).max(0.0), (c + hb).max(0.0))
                }
                None => (t.projected_gpus, t.band_low, t.band_high),
            }
        };
        let (d0, d1) = (t.first_day as f64, last as f64);
        let ymax = t
            .daily
            .iter()
            .map(|d| d.1)
            .chain([at(d0).2, at(d1).2])
            .fold(0.0, f64::max)
            .max(1e-9);
        let y = |v: f64| base - v / ymax * (row - 30.0);
        let c = PALETTE[i % PALETTE.len()];
        let steps = 24;
        let pts: Vec<f64> = (0..=steps)
            .map(|k| d0 + (d1 - d0) * f64::from(k) / f64::from(steps))
            .collect();
        let upper: Vec<String> = pts
            .iter()
            .map(|d| format!("{:.1},{:.1}", x(*d), y(at(*d).2)))
            .collect();
        let lower: Vec<String> = pts
            .iter()
            .rev()
            .map(|d| format!("{:.1},{:.1}", x(*d), y(at(*d).1)))
            .collect();
        let line: Vec<String> = pts
            .iter()
            .map(|d| format!("{:.1},{:.1}", x(*d), y(at(*d).0)))
            .collect();
        let _ = write!(
            s,
            "<text x=\"0\" y=\"{:.1}\" font-size=\"13\" font-weight=\"bold\">{}</text><text x=\"0\" y=\"{:.1}\" font-size=\"11\" fill=\"#555\">{} GPUs by {}</text><polygon points=\"{} {}\" fill=\"{c}\" fill-opacity=\"0.15\"/><polyline fill=\"none\" stroke=\"{c}\" stroke-width=\"1.4\" stroke-dasharray=\"5 3\" points=\"{}\"/><line x1=\"{pad_l}\" y1=\"{base:.1}\" x2=\"{:.1}\" y2=\"{base:.1}\" stroke=\"#bbb\"/><line x1=\"{pad_l}\" y1=\"{:.1}\" x2=\"{pad_l}\" y2=\"{base:.1}\" stroke=\"#bbb\"/><text x=\"{:.1}\" y=\"{:.1}\" font-size=\"10\" fill=\"#555\" text-anchor=\"end\">{} GPUs</text><text x=\"{:.1}\" y=\"{base:.1}\" font-size=\"10\" fill=\"#555\" text-anchor=\"end\">0</text>",
            top + 20.0,
            esc(&t.team),
            top + 36.0,
            crate::core::num(t.projected_gpus),
            esc(&n.quarter),
            upper.join(" "),
            lower.join(" "),
            line.join(" "),
            w - pad_r,
            y(ymax),
            pad_l - 3.0,
            y(ymax) + 3.0,
            crate::core::num(ymax),
            pad_l - 3.0,
        );
        for (day, v) in &t.daily {
            let _ = write!(
                s,
                "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"2\" fill=\"{c}\"/>",
                x(*day as f64),
                y(*v)
            );
        }
    }
    let end_of_data = r
        .coverage
        .data_to
        .as_deref()
        .and_then(telemetry::parse_time)
        .map_or(first as f64, |t| t as f64 / 86_400.0);
    // The first day and the horizon are the x axis's ends; "end of data" is written at the
    // top beside its line, where no date label can overprint it (issue 75).
    let _ = write!(
        s,
        "<line x1=\"{0:.1}\" y1=\"4\" x2=\"{0:.1}\" y2=\"{1:.1}\" stroke=\"#999\" stroke-dasharray=\"2 2\"/><text x=\"{pad_l}\" y=\"{2:.1}\" font-size=\"11\" fill=\"#555\">{3}</text><text x=\"{6:.1}\" y=\"14\" font-size=\"10\" fill=\"#555\">end of data</text><text x=\"{4:.1}\" y=\"{2:.1}\" font-size=\"11\" fill=\"#555\" text-anchor=\"end\">{5}</text></svg>",
        x(end_of_data),
        h - 16.0,
        h - 4.0,
        crate::core::Date::from_days(first),
        w - pad_r,
        esc(&n.horizon),
        x(end_of_data) + 3.0,
    );
    s
}
