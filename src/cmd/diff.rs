//! `gpuplan diff BASE HEAD` (or `--base-ref REF HEAD`): what changed between two versions of
//! a plan and what the change does to the recommended monthly cost, per pool, per team and
//! in total; `--fail-on-increase 10%` or `--fail-on-increase 500` (USD) guards a pull request.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::Path;
use std::sync::Arc;

use serde::Serialize;

use crate::cli::{DiffArgs, Global, ReportFormat};
use crate::engine::cost::usd;
use crate::engine::recommend::{self, Recommendation};
use crate::exit;
use crate::output::Out;
use crate::plan::{self, Plan};
use crate::source::SourceFile;

pub const SCHEMA: &str = "gpuplan.diff/v1";

/// A cost limit on a change: a share of the base cost or an amount.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Guard {
    Percent(f64),
    Usd(f64),
}

impl Guard {
    pub fn parse(s: &str) -> Result<Guard, String> {
        let t = s.trim();
        let bad = || {
            format!("`--fail-on-increase {s}`: expected a percentage such as `10%` or an amount in USD such as `500`")
        };
        if let Some(p) = t.strip_suffix('%') {
            let v: f64 = p.trim().parse().map_err(|_| bad())?;
            return (v.is_finite() && v >= 0.0)
                .then_some(Guard::Percent(v))
                .ok_or_else(bad);
        }
        let v: f64 = t
            .trim_start_matches('$')
            .replace(',', "")
            .parse()
            .map_err(|_| bad())?;
        (v.is_finite() && v >= 0.0)
            .then_some(Guard::Usd(v))
            .ok_or_else(bad)
    }

    /// Whether a change from `before` to `after` goes past the limit.
    pub fn exceeded(self, before: f64, after: f64) -> bool {
        let delta = after - before;
        match self {
            Guard::Usd(limit) => delta > limit + 0.005,
            Guard::Percent(p) if before > 0.0 => delta / before * 100.0 > p + 1e-9,
            // Anything from nothing is an infinite increase.
            Guard::Percent(_) => delta > 0.005,
        }
    }
}

#[derive(Debug, Serialize)]
pub struct Side {
    pub plan: String,
    pub source: String,
    pub total_monthly_cost_usd: f64,
    pub unsatisfied: Vec<String>,
}

#[derive(Debug, Serialize, Default)]
pub struct Changes {
    pub added: Vec<String>,
    pub removed: Vec<String>,
    pub changed: Vec<Changed>,
}

#[derive(Debug, Serialize)]
pub struct Changed {
    pub name: String,
    pub keys: Vec<String>,
}

#[derive(Debug, Serialize)]
pub struct CostLine {
    pub name: String,
    pub before_usd: f64,
    pub after_usd: f64,
    pub delta_usd: f64,
}

#[derive(Debug, Serialize)]
pub struct Diff {
    pub schema: &'static str,
    pub base: Side,
    pub head: Side,
    pub delta_usd: f64,
    pub delta_pct: Option<f64>,
    pub settings: Vec<String>,
    pub workloads: Changes,
    pub pools: Changes,
    pub recommended_pools: Vec<CostLine>,
    pub teams: Vec<CostLine>,
    pub guardrail: Option<Guardrail>,
}

#[derive(Debug, Serialize)]
pub struct Guardrail {
    pub limit: String,
    pub exceeded: bool,
}

