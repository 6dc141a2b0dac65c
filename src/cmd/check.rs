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
    let mut c = check_all(g, args, out, today, &levels)?;
    if let Some(path) = &args.write_baseline {
        return write_baseline(args, out, path, &c.errors, &c.findings);
    }
    if let Some(path) = &args.baseline {
        let b = baseline::read(path)?;
        let n = baseline::apply(&mut c.findings, &b, path);
        out.detail(&format!("{n} finding(s) are in the baseline"));
    }
    print(g, args, out, &c, &levels)?;
    // Input errors were reported with the findings, in the format asked for.
    Ok(if !c.errors.is_empty() {
        exit::INPUT
    } else if c.findings.iter().any(Diag::is_blocking) {
        exit::FINDINGS
    } else {
        exit::OK
    })
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
fn print(g: &Global, args: &CheckArgs, out: &Out, c: &Checked, levels: &Levels) -> CmdResult<()> {
    let (findings, errors, names, heads) = (&c.findings, &c.errors, &c.names, &c.heads);
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
            let delta = match (&args.base, heads.as_slice()) {
                (Some(base), [head]) => Some(super::diff::cost_delta_line(g, base, head, out)?),
                (Some(_), _) => {
                    return Err(CmdError::Usage(
                        "`--base` compares one plan; give exactly one PLAN".into(),
                    ))
                }
                (None, _) => None,
            };
            out.stdout(&markdown::comment(
                findings,
                errors,
                args.plans.len(),
                args.link_base.as_deref(),
                delta.as_deref(),
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
