//! The refresh cache: only the files a refresh fetched, each dated in the cache's own
//! `sources.toml`; commands read each file from whichever of cache and embedded catalog is
//! newer (`Catalog::layered`). gpuplan owns only `sources.toml` and the files it lists; a
//! refresh is staged and checked before anything is replaced, so a failed one leaves the
//! previous cache as it was.

use std::path::{Path, PathBuf};

/// `GPUPLAN_CACHE`, else `$XDG_CACHE_HOME/gpuplan`, else `~/.cache/gpuplan`; none where
/// neither names an absolute directory. A relative (or empty) `XDG_CACHE_HOME` or `HOME` is
/// ignored, as the XDG Base Directory Specification says ("If an
/// implementation encounters a relative path in any of these variables it should consider
/// the path invalid and ignore it"): it would name a different cache in every directory.
pub(crate) fn default_dir() -> Option<PathBuf> {
    if let Some(d) = std::env::var_os("GPUPLAN_CACHE").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(d));
    }
    if let Some(d) = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .filter(|d| d.is_absolute())
    {
        return Some(d.join("gpuplan"));
    }
    // An empty or relative HOME would put the cache in whatever directory the command runs
    // in: a checked-out repository could then supply prices, and a refresh write into it.
    std::env::var_os("HOME")
        .map(PathBuf::from)
        .filter(|h| h.is_absolute())
        .map(|h| h.join(".cache").join("gpuplan"))
}

/// The tag that makes a directory gpuplan's cache: the Cache Directory Tagging
/// Specification's (<https://bford.info/cachedir/>), so backup tools skip it too, naming gpuplan.
pub(crate) const TAG: &str = "CACHEDIR.TAG";
const TAG_SIGNATURE: &str = "Signature: 8a477f597d28d172789f06886806bc55";
const TAG_TEXT: &str = "Signature: 8a477f597d28d172789f06886806bc55\n# This file is a cache directory tag created by gpuplan (`gpuplan catalog refresh`).\n# For information about cache directory tags, see https://bford.info/cachedir/\n";
/// The first line of every `sources.toml` gpuplan writes.
const LIST_HEADER: &str = "# Files refreshed by `gpuplan catalog refresh`";

/// A directory gpuplan made its cache: it carries gpuplan's tag (or, written by a gpuplan
/// from before the tag, a `sources.toml` that is gpuplan's own list), never merely a file
/// called `sources.toml`.
pub(crate) fn present(dir: &Path) -> bool {
    matches!(state(dir), State::Ours)
}

/// What a cache directory is.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum State {
    /// Not a gpuplan cache (missing, empty, or someone else's directory).
    Absent,
    /// gpuplan's cache, its list readable.
    Ours,
    /// gpuplan's cache (its tag, or its list's first line, says so) whose `sources.toml`
    /// cannot be read: why.
    Damaged(String),
}

/// Whether `dir` is gpuplan's cache, and whether its list can be read.
pub(crate) fn state(dir: &Path) -> State {
    let read = |name: &str| crate::fsio::read(&dir.join(name), 1 << 20);
    let tagged = read(TAG).is_ok_and(|t| {
        t.starts_with(TAG_SIGNATURE.as_bytes()) && t.windows(7).any(|w| w == b"gpuplan")
    });
    match read("sources.toml") {
        Ok(bytes) => match String::from_utf8(bytes) {
            Ok(_) if tagged => State::Ours,
            Ok(list)
                if list.starts_with(LIST_HEADER)
                    && toml::from_str::<toml::Table>(&list).is_ok() =>
            {
                State::Ours
            }
            Ok(_) => State::Absent,
            Err(e) if tagged || e.as_bytes().starts_with(LIST_HEADER.as_bytes()) => {
                State::Damaged(format!(
                    "its sources.toml is not UTF-8 text (an invalid byte at offset {})",
                    e.utf8_error().valid_up_to()
                ))
            }
            Err(_) => State::Absent,
        },
        Err(e) if tagged && e.kind() == std::io::ErrorKind::NotFound => {
            State::Damaged("it has gpuplan's CACHEDIR.TAG but no sources.toml".into())
        }
        Err(e) if tagged => State::Damaged(format!("its sources.toml cannot be read: {e}")),
        Err(_) => State::Absent,
    }
}