fn cents(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

/// Named tables of an array (`[[workload]]`, `[[pool]]`) compared by name and key.
fn compare_tables(base: &toml::Table, head: &toml::Table, key: &str) -> Changes {
    let named = |t: &toml::Table| -> BTreeMap<String, toml::Table> {
        t.get(key)
            .and_then(|v| v.as_array())
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_table())
                    .filter_map(|t| {
                        let n = t.get("name")?.as_str()?.to_owned();
                        Some((n, t.clone()))
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    let (b, h) = (named(base), named(head));
    let mut c = Changes::default();
    for (name, ht) in &h {
        match b.get(name) {
            None => c.added.push(name.clone()),
            Some(bt) => {
                let keys: BTreeSet<&String> = bt.keys().chain(ht.keys()).collect();
                let changed: Vec<String> = keys
                    .into_iter()
                    .filter(|k| bt.get(*k) != ht.get(*k))
                    .cloned()
                    .collect();
                if !changed.is_empty() {
                    c.changed.push(Changed {
                        name: name.clone(),
                        keys: changed,
                    });
                }
            }
        }
    }
    c.removed = b.keys().filter(|n| !h.contains_key(*n)).cloned().collect();
    c
}

fn settings(base: &toml::Table, head: &toml::Table) -> Vec<String> {
    let mut out = Vec::new();
    for section in ["plan", "cluster", "rules"] {
        let empty = toml::Table::new();
        let b = base
            .get(section)
            .and_then(|v| v.as_table())
            .unwrap_or(&empty);
        let h = head
            .get(section)
            .and_then(|v| v.as_table())
            .unwrap_or(&empty);
        let keys: BTreeSet<&String> = b.keys().chain(h.keys()).collect();
        for k in keys {
            if b.get(k) != h.get(k) {
                out.push(format!("{section}.{k}"));
            }
        }
    }
    for array in ["quota", "decision", "allow"] {
        if base.get(array) != head.get(array) {
            out.push(format!("[[{array}]]"));
        }
    }
    out
}

fn lines(before: &BTreeMap<String, f64>, after: &BTreeMap<String, f64>) -> Vec<CostLine> {
    let names: BTreeSet<&String> = before.keys().chain(after.keys()).collect();
    names
        .into_iter()
        .map(|n| {
            let b = before.get(n).copied().unwrap_or(0.0);
            let a = after.get(n).copied().unwrap_or(0.0);
            CostLine {
                name: n.clone(),
                before_usd: cents(b),
                after_usd: cents(a),
                delta_usd: cents(a - b),
            }
        })
        .filter(|l| l.delta_usd.abs() >= 0.005 || l.before_usd == 0.0 || l.after_usd == 0.0)
        .collect()
}

fn side(p: &Plan, r: &Recommendation) -> Side {
    Side {
        plan: p.name().to_owned(),
        source: p.file.name.clone(),
        total_monthly_cost_usd: r.total_monthly_cost_usd,
        unsatisfied: r.unsatisfied.iter().map(|u| u.workload.clone()).collect(),
    }
}

pub fn compute(base: &Plan, head: &Plan, rb: &Recommendation, rh: &Recommendation) -> Diff {
    let parse = |p: &Plan| toml::from_str::<toml::Table>(&p.file.text).unwrap_or_default();
    let (tb, th) = (parse(base), parse(head));
    let pools = |r: &Recommendation| -> BTreeMap<String, f64> {
        r.pools
            .iter()
            .map(|p| (p.name.clone(), p.monthly_cost_usd))
            .collect()
    };
    let teams = |r: &Recommendation| -> BTreeMap<String, f64> {
        r.teams
            .iter()
            .map(|t| (t.team.clone(), t.monthly_cost_usd))
            .collect()
    };
    let delta = rh.total_monthly_cost_usd - rb.total_monthly_cost_usd;
    Diff {
        schema: SCHEMA,
        base: side(base, rb),
        head: side(head, rh),
        delta_usd: cents(delta),
        delta_pct: (rb.total_monthly_cost_usd > 0.0)
            .then(|| (delta / rb.total_monthly_cost_usd * 10_000.0).round() / 100.0),
        settings: settings(&tb, &th),
        workloads: compare_tables(&tb, &th, "workload"),
        pools: compare_tables(&tb, &th, "pool"),
        recommended_pools: lines(&pools(rb), &pools(rh)),
        teams: lines(&teams(rb), &teams(rh)),
        guardrail: None,
    }
}

/// Load, validate and recommend one plan file; errors are printed.
fn load(g: &Global, file: Arc<SourceFile>, out: &Out) -> Result<(Plan, Recommendation), u8> {
    let (p, catalog) = super::validate_file(g, file, out)?;
    let r = recommend::recommend(&p, &catalog);
    Ok((p, r))
}

fn read(path: &Path, out: &Out) -> Result<Arc<SourceFile>, u8> {
    plan::load::read(path).map_err(|d| {
        out.stderr(&crate::diag::output::human(&[*d], out.color));
        exit::INPUT
    })
}

/// The plan at `path` as committed at `reference`: `git show REF:./NAME`, run in the
/// file's directory so the path resolves from there.
fn read_git(reference: &str, path: &Path, out: &Out) -> Result<Arc<SourceFile>, u8> {
    if reference.starts_with('-') {
        out.stderr(&format!(
            "error: `--base-ref {reference}` is not a git revision\n"
        ));
        return Err(exit::INPUT);
    }
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map_or(String::new(), |n| n.to_string_lossy().into_owned());
    let spec = format!("{reference}:./{name}");
    let output = std::process::Command::new("git")
        .args(["show", &spec, "--"])
        .current_dir(dir)
        .output();
    match output {
        Ok(o) if o.status.success() => match String::from_utf8(o.stdout) {
            Ok(text) => Ok(SourceFile::new(
                format!("{reference}:{}", path.display()),
                text,
            )),
            Err(_) => {
                out.stderr(&format!("error: `{spec}` is not UTF-8 text\n"));
                Err(exit::INPUT)
            }
        },
        Ok(o) => {
            out.stderr(&format!(
                "error: cannot read `{}` at `{reference}` from git: {}\n",
                path.display(),
                String::from_utf8_lossy(&o.stderr).trim()
            ));
            Err(exit::INPUT)
        }
        Err(e) => {
            out.stderr(&format!("error: cannot run git: {e}\n"));
            Err(exit::INPUT)
        }
    }
}

/// One line for a pull-request comment: the recommended cost before and after.
pub fn cost_delta_line(g: &Global, base: &Path, head: &Plan, out: &Out) -> Result<String, u8> {
    let (bp, rb) = load(g, read(base, out)?, out)?;
    let catalog = super::load_catalog(g, &[head.provider()], out)?;
    let rh = recommend::recommend(head, &catalog);
    let d = compute(&bp, head, &rb, &rh);
    Ok(delta_sentence(&d))
}

fn delta_sentence(d: &Diff) -> String {
    format!(
        "**Recommended monthly cost:** {} → {} ({}{}{})",
        usd(d.base.total_monthly_cost_usd),
        usd(d.head.total_monthly_cost_usd),
        if d.delta_usd >= 0.0 { "+" } else { "" },
        usd(d.delta_usd),
        d.delta_pct
            .map(|p| format!(", {}{p:.2}%", if p >= 0.0 { "+" } else { "" }))
            .unwrap_or_default()
    )
}

pub fn run(g: &Global, args: &DiffArgs, out: &Out) -> u8 {
    let guard = match args.fail_on_increase.as_deref().map(Guard::parse) {
        Some(Err(e)) => {
            out.stderr(&format!("error: {e}\n"));
            return exit::INPUT;
        }
        Some(Ok(gd)) => Some(gd),
        None => None,
    };
    let (base_file, head_path) = match (&args.base_ref, args.plans.as_slice()) {
        (Some(r), [head]) => match read_git(r, head, out) {
            Ok(f) => (f, head),
            Err(c) => return c,
        },
        (None, [base, head]) => match read(base, out) {
            Ok(f) => (f, head),
            Err(c) => return c,
        },
        (Some(_), _) => {
            out.stderr("error: with `--base-ref`, give one plan: the head version\n");
            return exit::INPUT;
        }
        (None, _) => {
            out.stderr("error: give two plans, BASE and HEAD, or `--base-ref REF HEAD`\n");
            return exit::INPUT;
        }
    };
    let head_file = match read(head_path, out) {
        Ok(f) => f,
        Err(c) => return c,
    };
    let (bp, rb) = match load(g, base_file, out) {
        Ok(x) => x,
        Err(c) => return c,
    };
    let (hp, rh) = match load(g, head_file, out) {
        Ok(x) => x,
        Err(c) => return c,
    };
    let mut d = compute(&bp, &hp, &rb, &rh);
    let exceeded = guard.is_some_and(|gd| {
        gd.exceeded(d.base.total_monthly_cost_usd, d.head.total_monthly_cost_usd)
    });
    if let Some(limit) = &args.fail_on_increase {
        d.guardrail = Some(Guardrail {
            limit: limit.clone(),
            exceeded,
        });
    }
    match args.format {
        ReportFormat::Json => {
            out.stdout(&(serde_json::to_string_pretty(&d).unwrap_or_default() + "\n"))
        }
        ReportFormat::Human => out.stdout(&human(&d)),
        ReportFormat::Markdown => out.stdout(&markdown(&d)),
    }
    if exceeded {
        out.stderr(&format!(
            "error: the recommended monthly cost rises by {} ({}), past `--fail-on-increase {}`\n",
            usd(d.delta_usd),
            d.delta_pct
                .map_or("from nothing".to_owned(), |p| format!("{p:+.2}%")),
            args.fail_on_increase.as_deref().unwrap_or("")
        ));
        exit::FINDINGS
    } else {
        exit::OK
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
        let _ = writeln!(o, "  ~ {what} `{}`: {}", ch.name, ch.keys.join(", "));
    }
}

pub fn human(d: &Diff) -> String {
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
    let _ = writeln!(o);
    let _ = writeln!(o, "Plan changes:");
    for s in &d.settings {
        let _ = writeln!(o, "  ~ {s}");
    }
    changes_text(&mut o, "workload", &d.workloads);
    changes_text(&mut o, "declared pool", &d.pools);
    for (title, ls) in [
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
        let _ = writeln!(
            o,
            "\nguardrail --fail-on-increase {}: {}",
            gd.limit,
            if gd.exceeded { "exceeded" } else { "within" }
        );
    }
    o
}

pub fn markdown(d: &Diff) -> String {
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
            "{} guardrail `--fail-on-increase {}`: {}",
            if gd.exceeded {
                ":x:"
            } else {
                ":white_check_mark:"
            },
            gd.limit,
            if gd.exceeded { "exceeded" } else { "within" }
        );
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guard_parses_percent_and_usd() {
        assert_eq!(Guard::parse("10%"), Ok(Guard::Percent(10.0)));
        assert_eq!(Guard::parse("$1,500"), Ok(Guard::Usd(1500.0)));
        assert!(Guard::parse("ten").is_err());
        assert!(Guard::parse("-5%").is_err());
        assert!(Guard::Percent(10.0).exceeded(100.0, 110.01));
        assert!(!Guard::Percent(10.0).exceeded(100.0, 110.0));
        assert!(Guard::Usd(50.0).exceeded(100.0, 151.0));
        assert!(!Guard::Usd(50.0).exceeded(100.0, 90.0));
        assert!(Guard::Percent(10.0).exceeded(0.0, 1.0));
    }
}
