//! `gpuplan diff`'s output: the changes and the cost delta as text or a Markdown comment
//! (JSON is the [`Diff`] itself).

use std::fmt::Write as _;

use crate::core::usd;
use crate::engine::diff::{Basis, Changes, CostLine, Diff, Held, KeyChange};

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
/// create) cost before and after, when either side declares pools, and the recommendation;
/// each expected and at its maximum (every node of `nodes.max`), the exposure a change of
/// `nodes.max` alone moves.
pub(crate) fn delta_sentence(d: &Diff) -> String {
    let mut s = String::new();
    let figure = |h: Held| {
        h.of(d).map(|(b, a)| {
            let pct = (b > 0.0).then(|| ((a - b) / b * 10_000.0).round() / 100.0);
            change(b, a, a - b, pct)
        })
    };
    if let (Some(x), Some(m)) = (figure(Held::Declared), figure(Held::DeclaredAtMax)) {
        s.push_str(&format!(
            "**Declared pools' monthly cost:** {x}; **at maximum:** {m}\n\n"
        ));
    }
    if let (Some(x), Some(m)) = (figure(Held::Recommended), figure(Held::RecommendedAtMax)) {
        s.push_str(&format!(
            "**Recommended monthly cost:** {x}; **at maximum:** {m}"
        ));
    }
    for (label, side) in [("base", &d.base), ("head", &d.head)] {
        if let Some(line) = unpriced_line(label, side) {
            s.push_str(&format!("\n\n{}", crate::report::markdown::md(&line)));
        }
    }
    s
}

/// How a held figure rose: "the declared pools' monthly cost at maximum rises by $X (+Y%)".
pub(crate) fn rise(d: &Diff, h: Held) -> String {
    if h == Held::DeclaredUnpriced {
        // The pools the guardrail failed closed on, as it found them.
        let unpriced = d.guardrail.as_ref().map_or(&[][..], |g| &g.unpriced[..]);
        return format!(
            "the head declares {} with no price to hold to the limit: {}",
            unpriced
                .iter()
                .map(|p| format!("`{p}`"))
                .collect::<Vec<_>>()
                .join(", "),
            crate::engine::cost::block_price_unknown_said(d.base.provider)
        );
    }
    let (before, after) = h.of(d).unwrap_or_default();
    let what = match h {
        Held::Recommended => "the recommended monthly cost",
        Held::RecommendedAtMax => {
            "the recommended monthly cost at maximum (every pool at `nodes.max`)"
        }
        Held::Declared => "the declared pools' monthly cost",
        Held::DeclaredAtMax => {
            "the declared pools' monthly cost at maximum (every node of `nodes.max`)"
        }
        Held::DeclaredUnpriced => "the declared pools",
    };
    let pct = if before > 0.0 {
        format!("{:+.2}%", (after - before) / before * 100.0)
    } else {
        "from nothing".to_owned()
    };
    format!("{what} rises by {} ({pct})", usd(after - before))
}

