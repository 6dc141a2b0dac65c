//! The refresh cache: only the files a refresh fetched, each dated in the cache's own
//! `sources.toml`; commands read each file from whichever of cache and embedded catalog is
//! newer (`Catalog::layered`). gpuplan owns only `sources.toml` and the files it lists; a
//! refresh is staged and checked before anything is replaced, so a failed one leaves the
//! previous cache as it was.

use std::path::{Path, PathBuf};

use super::azure_prices::Row;

/// `GPUPLAN_CACHE`, else `$XDG_CACHE_HOME/gpuplan`, else `~/.cache/gpuplan`.
pub(crate) fn default_dir() -> Option<PathBuf> {
    if let Some(d) = std::env::var_os("GPUPLAN_CACHE").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(d));
    }
    if let Some(d) = std::env::var_os("XDG_CACHE_HOME").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(d).join("gpuplan"));
    }
    std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache").join("gpuplan"))
}

/// A cache that holds refreshed files.
pub(crate) fn present(dir: &Path) -> bool {
    dir.join("sources.toml").is_file()
}

/// A refreshed CSV file: `header`, then the previous file's rows for regions not refreshed
/// now (column `region_col`), then `rows`. Written with the csv crate, so any field may hold
/// commas or quotes.
pub(crate) fn merge_csv(
    previous: &str,
    header: &[&str],
    region_col: usize,
    regions: &[String],
    rows: &[Vec<String>],
) -> String {
    let mut w = csv::WriterBuilder::new()
        .terminator(csv::Terminator::Any(b'\n'))
        .from_writer(Vec::new());
    let _ = w.write_record(header);
    let mut rdr = csv::ReaderBuilder::new()
        .flexible(true)
        .from_reader(previous.as_bytes());
    for rec in rdr.records().flatten() {
        let region = rec.get(region_col).unwrap_or("");
        if rec.len() == header.len() && !regions.iter().any(|r| r == region) {
            let _ = w.write_record(&rec);
        }
    }
    for r in rows {
        let _ = w.write_record(r);
    }
    String::from_utf8(w.into_inner().unwrap_or_default()).unwrap_or_default()
}

pub(crate) const PRICE_HEADER: [&str; 7] = [
    "armSkuName",
    "armRegionName",
    "kind",
    "retailPrice",
    "unitOfMeasure",
    "captured",
    "source",
];

/// The `prices-retail.csv` text: fetched rows for the refreshed regions, and the previous
/// rows of every other region.
pub(crate) fn retail_csv(
    previous: &str,
    rows: &[Row],
    regions: &[String],
    fetched: &str,
    source: &str,
) -> String {
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                r.sku.clone(),
                r.region.clone(),
                r.kind.to_owned(),
                r.price.to_string(),
                r.unit.clone(),
                fetched.to_owned(),
                format!("{source} ({})", r.note),
            ]
        })
        .collect();
    merge_csv(previous, &PRICE_HEADER, 1, regions, &rows)
}

/// One refreshed file and how `sources.toml` describes it.
pub(crate) struct Entry {
    pub path: &'static str,
    pub kind: &'static str,
    pub provider: &'static str,
    pub source: String,
    pub licence: &'static str,
    pub text: String,
}

/// Why a refresh did not write the cache; the cache is as it was in every case.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CacheError {
    #[error("`{dir}` is not a gpuplan cache: it holds `{entry}` and no sources.toml; give an empty or new directory (`--cache DIR`)")]
    Foreign { dir: String, entry: String },
    #[error("`{0}` is not a directory")]
    NotADirectory(String),
    #[error("the refreshed data does not load, so the cache was not changed: {0}")]
    Invalid(String),
    #[error("cannot write the cache `{dir}`: {source}")]
    Io {
        dir: String,
        #[source]
        source: std::io::Error,
    },
}

use crate::source::safe_path;

/// The cache's own list of files (`[[file]]` of `sources.toml`), keeping only entries whose
/// path is safe and whose file is there: a tampered or damaged list never steers a write.
fn owned_entries(dir: &Path, notes: &mut Vec<String>) -> (toml::Table, Vec<toml::Value>) {
    let text = std::fs::read_to_string(dir.join("sources.toml")).unwrap_or_default();
    let mut sources: toml::Table = match toml::from_str(&text) {
        Ok(t) => t,
        Err(e) => {
            if !text.is_empty() {
                notes.push(format!(
                    "the cache's sources.toml did not parse ({}); the files it listed stay on disk but are no longer used until refreshed",
                    e.message()
                ));
            }
            toml::Table::new()
        }
    };
    let files = match sources.remove("file") {
        Some(toml::Value::Array(a)) => a,
        _ => Vec::new(),
    };
    let files = files
        .into_iter()
        .filter(|f| {
            let p = f.get("path").and_then(|v| v.as_str()).unwrap_or("");
            let keep = safe_path(dir, p) && dir.join(p).is_file();
            if !keep {
                notes.push(format!(
                    "dropped `{}` from the cache's list: not a file inside the cache",
                    p.escape_debug()
                ));
            }
            keep
        })
        .collect();
    (sources, files)
}

