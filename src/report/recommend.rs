//! `gpuplan recommend`'s output: the recommended pools as a table with a why-line each, as
//! JSON (`gpuplan.recommendation/v1`) or as Markdown for a pull request or review document.

use std::fmt::Write as _;

use crate::core::{usd, Sharing};
use crate::engine::recommend::{LowerBound, RecPool, Recommendation};
use crate::report::markdown::md;

pub(crate) fn json(rec: &Recommendation) -> String {
    let mut s = serde_json::to_string_pretty(rec).unwrap_or_else(|e| {
        // Serialising plain structs of strings and numbers cannot fail; say so if it does.
        format!("{{\"error\": \"{e}\"}}")
    });
    s.push('\n');
    s
}

/// `saving $1.00` or `extra $1.00`.
fn saving(x: f64) -> String {
    format!(
        "{} {}",
        if x >= 0.0 { "saving" } else { "extra" },
        usd(x.abs())
    )
}

fn sharing_cell(p: &RecPool) -> String {
    match (p.sharing, &p.mig_layout, p.time_slicing_replicas) {
        (Sharing::Mig, Some(l), _) => format!(
            "mig {}",
            l.iter()
                .map(|(k, v)| format!("{k} x{v}"))
                .collect::<Vec<_>>()
                .join(" + ")
        ),
        (Sharing::Mig, None, _) => format!("mig mixed ({} layouts)", p.mig_configs.len()),
        (s, _, Some(r)) => format!("{} x{r}", s.as_str()),
        (s, _, None) => s.as_str().to_owned(),
    }
}

/// How far the fleet can be from the cheapest, against the LP bound (`engine::recommend`'s
/// `bound`): fractional nodes of every SKU, region and capacity type each workload may use.
fn bound_line(b: &LowerBound) -> String {
    // A fleet at the bound reads 0.0%, never -0.0%.
    let pct = format!("{:.1}%", (b.gap * 100.0).max(0.0) + 0.0);
    if b.optimal {
        format!(
            "Within {pct} of the cheapest fleet these constraints allow: no fleet costs less than {} a month (LP lower bound, every size, region and capacity type, nodes fractional).",
            usd(b.monthly_cost_usd)
        )
    } else {
        format!(
            "At most {pct} above the cheapest fleet these constraints allow: no fleet costs less than {} a month (LP lower bound, stopped before its optimum, so the true gap is smaller).",
            usd(b.monthly_cost_usd)
        )
    }
}

fn nodes_cell(p: &RecPool) -> String {
    if p.nodes.min == p.nodes.max {
        p.nodes.max.to_string()
    } else {
        format!("{}-{}", p.nodes.min, p.nodes.max)
    }
}

pub(crate) fn human(rec: &Recommendation) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "{}: {} pool(s), {} a month expected, {} at maximum  [{}: {}]",
        rec.plan,
        rec.pools.len(),
        usd(rec.total_monthly_cost_usd),
        usd(rec.total_monthly_cost_at_max_usd),
        rec.provider,
        rec.regions.join(" > ")
    );
    if let Some(b) = &rec.lower_bound {
        let _ = writeln!(o, "{}", bound_line(b));
    }
    human_pools(&mut o, rec);
    human_costs(&mut o, rec);
    human_comparison(&mut o, rec);
    human_problems(&mut o, rec);
    let _ = writeln!(o);
    for d in &rec.data {
        let _ = writeln!(o, "data: {} {}", d.file, d.dated());
    }
    o
}

/// The pools as an aligned table, each row followed by its details.
fn human_pools(o: &mut String, rec: &Recommendation) {
    if rec.pools.is_empty() {
        return;
    }
    let header = [
        "POOL",
        "REGION",
        "SKU",
        "GPU",
        "NODES",
        "CAPACITY",
        "SHARING",
        "COST/MONTH",
    ];
    let rows: Vec<[String; 8]> = rec
        .pools
        .iter()
        .map(|p| {
            [
                p.name.clone(),
                p.region.clone(),
                p.sku.clone(),
                format!("{} x{}", p.gpu_model, p.gpus_per_node),
                nodes_cell(p),
                p.capacity.to_string(),
                sharing_cell(p),
                usd(p.monthly_cost_usd),
            ]
        })
        .collect();
    let mut widths = header.map(str::len);
    for r in &rows {
        for (w, c) in widths.iter_mut().zip(r) {
            *w = (*w).max(c.len());
        }
    }
    let line = |cells: &[String]| {
        let mut l = String::new();
        for (i, (c, w)) in cells.iter().zip(widths).enumerate() {
            if i == cells.len() - 1 {
                let _ = write!(l, "{c:>w$}");
            } else {
                let _ = write!(l, "{c:<w$}  ");
            }
        }
        l.trim_end().to_owned()
    };
    let _ = writeln!(o);
    let _ = writeln!(o, "{}", line(&header.map(str::to_owned)));
    for (p, r) in rec.pools.iter().zip(&rows) {
        let _ = writeln!(o, "{}", line(r));
        human_pool_details(o, rec, p);
    }
}

