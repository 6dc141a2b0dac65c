//! The review as a self-contained HTML page: the Markdown report's text with SVG charts.

use std::fmt::Write as _;

use super::cells::pct;
use super::markdown::markdown;
use crate::core::usd;
use crate::report::svg::{esc, PALETTE};
use crate::review::{telemetry, Review};

/// One small chart per team: GPUs allocated as a shaded area, GPUs in use as a line, on a
/// shared time axis, so the gap between them reads at a glance.
fn timeline_svg(r: &Review) -> String {
    let (w, row, pad_l, pad_r) = (760.0, 84.0, 150.0, 60.0);
    let mut tmin = i64::MAX;
    let mut tmax = i64::MIN;
    for pts in r.timeline.values() {
        for (t, _, _) in pts {
            tmin = tmin.min(*t);
            tmax = tmax.max(*t);
        }
    }
    if tmin > tmax || r.timeline.is_empty() {
        return String::new();
    }
    let span = (tmax - tmin).max(1) as f64;
    let x = |t: i64| pad_l + (t - tmin) as f64 / span * (w - pad_l - pad_r);
    let h = row * r.timeline.len() as f64 + 24.0;
    let mut s = format!(
        "<svg viewBox=\"0 0 {w} {h}\" role=\"img\" aria-label=\"GPUs allocated and used per team over time\"><text x=\"{pad_l}\" y=\"8\" font-size=\"10\" fill=\"#555\">GPUs</text>"
    );
    for (i, (team, pts)) in r.timeline.iter().enumerate() {
        let top = row * i as f64 + 8.0;
        let base = top + row - 20.0;
        let ymax = pts
            .iter()
            .map(|p| p.1.max(p.2))
            .fold(0.0, f64::max)
            .max(1e-9);
        let y = |v: f64| base - v / ymax * (row - 30.0);
        let c = PALETTE[i % PALETTE.len()];
        let mut area = format!("{:.1},{base:.1}", x(pts[0].0));
        for (t, a, _) in pts {
            let _ = write!(area, " {:.1},{:.1}", x(*t), y(*a));
        }
        let _ = write!(area, " {:.1},{base:.1}", x(pts[pts.len() - 1].0));
        let used: Vec<String> = pts
            .iter()
            .map(|(t, _, u)| format!("{:.1},{:.1}", x(*t), y(*u)))
            .collect();
        let (a_sum, u_sum) = pts.iter().fold((0.0, 0.0), |(a, u), p| (a + p.1, u + p.2));
        let _ = write!(
            s,
            "<text x=\"0\" y=\"{:.1}\" font-size=\"13\" font-weight=\"bold\">{}</text><text x=\"0\" y=\"{:.1}\" font-size=\"12\" fill=\"#555\">{} used</text><text x=\"0\" y=\"{:.1}\" font-size=\"11\" fill=\"#777\">peak {ymax:.1} GPUs</text><polygon points=\"{area}\" fill=\"{c}\" fill-opacity=\"0.18\"/><polyline fill=\"none\" stroke=\"{c}\" stroke-width=\"1.6\" points=\"{}\"/><line x1=\"{pad_l}\" y1=\"{base:.1}\" x2=\"{:.1}\" y2=\"{base:.1}\" stroke=\"#bbb\"/>",
            top + 20.0,
            esc(team),
            top + 36.0,
            pct((a_sum > 0.0).then(|| u_sum / a_sum)),
            top + 50.0,
            used.join(" "),
            w - pad_r
        );
        // The row's scale: 0 at the base line, the peak at the top, with a tick and a faint
        // grid line at each.
        let _ = write!(
            s,
            "<line x1=\"{:.1}\" y1=\"{:.1}\" x2=\"{:.1}\" y2=\"{base:.1}\" stroke=\"#999\"/><line x1=\"{pad_l}\" y1=\"{:.1}\" x2=\"{:.1}\" y2=\"{:.1}\" stroke=\"#e5e5e5\"/><text x=\"{:.1}\" y=\"{:.1}\" font-size=\"10\" fill=\"#555\" text-anchor=\"end\">{}</text><text x=\"{:.1}\" y=\"{:.1}\" font-size=\"10\" fill=\"#555\" text-anchor=\"end\">0</text>",
            pad_l,
            y(ymax),
            pad_l,
            y(ymax),
            w - pad_r,
            y(ymax),
            pad_l - 3.0,
            y(ymax) + 3.0,
            crate::core::num(ymax),
            pad_l - 3.0,
            base + 3.0,
        );
    }
    let _ = write!(
        s,
        "<text x=\"{pad_l}\" y=\"{:.1}\" font-size=\"11\" fill=\"#555\">{}</text><text x=\"{:.1}\" y=\"{:.1}\" font-size=\"11\" fill=\"#555\" text-anchor=\"end\">{}</text></svg>",
        h - 4.0,
        telemetry::format_time(tmin),
        w - pad_r,
        h - 4.0,
        telemetry::format_time(tmax)
    );
    s
}

