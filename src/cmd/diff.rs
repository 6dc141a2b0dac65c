//! `gpuplan diff BASE HEAD` (or `--base-ref REF HEAD`): what changed between two versions of
//! a plan and what the change does to the recommended monthly cost, per pool, per team and
//! in total; `--fail-on-increase 10%` or `--fail-on-increase 500` (USD) guards a pull request.

use std::path::Path;
use std::sync::Arc;

use crate::cli::GuardWhat;
use crate::cli::{DiffArgs, Global, ReportFormat};
use crate::core::exit;
use crate::engine::diff::{compute, Guard, Version, Watch};
use crate::engine::recommend::{self, Recommendation};
use crate::output::Out;
use crate::plan::{self, Plan};
use crate::report::diff::rise;
use crate::report::diff::{human, markdown};
use crate::source::SourceFile;

use super::{CmdError, CmdResult};

/// Load, validate and recommend one plan file.
fn load(
    g: &Global,
    file: Arc<SourceFile>,
    out: &Out,
) -> CmdResult<(Plan, Recommendation, crate::catalog::Catalog)> {
    let (p, catalog) = super::validate_file(g, file, out)?;
    let r = recommend::recommend(&p, &catalog);
    Ok((p, r, catalog))
}

fn read(path: &Path) -> CmdResult<Arc<SourceFile>> {
    plan::load::read(path).map_err(|d| CmdError::Located(vec![*d]))
}

/// The base a pull request compares with, where the base branch has no plan yet: the head's
/// `version` and `[plan]` table alone (its provider, regions and month), so every workload
/// and pool of the head is new and the base costs nothing. Infracost reads a missing base
/// the same way.
pub(crate) fn empty_base(head: &SourceFile, named: &str) -> Arc<SourceFile> {
    let mut text = String::new();
    if let Ok(doc) = head.text.parse::<toml_edit::DocumentMut>() {
        let mut kept = toml_edit::DocumentMut::new();
        for key in ["version", "plan"] {
            if let Some(item) = doc.get(key) {
                kept.insert(key, item.clone());
            }
        }
        text = kept.to_string();
    }
    SourceFile::new(named, text)
}

/// A base that may be missing: the plan at `path`, or `None` where no file is there.
pub(crate) fn read_base(path: &Path) -> CmdResult<Option<Arc<SourceFile>>> {
    if crate::fsio::absent(path) {
        return Ok(None);
    }
    read(path).map(Some)
}

/// What a pull request's base is: the plan as the base had it, or nothing yet.
pub(crate) struct Base {
    pub(crate) file: Arc<SourceFile>,
    /// The base had no plan: `file` is [`empty_base`], and the reason is said.
    pub(crate) missing: Option<String>,
}

impl Base {
    /// From a read that may have found nothing, with the head to make an empty base of.
    pub(crate) fn of(found: Option<Arc<SourceFile>>, head: &SourceFile, at: &str) -> Base {
        match found {
            Some(file) => Base {
                file,
                missing: None,
            },
            None => Base {
                file: empty_base(head, &format!("{at} (no plan)")),
                missing: Some(format!(
                    "{at} has no `{}`: the plan is new, compared with an empty one (every workload and pool added, nothing to grow from)",
                    crate::core::printable(&head.name)
                )),
            },
        }
    }
}

/// The plan at `path` as committed at `reference`: `git show REF:./NAME`, run in the
/// file's directory so the path resolves from there.
pub(crate) fn read_git(reference: &str, path: &Path) -> CmdResult<Option<Arc<SourceFile>>> {
    // An empty ref would make `git show :./NAME` read the index (the staged plan, usually
    // the head itself: the guardrail would compare the plan with itself and pass); an
    // option-like one would be read by git as an option; a `:` or a control character
    // changes what `REF:PATH` names.
    if reference.trim().is_empty()
        || reference.starts_with('-')
        || reference.contains(':')
        || reference.chars().any(char::is_control)
    {
        return Err(CmdError::Usage(format!(
            "`--base-ref {}` is not a git revision (give a branch, tag or commit, e.g. `origin/main`)",
            crate::core::printable(reference)
        )));
    }
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map_or(String::new(), |n| n.to_string_lossy().into_owned());
    let spec = format!("{reference}:./{name}");
    let mut child = std::process::Command::new("git")
        .args(["show", &spec, "--"])
        .current_dir(dir)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| CmdError::Usage(format!("cannot run git: {e}")))?;
    // The plan's own size limit, whichever way it is read: no more than one byte past it.
    let mut bytes = Vec::new();
    if let Some(so) = child.stdout.take() {
        std::io::Read::read_to_end(
            &mut std::io::Read::take(so, plan::load::MAX_PLAN_BYTES as u64 + 1),
            &mut bytes,
        )
        .map_err(|e| CmdError::Usage(format!("cannot read from git: {e}")))?;
    }
    let too_large = bytes.len() > plan::load::MAX_PLAN_BYTES;
    if too_large {
        let _ = child.kill();
    }
    let o = child
        .wait_with_output()
        .map_err(|e| CmdError::Usage(format!("cannot run git: {e}")))?;
    if !too_large && !o.status.success() {
        // A revision git knows that lacks the file: the plan is new there.
        if revision_exists(reference, dir) {
            return Ok(None);
        }
        return Err(CmdError::Usage(format!(
            "cannot read `{}` at `{reference}` from git: {} (is `{reference}` a revision this clone has? a shallow checkout needs the base fetched, e.g. `fetch-depth: 0`)",
            crate::core::printable(&path.display().to_string()),
            crate::core::printable(String::from_utf8_lossy(&o.stderr).trim())
        )));
    }
    plan::load::from_bytes(format!("{reference}:{}", path.display()), bytes)
        .map(Some)
        .map_err(|d| CmdError::Located(vec![*d]))
}