/// `nodes.max 4 → 40`, each changed value old → new (`none` where a side lacks it).
fn values_text(v: &[KeyChange]) -> String {
    v.iter()
        .map(|k| {
            let side = |x: &Option<String>| x.clone().unwrap_or_else(|| "none".to_owned());
            format!("{} {} → {}", k.key, side(&k.before), side(&k.after))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// What a pool's at-maximum figure is made of: `40 nodes × 730 h × $0.7240`, the reserved
/// floor beside the on-demand nodes above it, and spot's restart waste.
fn basis_text(b: &Basis) -> String {
    let mut s = if b.capacity.is_reserved() {
        let above = (b.nodes_max - b.nodes_min).max(0);
        format!(
            "{} reserved × {} h × {} + {above} on-demand × {} h × {}",
            b.nodes_min,
            crate::core::HOURS_PER_MONTH,
            rate(b.usd_per_node_hour),
            crate::core::num(b.hours),
            rate(b.above_floor_usd_per_node_hour)
        )
    } else {
        format!(
            "{} × {} nodes × {} h × {}",
            b.sku,
            b.nodes_max,
            crate::core::num(b.hours),
            rate(b.usd_per_node_hour)
        )
    };
    if let Some(w) = b.spot_waste_factor {
        s.push_str(&format!(" × {w:.3} (spot restarts)"));
    }
    if let Some(c) = &b.caveat {
        s.push_str(&format!(" ({c})"));
    }
    s
}

/// An hourly rate as every report writes one (`core::rate`), per hour.
fn rate(usd_per_hour: f64) -> String {
    format!("{}/h", crate::core::rate(usd_per_hour))
}

/// The basis of a pool's at-maximum figure on each side, where it changed or the pool is new
/// or gone: `before: …; after: …`.
fn basis_change(l: &CostLine) -> Option<String> {
    if l.before_basis == l.after_basis {
        return None;
    }
    let side = |b: &Option<Basis>| b.as_ref().map_or("none".to_owned(), basis_text);
    Some(format!(
        "at maximum, before: {}; after: {}",
        side(&l.before_basis),
        side(&l.after_basis)
    ))
}

/// `$a → $b (+$c)` of a line's at-maximum figure.
fn at_max_text(l: &CostLine) -> String {
    l.at_max.map_or_else(String::new, |m| {
        format!(
            "{} → {} ({}{})",
            usd(m.before_usd),
            usd(m.after_usd),
            if m.delta_usd >= 0.0 { "+" } else { "" },
            usd(m.delta_usd)
        )
    })
}

fn guard_line(gd: &crate::engine::diff::Guardrail) -> String {
    let costs: Vec<&str> = gd
        .exceeded_by
        .iter()
        .copied()
        .filter(|l| *l != Held::DeclaredUnpriced.label())
        .collect();
    let state = if gd.exceeded {
        let mut s = Vec::new();
        if !costs.is_empty() {
            s.push(format!("exceeded by the {} cost", listed(&costs)));
        }
        if !gd.unpriced.is_empty() {
            s.push(format!(
                "failed closed on {} (no price offline)",
                gd.unpriced
                    .iter()
                    .map(|p| format!("`{p}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        s.join("; ")
    } else {
        "within".to_owned()
    };
    format!(
        "guardrail --fail-on-increase {} (watching the {} cost): {state}",
        gd.limit,
        listed(&gd.watches)
    )
}

/// `a, b and c`.
fn listed(items: &[&str]) -> String {
    match items {
        [] => String::new(),
        [one] => (*one).to_owned(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

fn changes_text(o: &mut String, what: &str, c: &Changes) {
    for n in &c.added {
        let _ = writeln!(o, "  + {what} `{n}`");
    }
    for n in &c.removed {
        let _ = writeln!(o, "  - {what} `{n}`");
    }
    for ch in &c.changed {
        let _ = writeln!(o, "  ~ {what} `{}`: {}", ch.name, values_text(&ch.values));
    }
}

/// The declared pools' monthly cost on each side, when either side declares pools, and at
/// their maximum.
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
        "declared pools: {} -> {} a month; at maximum {} -> {}",
        side(b),
        side(h),
        side(d.base.declared_monthly_cost_at_max_usd),
        side(d.head.declared_monthly_cost_at_max_usd)
    ))
}

/// The declared pools a side leaves out of its figures for want of a price.
fn unpriced_line(label: &str, s: &crate::engine::diff::Side) -> Option<String> {
    (!s.declared_unpriced.is_empty()).then(|| {
        format!(
            "note: in the {label}, not counted in the declared cost: {}: {}",
            s.declared_unpriced
                .iter()
                .map(|n| format!("`{n}`"))
                .collect::<Vec<_>>()
                .join(", "),
            crate::engine::cost::block_price_unknown_said(s.provider)
        )
    })
}

pub(crate) fn human(d: &Diff) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "{} -> {}: recommended {} -> {} a month ({}{}{}); at maximum {} -> {}",
        d.base.source,
        d.head.source,
        usd(d.base.total_monthly_cost_usd),
        usd(d.head.total_monthly_cost_usd),
        if d.delta_usd >= 0.0 { "+" } else { "" },
        usd(d.delta_usd),
        d.delta_pct
            .map(|p| format!(", {p:+.2}%"))
            .unwrap_or_default(),
        usd(d.base.total_monthly_cost_at_max_usd),
        usd(d.head.total_monthly_cost_at_max_usd)
    );
    if let Some(line) = declared_line(d) {
        let _ = writeln!(o, "{line}");
    }
    let _ = writeln!(o);
    let _ = writeln!(o, "Plan changes:");
    for s in &d.settings {
        let _ = writeln!(o, "  ~ {s}");
    }
    for c in &d.setting_changes {
        let _ = writeln!(o, "      {}", values_text(std::slice::from_ref(c)));
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
            if l.at_max.is_some() {
                let _ = writeln!(o, "    at maximum {}", at_max_text(l));
            }
            if let Some(b) = basis_change(l) {
                let _ = writeln!(o, "    {b}");
            }
        }
    }
    for (label, s) in [("base", &d.base), ("head", &d.head)] {
        if let Some(line) = unpriced_line(label, s) {
            let _ = writeln!(o, "\n{line}");
        }
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
    o.push_str(&changes(d));
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

/// What changed, as tables: settings, workloads and declared pools added, removed or
/// changed, and each pool's and team's cost before and after (no headline, no cost line:
/// a pull-request comment states those once).
pub(crate) fn changes(d: &Diff) -> String {
    let mut o = String::new();
    let mut rows = Vec::new();
    for s in &d.settings {
        // The values of the keys under this setting (`plan.regions` under `plan.regions`,
        // `quota[0].limit` under `[[quota]]`).
        let under = |k: &str| {
            let array = s.strip_prefix("[[").and_then(|a| a.strip_suffix("]]"));
            match array {
                Some(a) => k.starts_with(&format!("{a}[")),
                None => k == s || k.starts_with(&format!("{s}.")),
            }
        };
        let values: Vec<KeyChange> = d
            .setting_changes
            .iter()
            .filter(|c| under(&c.key))
            .cloned()
            .collect();
        rows.push(if values.is_empty() {
            format!("| changed | setting | `{s}` |")
        } else {
            format!(
                "| changed | setting | `{s}`: {} |",
                crate::report::markdown::md(&values_text(&values))
            )
        });
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
                crate::report::markdown::md(&values_text(&ch.values))
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
        // A team is charged its workloads' expected cost; only pools have an at-maximum
        // figure, and a column nobody fills is not shown (issue 75).
        let at_max = ls.iter().any(|l| l.at_max.is_some());
        let _ = writeln!(
            o,
            "| {title} | expected before | expected after | delta |{}",
            if at_max { " at maximum |" } else { "" }
        );
        let _ = writeln!(
            o,
            "|---|---:|---:|---:|{}",
            if at_max { "---:|" } else { "" }
        );
        for l in ls {
            let _ = writeln!(
                o,
                "| `{}` | {} | {} | {}{} |{}",
                l.name,
                usd(l.before_usd),
                usd(l.after_usd),
                if l.delta_usd >= 0.0 { "+" } else { "" },
                usd(l.delta_usd),
                if at_max {
                    format!(" {} |", at_max_text(l))
                } else {
                    String::new()
                }
            );
        }
        let _ = writeln!(o);
        for l in ls {
            if let Some(b) = basis_change(l) {
                let _ = writeln!(o, "- `{}` {}", l.name, crate::report::markdown::md(&b));
            }
        }
        if ls.iter().any(|l| basis_change(l).is_some()) {
            let _ = writeln!(o);
        }
    }
    o
}
