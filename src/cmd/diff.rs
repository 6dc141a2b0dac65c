//! `gpuplan diff BASE HEAD` (or `--base-ref REF HEAD`): what changed between two versions of
//! a plan and what the change does to the recommended monthly cost, per pool, per team and
//! in total; `--fail-on-increase 10%` or `--fail-on-increase 500` (USD) guards a pull request.

use std::path::Path;
use std::sync::Arc;

use crate::cli::{DiffArgs, Global, ReportFormat};
use crate::core::exit;
use crate::core::usd;
use crate::engine::diff::{compute, Guard, Guardrail};
use crate::engine::recommend::{self, Recommendation};
use crate::output::Out;
use crate::plan::{self, Plan};
use crate::report::diff::{delta_sentence, human, markdown};
use crate::source::SourceFile;

/// Load, validate and recommend one plan file; errors are printed.
fn load(g: &Global, file: Arc<SourceFile>, out: &Out) -> Result<(Plan, Recommendation), u8> {
    let (p, catalog) = super::validate_file(g, file, out)?;
    let r = recommend::recommend(&p, &catalog);
    Ok((p, r))
}

fn read(path: &Path, out: &Out) -> Result<Arc<SourceFile>, u8> {
    plan::load::read(path).map_err(|d| {
        out.stderr(&crate::report::findings::human(&[*d], out.color));
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
pub(crate) fn cost_delta_line(
    g: &Global,
    base: &Path,
    head: &Plan,
    out: &Out,
) -> Result<String, u8> {
    let (bp, rb) = load(g, read(base, out)?, out)?;
    let catalog = super::load_catalog(g, &[head.provider()], out)?;
    let rh = recommend::recommend(head, &catalog);
    let d = compute(&bp, head, &rb, &rh);
    Ok(delta_sentence(&d))
}

pub(crate) fn run(g: &Global, args: &DiffArgs, out: &Out) -> u8 {
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