/// Whether `reference` names a commit in the repository around `dir`.
fn revision_exists(reference: &str, dir: &Path) -> bool {
    std::process::Command::new("git")
        .args(["rev-parse", "--verify", "--quiet", "--end-of-options"])
        .arg(format!("{reference}^{{commit}}"))
        .current_dir(dir)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Which costs `--guard` holds to `--fail-on-increase`, for `diff` and `check` alike.
fn watch(g: GuardWhat) -> Watch {
    match g {
        GuardWhat::Recommended => Watch::Recommended,
        GuardWhat::Declared => Watch::Declared,
        GuardWhat::Both => Watch::Both,
    }
}

/// The figures a change took past `--fail-on-increase`. A plan the base did not have has no
/// cost to grow from: a share of nothing limits nothing (said), a USD amount still does.
pub(crate) fn held(
    d: &mut crate::engine::diff::Diff,
    base: &Base,
    gd: Guard,
    limit: &str,
    what: GuardWhat,
    out: &Out,
) -> Vec<crate::engine::diff::Held> {
    if matches!(gd, Guard::Percent(_)) && base.missing.is_some() {
        out.info(&format!(
            "note: `--fail-on-increase {limit}`: the plan is new, so no share of a base cost applies"
        ));
        return Vec::new();
    }
    d.guard(limit, gd, watch(what))
}

/// A plan that loaded against its base: what changed and the cost before and after.
pub(crate) fn compare(
    g: &Global,
    base: &Base,
    head: &Plan,
    out: &Out,
) -> CmdResult<crate::engine::diff::Diff> {
    let (bp, rb, cb) = load(g, Arc::clone(&base.file), out)?;
    let catalog = super::load_catalog(g, &[head.provider()], out)?;
    let rh = recommend::recommend(head, &catalog);
    let d = compute(
        Version {
            plan: &bp,
            rec: &rb,
            catalog: &cb,
        },
        Version {
            plan: head,
            rec: &rh,
            catalog: &catalog,
        },
    );
    Ok(d)
}

pub(crate) fn run(g: &Global, args: &DiffArgs, out: &Out) -> CmdResult {
    let guard = args
        .fail_on_increase
        .as_deref()
        .map(Guard::parse)
        .transpose()?;
    let (found, head_path, at) = match (&args.base_ref, args.plans.as_slice()) {
        (Some(r), [head]) => (read_git(r, head)?, head, format!("`{r}`")),
        (None, [base, head]) => (
            read_base(base)?,
            head,
            format!("`{}`", crate::core::shown(base)),
        ),
        (Some(_), _) => {
            return Err(CmdError::Usage(
                "with `--base-ref`, give one plan: the head version".into(),
            ))
        }
        (None, _) => {
            return Err(CmdError::Usage(
                "give two plans, BASE and HEAD, or `--base-ref REF HEAD`".into(),
            ))
        }
    };
    let head_file = read(head_path)?;
    let base = Base::of(found, &head_file, &at);
    if let Some(why) = &base.missing {
        out.info(&format!("note: {why}"));
    }
    let base_file = Arc::clone(&base.file);
    let progress = out.progress("recommending the base and the head", None);
    let (bp, rb, cb) = load(g, base_file, out)?;
    let (hp, rh, ch) = load(g, head_file, out)?;
    drop(progress);
    let mut d = compute(
        Version {
            plan: &bp,
            rec: &rb,
            catalog: &cb,
        },
        Version {
            plan: &hp,
            rec: &rh,
            catalog: &ch,
        },
    );
    let over = match (guard, &args.fail_on_increase) {
        (Some(gd), Some(limit)) => held(&mut d, &base, gd, limit, args.guard, out),
        _ => Vec::new(),
    };
    match args.format {
        ReportFormat::Json => {
            out.stdout(&(serde_json::to_string_pretty(&d).unwrap_or_default() + "\n"))
        }
        ReportFormat::Human => out.stdout(&human(&d)),
        ReportFormat::Markdown => out.stdout(&markdown(&d)),
    }
    if !over.is_empty() {
        let limit = args.fail_on_increase.as_deref().unwrap_or("");
        let why: Vec<String> = over.iter().map(|h| rise(&d, *h)).collect();
        return Err(CmdError::Refused(format!(
            "{}, past `--fail-on-increase {limit}`",
            why.join("; ")
        )));
    }
    Ok(exit::OK)
}