/// Write the cache: `entries` replace the files of the same path, dated `fetched`; every
/// other file in `dir` is left alone (gpuplan owns only `sources.toml` and the files it
/// lists). `verify` sees the would-be cache, staged beside it, before anything changes.
///
/// A directory that is neither empty nor a gpuplan cache is refused. The new files are all
/// written first (exclusively created temporary files with unpredictable names, so a
/// planted symlink is never followed), then renamed over their targets, `sources.toml`
/// last: a reader sees the old list or the new one, never no cache.
pub(crate) fn write(
    dir: &Path,
    entries: &[Entry],
    fetched: &str,
    verify: &dyn Fn(&Path) -> Result<(), String>,
) -> Result<Vec<String>, CacheError> {
    let existed = dir.exists();
    let mut notes = Vec::new();
    let result = write_owned(dir, entries, fetched, verify, &mut notes).map(|()| notes);
    if result.is_err() && !existed {
        // A directory this refresh created and could not fill goes again (only if empty).
        let _ = std::fs::remove_dir(dir);
    }
    result
}

fn write_owned(
    dir: &Path,
    entries: &[Entry],
    fetched: &str,
    verify: &dyn Fn(&Path) -> Result<(), String>,
    notes: &mut Vec<String>,
) -> Result<(), CacheError> {
    let io = |source: std::io::Error| CacheError::Io {
        dir: dir.display().to_string(),
        source,
    };
    match std::fs::symlink_metadata(dir) {
        Ok(m) if !(m.is_dir() || m.file_type().is_symlink() && dir.is_dir()) => {
            return Err(CacheError::NotADirectory(dir.display().to_string()))
        }
        Ok(_) if !present(dir) => {
            let mut names: Vec<String> = std::fs::read_dir(dir)
                .map_err(io)?
                .filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect();
            names.sort();
            if let Some(entry) = names.into_iter().next() {
                return Err(CacheError::Foreign {
                    dir: dir.display().to_string(),
                    entry,
                });
            }
        }
        Ok(_) => {}
        Err(_) => std::fs::create_dir_all(dir).map_err(io)?,
    }
    let (mut sources, mut files) = owned_entries(dir, notes);
    files.retain(|f| {
        let p = f.get("path").and_then(|v| v.as_str()).unwrap_or("");
        !entries.iter().any(|e| e.path == p)
    });
    // The would-be cache, staged inside the cache directory (same file system, so the
    // renames below are atomic), for `verify` to load.
    let stage = tempfile::Builder::new()
        .prefix(".gpuplan-stage-")
        .tempdir_in(dir)
        .map_err(io)?;
    for f in &files {
        let p = f.get("path").and_then(|v| v.as_str()).unwrap_or("");
        let target = stage.path().join(p);
        if let Some(d) = target.parent() {
            std::fs::create_dir_all(d).map_err(io)?;
        }
        std::fs::copy(dir.join(p), target).map_err(io)?;
    }
    for e in entries {
        if !safe_path(dir, e.path) {
            return Err(CacheError::Invalid(format!(
                "`{}` is not a cache path",
                e.path
            )));
        }
        let target = stage.path().join(e.path);
        if let Some(d) = target.parent() {
            std::fs::create_dir_all(d).map_err(io)?;
        }
        std::fs::write(&target, &e.text).map_err(io)?;
        let mut t = toml::Table::new();
        t.insert("path".into(), e.path.into());
        t.insert("kind".into(), e.kind.into());
        t.insert("provider".into(), e.provider.into());
        t.insert("as_of".into(), fetched.into());
        t.insert("source".into(), crate::core::redact(&e.source).into());
        t.insert("licence".into(), e.licence.into());
        files.push(toml::Value::Table(t));
    }
    files.sort_by(|a, b| {
        a.get("path")
            .and_then(|v| v.as_str())
            .cmp(&b.get("path").and_then(|v| v.as_str()))
    });
    sources.insert("file".into(), toml::Value::Array(files));
    let list = format!(
        "# Files refreshed by `gpuplan catalog refresh`; each is used while it is newer than the embedded one.\n{}",
        toml::to_string(&sources).unwrap_or_default()
    );
    std::fs::write(stage.path().join("sources.toml"), &list).map_err(io)?;
    verify(stage.path()).map_err(CacheError::Invalid)?;

    // Commit: the verified files themselves, renamed from the stage over their targets
    // (the stage is inside `dir`, so each rename is atomic), the list last.
    for e in entries {
        let target = dir.join(e.path);
        if let Some(d) = target.parent() {
            std::fs::create_dir_all(d).map_err(io)?;
        }
        std::fs::rename(stage.path().join(e.path), &target).map_err(io)?;
    }
    std::fs::rename(stage.path().join("sources.toml"), dir.join("sources.toml")).map_err(io)?;
    Ok(())
}
