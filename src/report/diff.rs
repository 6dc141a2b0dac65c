//! `gpuplan diff`'s output: the changes and the cost delta as text or a Markdown comment
//! (JSON is the [`Diff`] itself).

use std::fmt::Write as _;

use crate::core::usd;
use crate::engine::diff::{Changes, Diff};

/// `before → after (+delta, +pct%)`.
fn change(before: f64, after: f64, delta: f64, pct: Option<f64>) -> String {
    format!(
        "{} → {} ({}{}{})",
        usd(before),
        usd(after),
        if delta >= 0.0 { "+" } else { "" },
        usd(delta),
        pct.map(|p| format!(", {}{p:.2}%", if p >= 0.0 { "+" } else { "" }))
            .unwrap_or_default()
    )
}

/// The cost lines of a pull-request comment: what the declared pools (what Terraform will
/// create) cost before and after, when either side declares pools, and the recommendation.
pub(crate) fn delta_sentence(d: &Diff) -> String {
    let mut s = String::new();
    if d.declared_delta_usd.is_some() {
        s.push_str(&format!(
            "**Declared pools' monthly cost:** {}\n\n",
            change(
                d.base.declared_monthly_cost_usd.unwrap_or(0.0),
                d.head.declared_monthly_cost_usd.unwrap_or(0.0),
                d.declared_delta_usd.unwrap_or(0.0),
                d.declared_delta_pct
            )
        ));
    }
    s.push_str(&format!(
        "**Recommended monthly cost:** {}",
        change(
            d.base.total_monthly_cost_usd,
            d.head.total_monthly_cost_usd,
            d.delta_usd,
            d.delta_pct
        )
    ));
    s
}

fn guard_line(gd: &crate::engine::diff::Guardrail) -> String {
    let state = if gd.exceeded {
        format!("exceeded by the {} cost", gd.exceeded_by.join(" and the "))
    } else {
        "within".to_owned()
    };
    format!(
        "guardrail --fail-on-increase {} (watching the {} cost): {state}",
        gd.limit,
        gd.watches.join(" and the ")
    )
}

fn changes_text(o: &mut String, what: &str, c: &Changes) {
    for n in &c.added {
        let _ = writeln!(o, "  + {what} `{n}`");
    }
    for n in &c.removed {
        let _ = writeln!(o, "  - {what} `{n}`");
    }
    for ch in &c.changed {
        let _ = writeln!(o, "  ~ {what} `{}`: {}", ch.name, ch.keys.join(", "));
    }
}

/// The declared pools' monthly cost on each side, when either side declares pools.
fn declared_line(d: &Diff) -> Option<String> {
    let (b, h) = (
        d.base.declared_monthly_cost_usd,
        d.head.declared_monthly_cost_usd,
    );
    if b.is_none() && h.is_none() {
        return None;
    }
    let side = |x: Option<f64>| x.map_or("no pools".to_owned(), usd);
    Some(format!(
        "declared pools: {} -> {} a month",
        side(b),
        side(h)
    ))
}

pub(crate) fn human(d: &Diff) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "{} -> {}: recommended {} -> {} a month ({}{}{})",
        d.base.source,
        d.head.source,
        usd(d.base.total_monthly_cost_usd),
        usd(d.head.total_monthly_cost_usd),
        if d.delta_usd >= 0.0 { "+" } else { "" },
        usd(d.delta_usd),
        d.delta_pct
            .map(|p| format!(", {p:+.2}%"))
            .unwrap_or_default()
    );
    if let Some(line) = declared_line(d) {
        let _ = writeln!(o, "{line}");
    }
    let _ = writeln!(o);
    let _ = writeln!(o, "Plan changes:");
    for s in &d.settings {
        let _ = writeln!(o, "  ~ {s}");
    }
    changes_text(&mut o, "workload", &d.workloads);
    changes_text(&mut o, "declared pool", &d.pools);
    for (title, ls) in [
        ("Declared pools", &d.declared_pools),
        ("Recommended pools", &d.recommended_pools),
        ("Teams", &d.teams),
    ] {
        if ls.is_empty() {
            continue;
        }
        let _ = writeln!(o);
        let _ = writeln!(o, "{title}:");
        for l in ls {
            let _ = writeln!(
                o,
                "  {:<40} {:>14} -> {:>14}  {}{}",
                l.name,
                usd(l.before_usd),
                usd(l.after_usd),
                if l.delta_usd >= 0.0 { "+" } else { "" },
                usd(l.delta_usd)
            );
        }
    }
    for (label, s) in [("base", &d.base), ("head", &d.head)] {
        if !s.unsatisfied.is_empty() {
            let _ = writeln!(
                o,
                "\nnote: in the {label}, no SKU satisfies {} (not in its cost)",
                s.unsatisfied.join(", ")
            );
        }
    }
    if let Some(gd) = &d.guardrail {
        let _ = writeln!(o, "\n{}", guard_line(gd));
    }
    o
}

pub(crate) fn markdown(d: &Diff) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "### gpuplan diff: `{}`", d.head.plan);
    let _ = writeln!(o);
    let _ = writeln!(o, "{}", delta_sentence(d));
    let _ = writeln!(o);
    let mut rows = Vec::new();
    for s in &d.settings {
        rows.push(format!("| changed | setting | `{s}` |"));
    }
    for (what, c) in [("workload", &d.workloads), ("declared pool", &d.pools)] {
        rows.extend(
            c.added
                .iter()
                .map(|n| format!("| added | {what} | `{n}` |")),
        );
        rows.extend(
            c.removed
                .iter()
                .map(|n| format!("| removed | {what} | `{n}` |")),
        );
        rows.extend(c.changed.iter().map(|ch| {
            format!(
                "| changed | {what} | `{}`: {} |",
                ch.name,
                ch.keys.join(", ")
            )
        }));
    }
    if !rows.is_empty() {
        let _ = writeln!(o, "| change | what | name |");
        let _ = writeln!(o, "|---|---|---|");
        for r in rows {
            let _ = writeln!(o, "{r}");
        }
        let _ = writeln!(o);
    }
    for (title, ls) in [
        ("declared pool", &d.declared_pools),
        ("recommended pool", &d.recommended_pools),
        ("team", &d.teams),
    ] {
        if ls.is_empty() {
            continue;
        }
        let _ = writeln!(o, "| {title} | before | after | delta |");
        let _ = writeln!(o, "|---|---:|---:|---:|");
        for l in ls {
            let _ = writeln!(
                o,
                "| `{}` | {} | {} | {}{} |",
                l.name,
                usd(l.before_usd),
                usd(l.after_usd),
                if l.delta_usd >= 0.0 { "+" } else { "" },
                usd(l.delta_usd)
            );
        }
        let _ = writeln!(o);
    }
    if let Some(gd) = &d.guardrail {
        let _ = writeln!(
            o,
            "{} {}",
            if gd.exceeded {
                ":x:"
            } else {
                ":white_check_mark:"
            },
            guard_line(gd)
        );
    }
    o
}