/// Horizontal bars, largest first.
fn bars_svg(label: &str, rows: &[(String, f64)], fmt: &dyn Fn(f64) -> String) -> String {
    if rows.is_empty() {
        return String::new();
    }
    let max = rows.iter().map(|r| r.1).fold(0.0, f64::max).max(1e-9);
    let h = 24.0 * rows.len() as f64 + 10.0;
    let mut s = format!(
        "<svg viewBox=\"0 0 760 {h}\" role=\"img\" aria-label=\"{}\">",
        esc(label)
    );
    for (i, (name, v)) in rows.iter().enumerate() {
        let y = 5.0 + 24.0 * i as f64;
        let len = v / max * 420.0;
        let _ = write!(
            s,
            "<text x=\"0\" y=\"{}\" font-size=\"12\">{}</text><rect x=\"230\" y=\"{y}\" width=\"{len:.1}\" height=\"16\" fill=\"#d62728\"/><text x=\"{:.1}\" y=\"{}\" font-size=\"12\">{}</text>",
            y + 12.0,
            esc(name),
            236.0 + len,
            y + 12.0,
            esc(&fmt(*v))
        );
    }
    s.push_str("</svg>");
    s
}

/// A self-contained page: numbers first, then the three charts, then the tables.
pub(crate) fn html(r: &Review) -> String {
    // One idle figure per pool, the one the pools table shows (allocated GPU time nobody
    // used, at the pool's price): pools only, never mixed with teams.
    let mut idle: Vec<(String, f64)> = r
        .pools
        .iter()
        .filter_map(|p| p.idle_cost_usd.map(|c| (p.pool.clone(), c)))
        .filter(|x| x.1 > 0.0)
        .collect();
    idle.sort_by(|a, b| b.1.total_cmp(&a.1));
    let mut buckets = [0u32; 5];
    for w in &r.workloads {
        if let Some(e) = w.figures.efficiency {
            buckets[((e * 5.0) as usize).min(4)] += 1;
        }
    }
    let hist: Vec<(String, f64)> = buckets
        .iter()
        .enumerate()
        .map(|(i, n)| {
            (
                format!("{}-{}% efficient", i * 20, i * 20 + 20),
                f64::from(*n),
            )
        })
        .collect();
    // The Markdown report: its title and headline first, its tables after the charts.
    let idle_svg = bars_svg("idle cost per pool", &idle, &|v| usd(v));
    let hist_svg = bars_svg("workloads by efficiency", &hist, &|v| {
        format!("{v:.0} workload(s)")
    });
    let md = markdown(r);
    let split = md.find("\n## ").unwrap_or(md.len());
    let (head, tables) = (
        markdown_to_html(&md[..split]),
        markdown_to_html(&md[split..]),
    );
    let body = format!("{head}<h2>Allocated (shaded) against used (line), per team</h2>\n{{timeline}}\n<h2>Idle cost per pool (allocated, not used)</h2>\n{{idle}}\n<h2>Workload efficiency</h2>\n{{hist}}\n{tables}");
    let forecast = crate::report::forecast::forecast_svg(r);
    let body = match body.find("<h2>Next quarter") {
        Some(i) if !forecast.is_empty() => format!(
            "{}<h2>Next quarter: daily peak GPUs per team, the forecast dashed, its 95% band shaded</h2>\n{{forecast}}\n{}",
            &body[..i],
            &body[i..]
        ),
        _ => body,
    };
    format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>GPU capacity review: {plan}</title>\n<style>body{{font-family:system-ui,sans-serif;max-width:960px;margin:2em auto;padding:0 1em;color:#222}}table{{border-collapse:collapse;margin:1em 0;display:block;overflow-x:auto;max-width:100%}}td,th{{border:1px solid #ccc;padding:4px 8px;text-align:right;max-width:24em}}td:first-child,th:first-child{{text-align:left;overflow-wrap:break-word}}h2{{margin-top:2em}}svg{{width:100%;height:auto;background:#fafafa}}</style></head>\n<body>\n{body}\n</body></html>\n",
        body = body
            .replace("{timeline}", &timeline_svg(r))
            .replace("{idle}", &idle_svg)
            .replace("{hist}", &hist_svg)
            .replace("{forecast}", &forecast),
        plan = esc(&r.plan),
    )
}

/// The text of a `<code>` element as `md_code` escaped it.
fn md_unescape(s: &str) -> String {
    let s = s
        .replace("@&#8203;", "@")
        .replace("&lt;", "<")
        .replace("&amp;", "&");
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, chars.peek()) {
            ('\\', Some(n)) if n.is_ascii_punctuation() => {
                out.push(*n);
                chars.next();
            }
            _ => out.push(c),
        }
    }
    out
}

