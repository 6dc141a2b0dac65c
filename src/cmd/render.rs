//! `gpuplan render PLAN --out DIR`: the recommended pools as Terraform, Helm values, Kueue
//! objects and serving settings; `--check` reports drift instead of writing.

use crate::cli::{Global, RenderArgs};
use crate::core::exit;
use crate::engine::recommend;
use crate::output::Out;
use crate::render::{self, view};

use super::{CmdError, CmdResult};

pub(crate) fn run(g: &Global, args: &RenderArgs, out: &Out) -> CmdResult {
    // Said before the plan is read and recommended: nothing of that can be written anyway.
    if args.out.as_os_str() == "-" {
        return Err(CmdError::Usage(
            "`--out -`: render writes a directory of files, not one stream; name a directory"
                .to_owned(),
        ));
    }
    let (p, catalog) = super::load_plan(g, &args.plan, out)?;
    let progress = out.progress(
        &format!("rendering {} workload(s)", p.workloads().len()),
        None,
    );
    let rec = fleet(args, out, &p, &catalog)?;
    let v = view::build(
        &p,
        &catalog,
        &rec,
        &view::Options {
            capacity_reservations: args.capacity_reservations,
            karpenter: args.karpenter,
            kueue_api: args.kueue_api.api_version(),
        },
    );
    if let Some(dir) = &args.templates {
        if !dir.is_dir() {
            return Err(CmdError::Usage(format!(
                "`--templates {}`: no such directory (its layout is that of templates/render/)",
                dir.display()
            )));
        }
    }
    let files = render::render(&v, args.templates.as_deref())?;
    drop(progress);
    let shown = crate::core::shown(&args.out);
    if std::fs::metadata(&args.out).is_ok_and(|m| !m.is_dir()) {
        return Err(CmdError::Usage(format!(
            "`--out {shown}` is not a directory: render writes a directory of files"
        )));
    }
    if args.check {
        return check_drift(args, out, &files, &shown);
    }
    write(args, out, &files, &shown)
}

/// The fleet to render: the declared pools (refused where `check` fails them, unless
/// `--force`), or the recommendation with its findings settled; refused when unmet.
fn fleet(
    args: &RenderArgs,
    out: &Out,
    p: &crate::plan::Plan,
    catalog: &crate::catalog::Catalog,
) -> CmdResult<recommend::Recommendation> {
    let rec = if args.declared {
        if p.pools().is_empty() {
            return Err(CmdError::Usage(
                "`--declared`: the plan declares no `[[pool]]`".into(),
            ));
        }
        // Declared pools that `check` fails would be created as they are: refuse, unless
        // asked to render them anyway.
        let errors = crate::rules::check(
            p,
            catalog,
            crate::core::Date::today(),
            &crate::rules::Levels::default(),
        )
        .into_iter()
        .filter(|d| d.suppressed.is_none() && d.severity == crate::diag::Severity::Error)
        .count();
        if errors > 0 && !args.force {
            return Err(CmdError::Refused(format!(
                "`{}` fails `gpuplan check` with {errors} error(s); nothing rendered (fix them, or pass `--force` to render the declared pools anyway)",
                args.plan.display()
            )));
        }
        if errors > 0 {
            out.stderr(&format!(
                "warning: rendering declared pools that fail `gpuplan check` with {errors} error(s) (`--force`)\n"
            ));
        }
        // What the declared pools leave out: workloads no pool names get no nodes (GP035).
        let left: Vec<&str> = p
            .workloads()
            .iter()
            .map(|w| w.name.get().as_str())
            .filter(|w| p.workload_pools(w).next().is_none())
            .collect();
        if !left.is_empty() {
            out.stderr(&format!(
                "warning: `--declared` renders no nodes for {} workload(s) no declared pool serves (GP035): {}\n",
                left.len(),
                left.iter()
                    .map(|w| format!("`{w}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        recommend::declared(p, catalog)
    } else {
        recommend::recommend(p, catalog)
    };
    let mut rec = rec;
    // A recommended fleet meets the rules `recommend` reports (its budget, with the plan's
    // allows); declared pools were judged by `check` above.
    if !args.declared {
        crate::rules::settle_recommendation(
            p,
            crate::core::Date::today(),
            &crate::rules::Levels::default(),
            &mut rec,
        );
    }
    if rec.unsatisfiable() {
        for u in &rec.unsatisfied {
            out.stderr(&format!("error: {}\n", u.message));
        }
        for f in rec
            .findings
            .iter()
            .filter(|f| f.severity == crate::diag::Severity::Error)
        {
            out.stderr(&format!("error[{}]: {}\n", f.rule, f.message));
        }
        return Err(CmdError::Refused(
            "nothing rendered: the plan cannot be met as it stands".into(),
        ));
    }
    Ok(rec)
}

/// `--check`: the files that differ from what is rendered now, and the stale ones.
fn check_drift(
    args: &RenderArgs,
    out: &Out,
    files: &std::collections::BTreeMap<String, String>,
    shown: &str,
) -> CmdResult {
    let drift = render::drift(&args.out, files)?;
    if drift.is_empty() {
        out.info(&format!(
            "{} file(s) in `{shown}` are up to date",
            files.len()
        ));
        return Ok(exit::OK);
    }
    for f in &drift.changed {
        out.stdout(&format!("{}\n", crate::core::shown(&args.out.join(f))));
    }
    for f in &drift.stale {
        out.stdout(&format!(
            "{} (stale: an earlier render wrote it; this one would remove it)\n",
            crate::core::shown(&args.out.join(f))
        ));
    }
    let mut parts = Vec::new();
    if !drift.changed.is_empty() {
        parts.push(format!(
            "{} file(s) differ from what `{}` renders today",
            drift.changed.len(),
            crate::core::shown(&args.plan)
        ));
    }
    if !drift.stale.is_empty() {
        parts.push(format!(
            "{} stale file(s) an earlier render wrote are still there",
            drift.stale.len()
        ));
    }
    Err(CmdError::Refused(parts.join("; ")))
}

/// Write the files, remove those an earlier render wrote and this one does not.
fn write(
    args: &RenderArgs,
    out: &Out,
    files: &std::collections::BTreeMap<String, String>,
    shown: &str,
) -> CmdResult {
    let removed = render::write(&args.out, files, args.overwrite)?;
    for f in files.keys() {
        out.detail(&format!("wrote {}", crate::core::shown(&args.out.join(f))));
    }
    for f in &removed {
        out.detail(&format!(
            "removed {} (an earlier render wrote it; this one does not)",
            crate::core::shown(&args.out.join(f))
        ));
    }
    out.info(&format!(
        "wrote {} file(s) to `{shown}`{}",
        files.len(),
        if removed.is_empty() {
            String::new()
        } else {
            format!(", removed {} stale file(s)", removed.len())
        }
    ));
    Ok(exit::OK)
}
