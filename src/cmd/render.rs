//! `gpuplan render PLAN --out DIR`: the recommended pools as Terraform, Helm values, Kueue
//! objects and serving settings; `--check` reports drift instead of writing.

use crate::cli::{Global, RenderArgs};
use crate::engine::recommend;
use crate::exit;
use crate::output::Out;
use crate::plan;
use crate::render::{self, view};

pub fn run(g: &Global, args: &RenderArgs, out: &Out) -> u8 {
    let file = match plan::load::read(&args.plan) {
        Ok(f) => f,
        Err(d) => {
            out.stderr(&crate::diag::output::human(&[*d], out.color));
            return exit::INPUT;
        }
    };
    let raw = match plan::load::parse(&file) {
        Ok(r) => r,
        Err(ds) => {
            out.stderr(&crate::diag::output::human(&ds, out.color));
            return exit::INPUT;
        }
    };
    let catalog = match super::load_catalog(g, &[*raw.plan.provider.get()], out) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let p = match plan::validate_raw(file, raw, &catalog) {
        Ok(p) => p,
        Err(ds) => {
            out.stderr(&crate::diag::output::human(&ds, out.color));
            return exit::INPUT;
        }
    };
    let rec = if args.declared {
        if p.pools().is_empty() {
            out.stderr("error: `--declared`: the plan declares no `[[pool]]`\n");
            return exit::INPUT;
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
        &rec,
        &catalog,
        &view::Options {
            capacity_reservations: args.capacity_reservations,
        },
    );
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
