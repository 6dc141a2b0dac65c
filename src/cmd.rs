//! The subcommands. Each takes its parsed arguments and returns an exit code.

pub(crate) mod catalog;
pub(crate) mod check;
pub(crate) mod comment;
pub(crate) mod diff;
pub(crate) mod error;
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

use crate::catalog::Catalog;
use crate::cli::Global;
use crate::core::Provider;
use crate::output::Out;
pub(crate) use error::{CmdError, CmdResult};

/// Load the catalog the flags ask for.
pub(crate) fn load_catalog(g: &Global, providers: &[Provider], out: &Out) -> CmdResult<Catalog> {
    // A `--cache` named on the command line that exists but is not a directory is a mistake
    // to report, not a cache to pass over in silence.
    if let Some(c) = g.cache.as_ref().filter(|c| c.exists() && !c.is_dir()) {
        return Err(CmdError::Usage(format!(
            "`--cache {}`: expected a directory (the refresh cache), found a file",
            crate::core::shown(c)
        )));
    }
    let cache = g.cache.clone().or_else(crate::live::cache::default_dir);
    // Shared with other readers; a refresh writing the cache now is waited for, so the files
    // read are one refresh's, whole.
    let _lock = match (&g.catalog, &cache) {
        // Only a directory can be a cache; anything else is not one and is not read.
        (None, Some(c)) if c.is_dir() => crate::fsio::lock(c, crate::fsio::Hold::Read, false)
            .map_err(|e| CmdError::Read {
                path: crate::core::shown(&e.path),
                source: e.source,
            })?,
        _ => None,
    };
    use crate::live::cache::State;
    let catalog = match (&g.catalog, cache) {
        (Some(dir), _) => Catalog::from_dir(dir, providers),
        (None, Some(c)) => match crate::live::cache::state(&c) {
            State::Damaged(why) => {
                return Err(CmdError::Usage(format!(
                    "the refresh cache `{}` is damaged: {why}; {}",
                    crate::core::shown(&c),
                    crate::live::cache::DAMAGED_FIX
                )))
            }
            State::Ours => {
                out.detail(&format!(
                    "catalog: embedded, with the newer files of the refresh cache `{}`",
                    c.display()
                ));
                Catalog::layered(&c, providers)
            }
            State::Absent => Catalog::embedded(providers),
        },
        (None, None) => Catalog::embedded(providers),
    }?;
    Ok(catalog)
}

/// Read, parse and validate one plan file, with the catalog for its provider.
pub(crate) fn load_plan(
    g: &Global,
    path: &std::path::Path,
    out: &Out,
) -> CmdResult<(crate::plan::Plan, Catalog)> {
    let file = crate::plan::load::read(path).map_err(|d| CmdError::Located(vec![*d]))?;
    validate_file(g, file, out)
}

/// Read and validate a plan against the embedded catalog alone. A refresh reads its plan so:
/// a cache that no longer loads must not stop the refresh that replaces it.
#[cfg_attr(not(feature = "live"), allow(dead_code))]
pub(crate) fn load_plan_embedded(
    path: &std::path::Path,
    provider: Provider,
) -> CmdResult<crate::plan::Plan> {
    let file = crate::plan::load::read(path).map_err(|d| CmdError::Located(vec![*d]))?;
    let raw = crate::plan::load::parse(&file).map_err(CmdError::Located)?;
    let catalog = Catalog::embedded(&[raw.provider(), provider])?;
    crate::plan::Plan::from_parsed(file, raw, &catalog).map_err(CmdError::Located)
}

/// Parse and validate an already read plan file.
pub(crate) fn validate_file(
    g: &Global,
    file: std::sync::Arc<crate::source::SourceFile>,
    out: &Out,
) -> CmdResult<(crate::plan::Plan, Catalog)> {
    let raw = crate::plan::load::parse(&file).map_err(CmdError::Located)?;
    let catalog = load_catalog(g, &[raw.provider()], out)?;
    let plan = crate::plan::Plan::from_parsed(file, raw, &catalog).map_err(CmdError::Located)?;
    Ok((plan, catalog))
}

/// Write one output file a command was asked for: `-` is standard output; any other path
/// goes through [`crate::fsio::write_file`] (regular files only, atomic, a replaced file's
/// mode kept), and never over one of the command's `inputs`. True when a file was written.
pub(crate) fn write_output(
    out: &Out,
    path: &std::path::Path,
    text: &str,
    inputs: &[&std::path::Path],
) -> CmdResult<bool> {
    if path.as_os_str() == "-" {
        out.stdout(text);
        return Ok(false);
    }
    if inputs.iter().any(|i| crate::fsio::same_file(i, path)) {
        return Err(CmdError::Usage(format!(
            "`{}` is one of this command's inputs; write the output to another file",
            crate::core::shown(path)
        )));
    }
    crate::fsio::write_file(path, text.as_bytes())?;
    Ok(true)
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
