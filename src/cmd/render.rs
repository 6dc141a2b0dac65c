//! `gpuplan render PLAN --out DIR`: the recommended pools as Terraform, Helm values, Kueue
//! objects and serving settings; `--check` reports drift instead of writing.

use crate::cli::{Global, RenderArgs};
use crate::core::exit;
use crate::engine::recommend;
use crate::output::Out;
use crate::render::{self, view};

pub(crate) fn run(g: &Global, args: &RenderArgs, out: &Out) -> u8 {
    let (p, catalog) = match super::load_plan(g, &args.plan, out) {
        Ok(x) => x,
        Err(code) => return code,
    };
    let rec = if args.declared {
        if p.pools().is_empty() {
            out.stderr("error: `--declared`: the plan declares no `[[pool]]`\n");
            return exit::INPUT;
        }
        // Declared pools that `check` fails would be created as they are: refuse, unless
        // asked to render them anyway.
        let errors = crate::rules::check(
            &p,
            &catalog,
            crate::core::Date::today(),
            &crate::rules::Levels::default(),
        )
        .into_iter()
        .filter(|d| d.suppressed.is_none() && d.severity == crate::diag::Severity::Error)
        .count();
        if errors > 0 && !args.force {
            out.stderr(&format!(
                "error: `{}` fails `gpuplan check` with {errors} error(s); nothing rendered (fix them, or pass `--force` to render the declared pools anyway)\n",
                args.plan.display()
            ));
            return exit::FINDINGS;
        }
        if errors > 0 {
            out.stderr(&format!(
                "warning: rendering declared pools that fail `gpuplan check` with {errors} error(s) (`--force`)\n"
            ));
        }
        recommend::declared(&p, &catalog)
    } else {
        recommend::recommend(&p, &catalog)
    };
    if rec.unsatisfiable() {
        for u in &rec.unsatisfied {
            out.stderr(&format!("error: {}\n", u.message));
        }
        for f in rec.findings.iter().filter(|f| f.severity == "error") {
            out.stderr(&format!("error[{}]: {}\n", f.rule, f.message));
        }
        out.stderr("error: nothing rendered: the plan cannot be met as it stands\n");
        return exit::FINDINGS;
    }
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
            out.stderr(&format!(
                "error: `--templates {}`: no such directory (its layout is that of templates/render/)\n",
                dir.display()
            ));
            return exit::INPUT;
        }
    }
    let files = match render::render(&v, args.templates.as_deref()) {
        Ok(f) => f,
        Err(e) => {
            out.stderr(&format!("error: {e}\n"));
            return exit::INPUT;
        }
    };
    if args.check {
        let drift = render::drift(&args.out, &files);
        if drift.is_empty() {
            out.info(&format!(
                "{} file(s) in `{}` are up to date",
                files.len(),
                args.out.display()
            ));
            return exit::OK;
        }
        for f in &drift {
            out.stdout(&format!("{}\n", args.out.join(f).display()));
        }
        out.stderr(&format!(
            "error: {} file(s) differ from what `{}` renders today\n",
            drift.len(),
            args.plan.display()
        ));
        return exit::FINDINGS;
    }
    if let Err(e) = render::write(&args.out, &files) {
        out.stderr(&format!("error: {e}\n"));
        return exit::INPUT;
    }
    for f in files.keys() {
        out.detail(&format!("wrote {}", args.out.join(f).display()));
    }
    out.info(&format!(
        "wrote {} file(s) to `{}`",
        files.len(),
        args.out.display()
    ));
    exit::OK
}