/// A pool's workloads, sizes, MIG configs, serving cap, why, and what else was weighed.
fn human_pool_details(o: &mut String, rec: &Recommendation, p: &RecPool) {
    let _ = writeln!(o, "  workloads: {}", p.workloads.join(", "));
    if let Some(line) = sizes_line(rec, p) {
        let _ = writeln!(o, "  {line}");
    }
    for c in &p.mig_configs {
        let _ = writeln!(
            o,
            "  mig config {}: {} on {} GPU(s)",
            c.name,
            c.layout
                .iter()
                .map(|(k, v)| format!("{k} x{v}"))
                .collect::<Vec<_>>()
                .join(" + "),
            c.gpus
        );
    }
    if let Some(u) = p.gpu_memory_utilization {
        let _ = writeln!(
            o,
            "  serving: gpu_memory_utilization = {} per instance",
            crate::core::num(u)
        );
    }
    let _ = writeln!(o, "  why: {}", p.why);
    for a in &p.considered {
        match (a.monthly_cost_usd, a.delta_usd) {
            (Some(c), Some(d)) => {
                let _ = writeln!(
                    o,
                    "  considered: {} {} {}: {} ({}{}; {})",
                    a.sku,
                    a.region,
                    a.capacity,
                    usd(c),
                    if d >= 0.0 { "+" } else { "" },
                    usd(d),
                    a.note
                );
            }
            _ => {
                let _ = writeln!(
                    o,
                    "  considered: {} {} {}: {}",
                    a.sku, a.region, a.capacity, a.note
                );
            }
        }
    }
    for c in &p.capacity_options {
        let _ = writeln!(
            o,
            "  option: {} {}: {}",
            c.capacity,
            usd(c.monthly_cost_usd),
            c.note
        );
    }
}

/// Cost per team and per workload.
fn human_costs(o: &mut String, rec: &Recommendation) {
    if rec.teams.is_empty() {
        return;
    }
    let _ = writeln!(o);
    let _ = writeln!(o, "Cost per team (namespace):");
    for t in &rec.teams {
        let _ = writeln!(o, "  {:<24} {:>14}", t.team, usd(t.monthly_cost_usd));
    }
    let _ = writeln!(o, "Cost per workload:");
    for w in &rec.workloads {
        let tokens = w
            .usd_per_million_tokens
            .map(|x| format!("  ({} per 1M tokens)", crate::core::rate(x)))
            .unwrap_or_default();
        // A workload split over pools (AKS profiles, a quota) names each.
        let pools = w.pool.as_ref().map_or_else(
            || "(not placed)".to_owned(),
            |p| {
                std::iter::once(p)
                    .chain(&w.also_pools)
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(", ")
            },
        );
        let _ = writeln!(
            o,
            "  {:<24} {:>14}  {pools}{tokens}",
            w.workload,
            usd(w.monthly_cost_usd)
        );
    }
}

/// Today's declared pools against the recommendation.
fn human_comparison(o: &mut String, rec: &Recommendation) {
    let Some(c) = &rec.comparison else {
        return;
    };
    let _ = writeln!(o);
    let _ = writeln!(
        o,
        "Today's declared pools: {} a month; recommended {}; {}{}",
        usd(c.today_monthly_cost_usd),
        usd(c.recommended_monthly_cost_usd),
        saving(c.saving_usd),
        if c.not_compared.is_empty() {
            String::new()
        } else {
            format!(" (not compared: {})", c.not_compared.join(", "))
        }
    );
    for ch in &c.changes {
        let _ = writeln!(
            o,
            "  {}: {} today, {} recommended{}; {}",
            ch.declared_pool,
            ch.today_monthly_cost_usd
                .map_or("not compared".to_owned(), usd),
            usd(ch.recommended_monthly_cost_usd),
            ch.saving_usd
                .map(|s| format!(" ({})", saving(s)))
                .unwrap_or_default(),
            ch.note
        );
    }
}

