//! A directory's first set: written in a staging directory beside it and renamed into place
//! whole, so a run killed before it finished leaves no directory at all (the path is as it
//! was: absent), and a run that fails takes its staging directory away.

use std::io;
use std::path::{Component, Path, PathBuf};

use crate::fsio::{faults, imp, lock, DirLock, FileError, Hold};

/// The prefix of a first set's staging directory, in the directory that will hold the new
/// one; `tempfile` adds random letters.
const FIRST_PREFIX: &str = ".gpuplan-first-";

fn is_first_stage(name: &str) -> bool {
    name.strip_prefix(FIRST_PREFIX)
        .is_some_and(|r| r.len() >= 6 && r.bytes().all(|b| b.is_ascii_alphanumeric()))
}

/// Where `dir` does not exist yet: its outermost missing directory (itself or an ancestor)
/// and that directory's existing parent. `None` when it exists, or when its path goes back
/// out (`..`) of a missing directory (the ordinary path refuses that with a reason).
fn missing_top(dir: &Path) -> Option<(PathBuf, PathBuf)> {
    if std::fs::symlink_metadata(dir).is_ok() {
        return None;
    }
    let mut at = PathBuf::new();
    let mut top = None;
    for c in dir.components() {
        at.push(c);
        if top.is_none() && std::fs::symlink_metadata(&at).is_err() {
            if !matches!(c, Component::Normal(_)) {
                return None;
            }
            top = Some(at.clone());
        } else if top.is_some() && !matches!(c, Component::Normal(_)) {
            return None;
        }
    }
    let top = top?;
    let parent = match top.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_owned(),
        _ => PathBuf::from("."),
    };
    std::fs::metadata(&parent)
        .ok()
        .filter(|m| m.is_dir())
        .map(|_| (top, parent))
}

/// Write a missing directory's first set: `fill` writes it into a staging directory under the
/// write lock it is given, and the staging directory is renamed to `dir`'s outermost missing
/// directory only when `fill` succeeded. `None` when `dir` exists already, or another run
/// made it meanwhile: the caller writes into it as into any existing directory.
pub(crate) fn first_set<T>(
    dir: &Path,
    fill: impl FnOnce(&Path, &DirLock) -> Result<T, FileError>,
) -> Result<Option<T>, FileError> {
    let Some((top, parent)) = missing_top(dir) else {
        return Ok(None);
    };
    let fail = |source| FileError {
        path: dir.to_owned(),
        source,
    };
    sweep_stale(&parent);
    let below = dir.strip_prefix(&top).unwrap_or(Path::new(""));
    // Errors name the directory the user gave, never the staging one.
    let theirs = |staging: &Path, e: FileError| FileError {
        path: match e.path.strip_prefix(staging) {
            Ok(rest) => top.join(rest),
            Err(_) => e.path,
        },
        source: e.source,
    };
    let mut tries = 0;
    let (mut staging, inner, lock) = loop {
        let staging = tempfile::Builder::new()
            .prefix(FIRST_PREFIX)
            .tempdir_in(&parent)
            .map_err(fail)?;
        let inner = staging.path().join(below);
        match lock(&inner, Hold::Write, true) {
            Ok(Some(l)) => break (staging, inner, l),
            // Until this run locks it, its staging directory looks like a killed run's to a
            // sibling run's sweep (`--out r/a/x` beside `--out r/a/y`), which may remove it
            // under this run's feet: make another.
            Ok(None) if tries < 8 => tries += 1,
            Err(e) if e.source.kind() == io::ErrorKind::NotFound && tries < 8 => tries += 1,
            Ok(None) => return Err(fail(io::ErrorKind::NotFound.into())),
            Err(e) => return Err(theirs(staging.path(), e)),
        }
    };
    let theirs = |e: FileError| theirs(staging.path(), e);
    let filled = fill(&inner, &lock).map_err(theirs);
    if faults::dead() {
        // A test's SIGKILL: nothing runs after it, not even the staging directory's removal.
        staging.disable_cleanup(true);
    }
    let out = filled?;
    match imp::rename_new(staging.path(), &top) {
        Ok(()) => {
            // In place: nothing of the staging directory is left to remove.
            staging.disable_cleanup(true);
            imp::sync_dir(&parent);
            let _ = faults::step();
            Ok(Some(out))
        }
        Err(err)
            if matches!(
                err.kind(),
                io::ErrorKind::AlreadyExists | io::ErrorKind::DirectoryNotEmpty
            ) =>
        {
            drop(lock);
            Ok(None)
        }
        Err(err) => Err(fail(err)),
    }
}

/// Whether this user made the entry: another user's staging directory (in a shared parent)
/// is theirs to clean, whatever its name.
#[cfg(unix)]
fn ours(entry: &std::fs::DirEntry) -> bool {
    use std::os::unix::fs::MetadataExt;
    entry
        .metadata()
        .is_ok_and(|m| m.uid() == rustix::process::geteuid().as_raw())
}

#[cfg(not(unix))]
fn ours(_: &std::fs::DirEntry) -> bool {
    true
}

/// Staging directories that this user's runs, killed in their first set, left in `parent`:
/// removed when no live run holds them (each live run keeps a lock on its own).
fn sweep_stale(parent: &Path) {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(n) = name.to_str() else { continue };
        let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
        if !is_dir || !is_first_stage(n) || !ours(&entry) {
            continue;
        }
        // Removed under its lock: a live run that created it and has yet to lock it waits,
        // then finds it gone and makes its own again.
        if let Some(_held) = imp::unused(&entry.path()) {
            // Removes links as links, never what they point to.
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}
