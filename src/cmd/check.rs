//! `gpuplan check PLAN...`

use std::collections::BTreeSet;

use crate::cli::{CheckArgs, CheckFormat, DenyWhat, Global};
use crate::core::exit;
use crate::diag::{baseline, Diag};
use crate::output::Out;
use crate::plan::{self, Date};
use crate::report::{codequality, findings as output, github, junit, markdown, sarif};
use crate::rules::{self, Level, Levels};

use super::{CmdError, CmdResult};

fn levels(args: &CheckArgs) -> CmdResult<Levels> {
    let mut l = Levels {
        deny_warnings: args.deny.contains(&DenyWhat::Warnings),
        ..Levels::default()
    };
    for (ids, level) in [
        (&args.allow_rule, Level::Allow),
        (&args.warn_rule, Level::Warn),
        (&args.deny_rule, Level::Deny),
    ] {
        for id in ids {
            let rule = rules::by_id(id).ok_or_else(|| {
                CmdError::Usage(format!("unknown rule `{id}` (see `gpuplan explain --all`)"))
            })?;
            l.overrides.insert(rule.id(), level);
        }
    }
    Ok(l)
}

pub(crate) fn run(g: &Global, args: &CheckArgs, out: &Out) -> CmdResult {
    if args.live {
        for p in &args.plans {
            super::refresh::live(g, p, out)?;
        }
    }
    let levels = levels(args)?;
    let today = match &args.today {
        Some(s) => Date::parse(s)
            .ok_or_else(|| CmdError::Usage(format!("`--today {s}` is not a date (YYYY-MM-DD)")))?,
        None => Date::today(),
    };
    let guard = args
        .fail_on_increase
        .as_deref()
        .map(crate::engine::diff::Guard::parse)
        .transpose()?;
    if guard.is_some() && args.base.is_none() && args.base_ref.is_none() {
        return Err(CmdError::Usage(
            "`--fail-on-increase` compares with a base: give `--base PLAN` or `--base-ref REF`"
                .into(),
        ));
    }
    let mut c = check_all(g, args, out, today, &levels)?;
    if let Some(path) = &args.write_baseline {
        return write_baseline(args, out, path, &c.errors, &c.findings);
    }
    let mut notes = Vec::new();
    if let Some(path) = &args.baseline {
        // A repository adopting gpuplan has no baseline until one is written on main: none
        // is an empty one (every finding new), as a missing base is an empty plan.
        if crate::fsio::absent(path) {
            notes.push(format!(
                "no baseline at `{}` yet: every finding counts as new (`--write-baseline` records one)",
                crate::core::shown(path)
            ));
        } else {
            let b = baseline::read(path)?;
            let n = baseline::apply(&mut c.findings, &b, path);
            out.detail(&format!("{n} finding(s) are in the baseline"));
        }
    }
    let cost = compare(g, args, out, &c, guard)?;
    notes.extend(cost.as_ref().and_then(|k| k.missing.clone()));
    for n in &notes {
        out.info(&format!("note: {n}"));
    }
    let failed: Vec<String> = cost.as_ref().map(|k| k.failed.clone()).unwrap_or_default();
    print(args, out, &c, &levels, cost.as_ref(), &notes)?;
    for why in &failed {
        out.stderr(&format!("error: {why}\n"));
    }
    // Input errors were reported with the findings, in the format asked for.
    Ok(if !c.errors.is_empty() {
        exit::INPUT
    } else if c.findings.iter().any(Diag::is_blocking) || !failed.is_empty() {
        exit::FINDINGS
    } else {
        exit::OK
    })
}

/// The plan against its base: what changed and what it costs, and the limits it broke.
pub(crate) struct Cost {
    pub(crate) diff: crate::engine::diff::Diff,
    /// Why the base is an empty plan, where it is.
    pub(crate) missing: Option<String>,
    /// Each limit the rise broke, said as the job's reason to fail.
    pub(crate) failed: Vec<String>,
}

/// With `--base` or `--base-ref` and one plan that loaded: the comparison, held to
/// `--fail-on-increase`.
fn compare(
    g: &Global,
    args: &CheckArgs,
    out: &Out,
    c: &Checked,
    guard: Option<crate::engine::diff::Guard>,
) -> CmdResult<Option<Cost>> {
    use super::diff::{read_base, read_git, Base};
    if args.base.is_none() && args.base_ref.is_none() {
        return Ok(None);
    }
    let [path] = args.plans.as_slice() else {
        return Err(CmdError::Usage(
            "`--base` and `--base-ref` compare one plan; give exactly one PLAN".into(),
        ));
    };
    // A plan that did not load has no cost to compare: its input errors are the report.
    let [head] = c.heads.as_slice() else {
        return Ok(None);
    };
    let (found, at) = match (&args.base, &args.base_ref) {
        (Some(base), _) => (read_base(base)?, format!("`{}`", crate::core::shown(base))),
        (None, Some(r)) => (read_git(r, path)?, format!("`{r}`")),
        (None, None) => return Ok(None),
    };
    let base = Base::of(found, &head.file, &at);
    let mut diff = super::diff::compare(g, &base, head, out)?;
    let mut failed = Vec::new();
    if let (Some(gd), Some(limit)) = (guard, args.fail_on_increase.as_deref()) {
        for h in super::diff::held(&mut diff, &base, gd, limit, args.guard, out) {
            failed.push(format!(
                "{}, past `--fail-on-increase {limit}`",
                crate::report::diff::rise(&diff, h)
            ));
        }
    }
    Ok(Some(Cost {
        diff,
        missing: base.missing,
        failed,
    }))
}