/// The Markdown report as HTML: headings, paragraphs, lists and pipe tables (the subset the
/// report uses), text escaped.
fn markdown_to_html(md: &str) -> String {
    let mut o = String::new();
    let mut in_table = false;
    let mut in_list = false;
    // Text outside a `<code>` element: the Markdown escapes (`\|`, `\[`, `\]`, `&lt;`, the
    // mention breaker) are for Markdown; HTML shows the character, escaped once.
    let text = |s: &str| {
        let e = esc(&s
            .replace("\\|", "|")
            .replace("\\[", "[")
            .replace("\\]", "]")
            .replace("&lt;", "<")
            .replace("@&#8203;", "@"));
        let mut out = String::new();
        for (i, part) in e.split('`').enumerate() {
            if i % 2 == 1 {
                let _ = write!(out, "<code>{part}</code>");
            } else {
                let bolded: Vec<&str> = part.split("**").collect();
                for (j, b) in bolded.iter().enumerate() {
                    if j % 2 == 1 {
                        let _ = write!(out, "<strong>{b}</strong>");
                    } else {
                        out.push_str(b);
                    }
                }
            }
        }
        out
    };
    // `md_code` writes a value that a backquoted span cannot hold as a `<code>` element with
    // its punctuation backslash-escaped and `<`, `&`, `@` as entities: shown as the value.
    let inline = |s: &str| {
        let mut out = String::new();
        let mut rest = s;
        while let Some((before, after)) = rest.split_once("<code>") {
            out.push_str(&text(before));
            let (code, after) = after.split_once("</code>").unwrap_or((after, ""));
            let _ = write!(out, "<code>{}</code>", esc(&md_unescape(code)));
            rest = after;
        }
        out.push_str(&text(rest));
        out
    };
    for line in md.lines() {
        if !line.starts_with('|') && in_table {
            o.push_str("</table>\n");
            in_table = false;
        }
        if !line.starts_with("- ") && in_list {
            o.push_str("</ul>\n");
            in_list = false;
        }
        if let Some(h) = line.strip_prefix("## ") {
            let _ = writeln!(o, "<h2>{}</h2>", inline(h));
        } else if let Some(h) = line.strip_prefix("# ") {
            let _ = writeln!(o, "<h1>{}</h1>", inline(h));
        } else if line.starts_with("|---") {
            continue;
        } else if line.starts_with('|') {
            let cells: Vec<&str> = line.trim_matches('|').split(" | ").collect();
            let tag = if in_table { "td" } else { "th" };
            if !in_table {
                o.push_str("<table>\n");
                in_table = true;
            }
            o.push_str("<tr>");
            for c in cells {
                let _ = write!(o, "<{tag}>{}</{tag}>", inline(c.trim()));
            }
            o.push_str("</tr>\n");
        } else if let Some(item) = line.strip_prefix("- ") {
            if !in_list {
                o.push_str("<ul>\n");
                in_list = true;
            }
            let _ = writeln!(o, "<li>{}</li>", inline(item));
        } else if !line.trim().is_empty() {
            let _ = writeln!(o, "<p>{}</p>", inline(line));
        }
    }
    if in_table {
        o.push_str("</table>\n");
    }
    if in_list {
        o.push_str("</ul>\n");
    }
    o
}
