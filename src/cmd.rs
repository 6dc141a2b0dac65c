//! The subcommands. Each takes its parsed arguments and returns an exit code.

pub(crate) mod catalog;
pub(crate) mod check;
pub(crate) mod diff;
pub(crate) mod explain;
pub(crate) mod init;
pub(crate) mod recommend;
#[cfg(feature = "live")]
pub(crate) mod refresh;
#[cfg(not(feature = "live"))]
#[path = "cmd/refresh_off.rs"]
pub(crate) mod refresh;
pub(crate) mod render;
pub(crate) mod review;
pub(crate) mod schema;

use crate::catalog::{Catalog, CatalogError};
use crate::cli::Global;
use crate::output::Out;
use crate::plan::raw::Provider;

/// Load the catalog the flags ask for; on failure print why and return the exit code.
pub(crate) fn load_catalog(g: &Global, providers: &[Provider], out: &Out) -> Result<Catalog, u8> {
    let cache = g.cache.clone().or_else(crate::live::cache::default_dir);
    let result = match (&g.catalog, cache) {
        (Some(dir), _) => Catalog::from_dir(dir, providers),
        (None, Some(c)) if crate::live::cache::present(&c) => {
            out.detail(&format!(
                "catalog: embedded, with the newer files of the refresh cache `{}`",
                c.display()
            ));
            Catalog::layered(&c, providers)
        }
        (None, _) => Catalog::embedded(providers),
    };
    result.map_err(|e| {
        match e {
            CatalogError::Invalid(diags) => {
                out.stderr(&crate::report::findings::human(&diags, out.color))
            }
            other => out.stderr(&format!("error: {other}\n")),
        }
        crate::core::exit::INPUT
    })
}

/// Read, parse and validate one plan file, with the catalog for its provider; problems are
/// printed (file, line, column) and come back as the exit code.
pub(crate) fn load_plan(
    g: &Global,
    path: &std::path::Path,
    out: &Out,
) -> Result<(crate::plan::Plan, Catalog), u8> {
    let file = crate::plan::load::read(path).map_err(|d| {
        out.stderr(&crate::report::findings::human(&[*d], out.color));
        crate::core::exit::INPUT
    })?;
    validate_file(g, file, out)
}

/// Read and validate a plan against the embedded catalog alone. A refresh reads its plan so:
/// a cache that no longer loads must not stop the refresh that replaces it.
#[cfg_attr(not(feature = "live"), allow(dead_code))]
pub(crate) fn load_plan_embedded(
    path: &std::path::Path,
    provider: Provider,
    out: &Out,
) -> Result<crate::plan::Plan, u8> {
    let print = |ds: &[crate::diag::Diag]| {
        out.stderr(&crate::report::findings::human(ds, out.color));
        crate::core::exit::INPUT
    };
    let file = crate::plan::load::read(path).map_err(|d| print(&[*d]))?;
    let raw = crate::plan::load::parse(&file).map_err(|ds| print(&ds))?;
    let catalog = Catalog::embedded(&[*raw.plan.provider.get(), provider]).map_err(|e| {
        out.stderr(&format!("error: {e}\n"));
        crate::core::exit::INPUT
    })?;
    crate::rules::validate_plan(file, raw, &catalog).map_err(|ds| print(&ds))
}

/// Parse and validate an already read plan file.
pub(crate) fn validate_file(
    g: &Global,
    file: std::sync::Arc<crate::source::SourceFile>,
    out: &Out,
) -> Result<(crate::plan::Plan, Catalog), u8> {
    let raw = crate::plan::load::parse(&file).map_err(|ds| {
        out.stderr(&crate::report::findings::human(&ds, out.color));
        crate::core::exit::INPUT
    })?;
    let catalog = load_catalog(g, &[*raw.plan.provider.get()], out)?;
    let plan = crate::rules::validate_plan(file, raw, &catalog).map_err(|ds| {
        out.stderr(&crate::report::findings::human(&ds, out.color));
        crate::core::exit::INPUT
    })?;
    Ok((plan, catalog))
}

/// With `--verbose`: the command's wall time and the process's peak resident memory, the
/// figures the benches read.
pub(crate) fn report_resources(out: &Out, started: std::time::Instant) {
    if !out.verbose {
        return;
    }
    out.detail(&format!(
        "resources: {:.3} s wall, peak RSS {}",
        started.elapsed().as_secs_f64(),
        peak_rss().map_or("unknown".to_owned(), |kb| format!(
            "{:.1} MB",
            kb as f64 / 1024.0
        ))
    ));
}

/// Peak resident memory of this process in KiB (Linux `VmHWM`).
fn peak_rss() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}