/// Workloads nothing can run, and the findings, located and with their help.
fn human_problems(o: &mut String, rec: &Recommendation) {
    if rec.unsatisfied.is_empty() && rec.findings.is_empty() {
        return;
    }
    let _ = writeln!(o);
    for u in &rec.unsatisfied {
        let _ = writeln!(o, "unsatisfied [{}]: {}", u.constraint, u.message);
    }
    for f in &rec.findings {
        let _ = writeln!(o, "{}[{}]: {}", f.severity, f.rule, f.message);
        if let (Some(file), Some(line), Some(col)) = (&f.file, f.line, f.column) {
            let _ = writeln!(o, "  --> {}:{line}:{col}", crate::core::printable(file));
        }
        if let Some(h) = &f.help {
            let _ = writeln!(o, "  help: {h}");
        }
        if let Some(s) = &f.suppressed {
            let _ = writeln!(o, "  (suppressed by an allow: {s})");
        }
    }
}

/// For the first size of a pool of several node sizes (pools sharing one `gpuplan.io/pool`
/// label), the pool's sizes and what they cost together; for its other sizes, the pool they
/// belong to.
fn sizes_line(rec: &Recommendation, p: &crate::engine::recommend::RecPool) -> Option<String> {
    if !p.one_of_several_sizes(&rec.pools) {
        return None;
    }
    let sizes: Vec<&crate::engine::recommend::RecPool> = rec
        .pools
        .iter()
        .filter(|q| q.pool_label == p.pool_label)
        .collect();
    if p.pool_label != p.name {
        return Some(format!(
            "pool label: {} (a node size of that pool)",
            p.pool_label
        ));
    }
    let total: f64 = sizes.iter().map(|q| q.monthly_cost_usd).sum();
    Some(format!(
        "pool label: {}, one pool of {} node sizes ({}), each workload on the size chosen for its shape: {} a month together",
        p.pool_label,
        sizes.len(),
        sizes
            .iter()
            .map(|q| format!("{} {}-{} nodes", q.sku, q.nodes.min, q.nodes.max))
            .collect::<Vec<_>>()
            .join(", "),
        usd(total)
    ))
}

pub(crate) fn markdown(rec: &Recommendation) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "### gpuplan recommendation: `{}`", rec.plan);
    let _ = writeln!(o);
    let _ = writeln!(
        o,
        "**{}** a month expected ({} at maximum), {} pool(s), {} in {}.",
        usd(rec.total_monthly_cost_usd),
        usd(rec.total_monthly_cost_at_max_usd),
        rec.pools.len(),
        rec.provider,
        rec.regions.join(", ")
    );
    let _ = writeln!(o);
    if let Some(b) = &rec.lower_bound {
        let _ = writeln!(o, "{}", bound_line(b));
        let _ = writeln!(o);
    }
    md_pools(&mut o, rec);
    md_teams(&mut o, rec);
    md_comparison(&mut o, rec);
    md_problems(&mut o, rec);
    o
}

/// The pools as a table, then each pool's why, sizes and alternatives.
fn md_pools(o: &mut String, rec: &Recommendation) {
    if rec.pools.is_empty() {
        return;
    }
    let _ = writeln!(
        o,
        "| pool | region | SKU | nodes | capacity | sharing | cost/month |"
    );
    let _ = writeln!(o, "|---|---|---|---|---|---|---:|");
    for p in &rec.pools {
        let _ = writeln!(
            o,
            "| `{}` | {} | `{}` ({} x{}) | {} | {} | {} | {} |",
            p.name,
            p.region,
            p.sku,
            p.gpu_model,
            p.gpus_per_node,
            nodes_cell(p),
            p.capacity,
            md(&sharing_cell(p)),
            usd(p.monthly_cost_usd)
        );
    }
    let _ = writeln!(o);
    for p in &rec.pools {
        let _ = writeln!(
            o,
            "- **`{}`** ({}): {}",
            p.name,
            p.workloads.join(", "),
            md(&p.why.to_string())
        );
        if let Some(line) = sizes_line(rec, p) {
            let _ = writeln!(o, "  - {}", md(&line));
        }
        for a in &p.considered {
            let cost = match (a.monthly_cost_usd, a.delta_usd) {
                (Some(c), Some(d)) => {
                    format!("{} ({}{})", usd(c), if d >= 0.0 { "+" } else { "" }, usd(d))
                }
                _ => "-".to_owned(),
            };
            let _ = writeln!(
                o,
                "  - considered `{}` {} {}: {}; {}",
                a.sku,
                a.region,
                a.capacity,
                cost,
                md(&a.note.to_string())
            );
        }
    }
    let _ = writeln!(o);
}