/// Every plan read, validated and checked: load errors, findings, the plans that loaded, and
/// every plan by the name its findings carry (for the reports that list plans, JUnit).
struct Checked {
    errors: Vec<Diag>,
    findings: Vec<Diag>,
    heads: Vec<crate::plan::Plan>,
    names: Vec<String>,
}

fn check_all(
    g: &Global,
    args: &CheckArgs,
    out: &Out,
    today: Date,
    levels: &Levels,
) -> CmdResult<Checked> {
    // Parse every file first, so the catalog is loaded once for the providers they use.
    let mut errors: Vec<Diag> = Vec::new();
    let mut parsed = Vec::new();
    let mut names = Vec::new();
    for path in &args.plans {
        let file = match plan::load::read(path) {
            Ok(file) => file,
            Err(d) => {
                names.push(d.file.stable_name());
                errors.push(*d);
                continue;
            }
        };
        names.push(file.stable_name());
        match plan::load::parse(&file) {
            Err(ds) => errors.extend(ds),
            Ok(raw) => parsed.push((file, raw)),
        }
    }
    let providers: BTreeSet<_> = parsed.iter().map(|(_, r)| r.provider()).collect();
    let providers: Vec<_> = providers.into_iter().collect();
    let catalog = super::load_catalog(g, &providers, out)?;
    for s in catalog.sources.iter() {
        out.detail(&format!(
            "data: {} ({}), as of {}: {}",
            s.file, s.kind, s.as_of, s.source
        ));
    }
    let mut findings = Vec::new();
    let mut heads = Vec::new();
    for (file, raw) in parsed {
        match crate::plan::Plan::from_parsed(file, raw, &catalog) {
            Err(ds) => errors.extend(ds),
            Ok(p) => {
                findings.extend(rules::check(&p, &catalog, today, levels));
                heads.push(p);
            }
        }
    }
    crate::diag::sort(&mut errors);
    Ok(Checked {
        errors,
        findings,
        heads,
        names,
    })
}

/// `--write-baseline`: the findings as the baseline, only from input that loaded whole.
fn write_baseline(
    args: &CheckArgs,
    out: &Out,
    path: &std::path::Path,
    errors: &[Diag],
    findings: &[Diag],
) -> CmdResult {
    if !errors.is_empty() {
        out.stderr(&output::human(errors, out.color));
        return Err(CmdError::Usage(
            "the baseline was not written: fix the input first".into(),
        ));
    }
    let b = baseline::build(findings);
    let inputs: Vec<&std::path::Path> = args.plans.iter().map(|p| p.as_path()).collect();
    if super::write_output(out, path, &baseline::to_json(&b), &inputs)? {
        out.info(&format!(
            "wrote {} finding(s) to the baseline `{}`",
            b.findings.len(),
            crate::core::shown(path)
        ));
    }
    Ok(exit::OK)
}

/// The findings and load errors in the format asked for.
fn print(
    args: &CheckArgs,
    out: &Out,
    c: &Checked,
    levels: &Levels,
    cost: Option<&Cost>,
    notes: &[String],
) -> CmdResult<()> {
    let (findings, errors, names) = (&c.findings, &c.errors, &c.names);
    match args.format {
        CheckFormat::Json => out.stdout(&output::json(findings, errors)),
        CheckFormat::Sarif => out.stdout(&sarif::sarif(findings, errors, args.docs_url.as_deref())),
        CheckFormat::Junit => out.stdout(&junit::junit(names, findings, errors, levels)),
        CheckFormat::Gitlab => out.stdout(&codequality::codequality(findings, errors)),
        CheckFormat::Github => {
            out.stdout_commands(&github::annotations(findings, errors));
            out.info(&output::summary_with_errors(
                findings,
                errors,
                args.plans.len(),
            ));
        }
        CheckFormat::Markdown => {
            out.stdout(&markdown::comment(
                findings,
                errors,
                args.plans.len(),
                args.link_base.as_deref(),
                cost.map(|k| markdown::Compared {
                    delta: crate::report::diff::delta_sentence(&k.diff),
                    changes: crate::report::diff::changes(&k.diff),
                    failed: &k.failed,
                }),
                notes,
            ));
        }
        CheckFormat::Human => {
            if !errors.is_empty() {
                out.stderr(&output::human(errors, out.color));
            }
            let shown: Vec<Diag> = findings
                .iter()
                .filter(|d| !out.quiet || d.is_blocking())
                .cloned()
                .collect();
            out.stdout(&output::human(&shown, out.color));
            out.info(&output::summary_with_errors(
                findings,
                errors,
                args.plans.len(),
            ));
        }
    }
    Ok(())
}