/// What to do about a damaged cache, for messages.
pub(crate) const DAMAGED_FIX: &str = "run `gpuplan catalog refresh` to rebuild it (the files it lists are replaced), or remove the directory";

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

/// A row of a refreshed price file, in the layout of [`PRICE_HEADER`].
pub(crate) fn price_row(
    sku: String,
    region: &str,
    kind: &str,
    usd: f64,
    unit: &str,
    fetched: &str,
    source: String,
) -> Vec<String> {
    vec![
        sku,
        region.to_owned(),
        kind.to_owned(),
        usd.to_string(),
        unit.to_owned(),
        fetched.to_owned(),
        source,
    ]
}

/// One refreshed file and how `sources.toml` describes it.
pub(crate) struct Entry {
    pub path: &'static str,
    pub kind: crate::catalog::DataKind,
    pub provider: crate::core::Provider,
    pub source: String,
    pub licence: &'static str,
    pub text: String,
    /// What the fetch resolved that the user should hear of (warnings on standard error).
    pub notes: Vec<String>,
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

impl CacheError {
    /// The same error met while writing in `stage` (a new cache's staging directory), naming
    /// `dir`, the cache the user asked for, instead: the staging directory is gone by the
    /// time anyone reads the message.
    pub(crate) fn named_for(self, stage: &Path, dir: &Path) -> CacheError {
        let (stage, dir) = (stage.display().to_string(), dir.display().to_string());
        let name = |s: String| s.replace(&stage, &dir);
        match self {
            CacheError::Foreign { dir, entry } => CacheError::Foreign {
                dir: name(dir),
                entry,
            },
            CacheError::NotADirectory(d) => CacheError::NotADirectory(name(d)),
            CacheError::Invalid(m) => CacheError::Invalid(name(m)),
            CacheError::Io { dir, source } => CacheError::Io {
                dir: name(dir),
                source,
            },
        }
    }
}

use crate::source::safe_path;

/// The cache's own list of files (`[[file]]` of `sources.toml`), keeping only entries whose
/// path is safe and whose file is there: a tampered or damaged list never steers a write.
fn owned_entries(
    dir: &Path,
    state: &State,
    notes: &mut Vec<String>,
) -> (toml::Table, Vec<toml::Value>) {
    let text = match crate::fsio::read_text(&dir.join("sources.toml"), 1 << 20) {
        Ok(t) => t,
        Err(e) => {
            if let State::Damaged(why) = state {
                notes.push(format!(
                    "the cache was damaged ({why}: {e}); its list is rebuilt from this refresh, and files it listed before stay on disk unused until refreshed again"
                ));
            }
            String::new()
        }
    };
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
///
/// The caller holds `lock`, the cache's write lock, for its whole run; a directory the lock
/// made goes again if this fails.
pub(crate) fn write(
    dir: &Path,
    lock: &crate::fsio::DirLock,
    entries: &[Entry],
    fetched: &str,
    verify: &dyn Fn(&Path) -> Result<(), String>,
) -> Result<Vec<String>, CacheError> {
    let mut notes = Vec::new();
    write_owned(dir, lock, entries, fetched, verify, &mut notes).map(|()| notes)
}

fn write_owned(
    dir: &Path,
    lock: &crate::fsio::DirLock,
    entries: &[Entry],
    fetched: &str,
    verify: &dyn Fn(&Path) -> Result<(), String>,
    notes: &mut Vec<String>,
) -> Result<(), CacheError> {
    let io = |source: std::io::Error| CacheError::Io {
        dir: crate::core::shown(dir),
        source,
    };
    // What the directory is, read once: whether it is gpuplan's, and whether its list reads.
    let st = state(dir);
    refuse_foreign(dir, &st)?;
    let (mut sources, mut files) = if st != State::Absent {
        owned_entries(dir, &st, notes)
    } else {
        (toml::Table::new(), Vec::new())
    };
    files.retain(|f| {
        let p = f.get("path").and_then(|v| v.as_str()).unwrap_or("");
        !entries.iter().any(|e| e.path == p)
    });
    // The would-be cache, staged in a private temporary directory for `verify` to load
    // exactly as the next command will; the cache itself changes only below, in one set.
    // Inside the cache, under gpuplan's own name: a run killed here leaves it where the
    // next run that locks the cache sweeps it, never in a shared temporary directory.
    let stage = tempfile::Builder::new()
        .prefix(crate::fsio::STAGE_PREFIX)
        .tempdir_in(dir)
        .map_err(io)?;
    for f in &files {
        let p = f.get("path").and_then(|v| v.as_str()).unwrap_or("");
        let text = crate::fsio::read(&dir.join(p), 64 << 20).map_err(io)?;
        let target = stage.path().join(p);
        if let Some(d) = target.parent() {
            std::fs::create_dir_all(d).map_err(io)?;
        }
        std::fs::write(target, &text).map_err(io)?;
    }
    let in_set = |e: crate::fsio::FileError| CacheError::Io {
        dir: crate::core::shown(&e.path),
        source: e.source,
    };
    let mut set = crate::fsio::Tree::new(dir, true);
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
        // What a refresh stores never carries a credential, whichever row or column an
        // endpoint URL reached (a price row's `source` names the API it came from).
        let text = crate::core::redact(&e.text);
        std::fs::write(&target, &text).map_err(io)?;
        set.put(e.path, text.into_bytes());
        files.push(listed(e, fetched));
    }
    files.sort_by(|a, b| {
        a.get("path")
            .and_then(|v| v.as_str())
            .cmp(&b.get("path").and_then(|v| v.as_str()))
    });
    sources.insert("file".into(), toml::Value::Array(files));
    let list = format!(
        "{LIST_HEADER}; each is used while it is newer than the embedded one.\n{}",
        toml::to_string(&sources).unwrap_or_default()
    );
    std::fs::write(stage.path().join("sources.toml"), &list).map_err(io)?;
    // The staged copy is where the files are checked, but the user's cache is what they
    // are: an error names the cache, never the temporary directory.
    verify(stage.path()).map_err(|e| {
        CacheError::Invalid(e.replace(
            &stage.path().display().to_string(),
            &crate::core::shown(dir),
        ))
    })?;

    // Commit, all or nothing: the verified files, the tag, the list last (a reader sees the
    // old list or the new one, never no cache).
    set.put(TAG, TAG_TEXT.as_bytes().to_vec());
    set.put("sources.toml", list.into_bytes());
    set.commit_in(lock).map_err(in_set)?;
    Ok(())
}

/// A path that is not a directory, or a directory that holds files and is not gpuplan's cache,
/// is refused before anything is written.
fn refuse_foreign(dir: &Path, st: &State) -> Result<(), CacheError> {
    let io = |source: std::io::Error| CacheError::Io {
        dir: crate::core::shown(dir),
        source,
    };
    match std::fs::symlink_metadata(dir) {
        Ok(m) if !(m.is_dir() || m.file_type().is_symlink() && dir.is_dir()) => {
            Err(CacheError::NotADirectory(crate::core::shown(dir)))
        }
        Ok(_) if *st == State::Absent => {
            let mut names: Vec<String> = std::fs::read_dir(dir)
                .map_err(io)?
                .filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect();
            names.sort();
            match names.into_iter().next() {
                Some(entry) => Err(CacheError::Foreign {
                    dir: crate::core::shown(dir),
                    entry: crate::core::printable(&entry),
                }),
                None => Ok(()),
            }
        }
        _ => Ok(()),
    }
}

/// A refreshed file's entry in `sources.toml`.
fn listed(e: &Entry, fetched: &str) -> toml::Value {
    let mut t = toml::Table::new();
    t.insert("path".into(), e.path.into());
    t.insert("kind".into(), e.kind.as_str().into());
    t.insert("provider".into(), e.provider.as_str().into());
    t.insert("as_of".into(), fetched.into());
    t.insert("source".into(), crate::core::redact(&e.source).into());
    t.insert("licence".into(), e.licence.into());
    toml::Value::Table(t)
}
