//! `gpuplan recommend PLAN`: the recommended pools as a table with a why-line each, as JSON
//! (`gpuplan.recommendation/v1`) or as Markdown for a pull request or review document.

use crate::cli::{Global, RecommendArgs, ReportFormat};
use crate::core::exit;
use crate::engine::recommend;
use crate::output::Out;
use crate::report::recommend::{human, json, markdown};

use super::CmdResult;

pub(crate) fn run(g: &Global, args: &RecommendArgs, out: &Out) -> CmdResult {
    let started = std::time::Instant::now();
    if args.live {
        super::refresh::live(g, &args.plan, out)?;
    }
    let (p, catalog) = super::load_plan(g, &args.plan, out)?;
    let mut rec = {
        let _shown = out.progress(
            &format!("recommending pools for {} workload(s)", p.workloads().len()),
            None,
        );
        recommend::recommend(&p, &catalog)
    };
    crate::rules::settle_recommendation(
        &p,
        crate::core::Date::today(),
        &crate::rules::Levels::default(),
        &mut rec,
    );
    match args.format {
        ReportFormat::Json => out.stdout(&json(&rec)),
        ReportFormat::Human => out.stdout(&human(&rec)),
        ReportFormat::Markdown => out.stdout(&markdown(&rec)),
    }
    for u in &rec.unsatisfied {
        out.stderr(&format!("error: {}\n", u.message));
    }
    for f in rec
        .findings
        .iter()
        .filter(|f| f.severity == crate::diag::Severity::Error && f.suppressed.is_none())
    {
        out.stderr(&format!("error[{}]: {}\n", f.rule, f.message));
    }
    if let Some(dest) = &args.write_plan {
        let text = crate::core::format::as_written(
            &p.file.text,
            &crate::render::write_plan::plan_with_pools(&p, &rec, |pool| pool.why.to_string())?,
        );
        // OUT may be the plan itself: rewriting it is what the flag is for.
        if super::write_output(out, dest, &text, &[])? {
            out.stderr(&format!(
                "wrote {} recommended pool(s) into `{}`\n",
                rec.pools.len(),
                crate::core::shown(dest)
            ));
        }
    }
    super::report_resources(out, started);
    Ok(if rec.unsatisfiable() {
        exit::FINDINGS
    } else {
        exit::OK
    })
}