fn md_teams(o: &mut String, rec: &Recommendation) {
    if rec.teams.is_empty() {
        return;
    }
    let _ = writeln!(o, "| team | cost/month |");
    let _ = writeln!(o, "|---|---:|");
    for t in &rec.teams {
        let _ = writeln!(o, "| {} | {} |", t.team, usd(t.monthly_cost_usd));
    }
    let _ = writeln!(o);
}

/// Today's declared pools against the recommendation.
fn md_comparison(o: &mut String, rec: &Recommendation) {
    let Some(c) = &rec.comparison else {
        return;
    };
    let _ = writeln!(
        o,
        "Today's declared pools cost {}; the recommendation {} ({}).{}",
        usd(c.today_monthly_cost_usd),
        usd(c.recommended_monthly_cost_usd),
        saving(c.saving_usd),
        if c.not_compared.is_empty() {
            String::new()
        } else {
            format!(
                " Not compared: {}.",
                c.not_compared
                    .iter()
                    .map(|n| crate::core::format::md_code(n))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        }
    );
    let _ = writeln!(o);
    let _ = writeln!(
        o,
        "| declared pool | today | recommended | saving | change |"
    );
    let _ = writeln!(o, "|---|---:|---:|---:|---|");
    for ch in &c.changes {
        let _ = writeln!(
            o,
            "| `{}` | {} | {} | {} | {} |",
            ch.declared_pool,
            ch.today_monthly_cost_usd.map_or("-".to_owned(), usd),
            usd(ch.recommended_monthly_cost_usd),
            ch.saving_usd.map_or("-".to_owned(), usd),
            md(&ch.note.to_string())
        );
    }
    let _ = writeln!(o);
}

/// Workloads nothing can run, and the findings.
fn md_problems(o: &mut String, rec: &Recommendation) {
    for u in &rec.unsatisfied {
        let _ = writeln!(
            o,
            "- :x: **{}**: {}",
            u.constraint,
            md(&u.message.to_string())
        );
    }
    for f in &rec.findings {
        let allowed = f.suppressed.as_ref().map_or(String::new(), |s| {
            format!(" (suppressed by an allow: {})", md(&s.to_string()))
        });
        let _ = writeln!(
            o,
            "- **{}** `{}`: {}{allowed}",
            f.severity,
            f.rule,
            md(&f.message.to_string())
        );
    }
}

/// The comment `--write-plan` puts beside a workload it writes as dedicated: what the plan
/// declared, and the recommender's reason in the plan's own terms.
impl std::fmt::Display for crate::render::write_plan::Dropped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        use crate::engine::recommend::reason::NotShared;
        write!(f, "was \"{}\": ", self.was.as_str())?;
        match self.cause {
            NotShared::ManyGpus(n) => write!(
                f,
                "a replica asks for {n} GPUs, which time-slicing cannot share (GP003)"
            ),
            NotShared::NoRoom(_) => f.write_str("no allowed GPU holds two of its replicas"),
            NotShared::Cheaper => {
                f.write_str("a GPU of its own costs less than sharing one of the allowed sizes")
            }
        }
    }
}

#[cfg(test)]
mod dropped_tests {
    use crate::core::Sharing;
    use crate::engine::recommend::reason::NotShared;
    use crate::render::write_plan::Dropped;

    /// The comment as `--write-plan` wrote it when it re-derived the cause from the plan's
    /// `gpus`; the cause is now the recommender's own.
    #[test]
    fn a_dropped_share_reads_as_before() {
        let d = |was, cause| Dropped { was, cause }.to_string();
        assert_eq!(
            d(Sharing::TimeSlicing, NotShared::ManyGpus(2)),
            "was \"time-slicing\": a replica asks for 2 GPUs, which time-slicing cannot share (GP003)"
        );
        assert_eq!(
            d(Sharing::Mps, NotShared::NoRoom(40.0)),
            "was \"mps\": no allowed GPU holds two of its replicas"
        );
    }
}
