//! The journal of a set of files being written, so that a run killed at any moment leaves
//! a directory the next run can finish or undo: it names every temporary and kept file
//! before any is made, and records how far the set got.
//!
//! - `stage`: new contents and kept old files are being made beside their targets; nothing
//!   has been replaced. Recovery deletes what the journal names: the old set stands.
//! - `swap`: every new content is written and synced; renames are under way. Recovery
//!   renames what is left into place and deletes the kept files: the new set stands.
//! - `undo`: a failure is putting the old files back. Recovery finishes putting them back.
//!
//! A single file needs no journal (its one rename is atomic); a journal is written for a set
//! of two or more. The journal is read as data: every name in it is checked to be one
//! gpuplan makes before anything is renamed or deleted.

use super::fd::{e, open_sub};
use crate::fsio::{faults, ours, plain_relative, temp_name};
use rustix::fs::{self as rfs, AtFlags, FileType, Mode, OFlags};
use std::io;
use std::io::{Read, Write};
use std::os::fd::OwnedFd;

/// The journal's name in the directory the set is written under.
pub(in crate::fsio) const NAME: &str = ".gpuplan-journal.toml";

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub(super) enum Phase {
    Stage,
    Swap,
    Undo,
}

/// One target of the set.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Entry {
    /// The target's directory, relative to the locked one (`""` for itself).
    pub dir: String,
    pub name: String,
    /// The new content's temporary file; none for a removal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temp: Option<String>,
    /// The old file's kept hard link; none where no file stood.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backup: Option<String>,
}

#[derive(Debug, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Journal {
    pub version: u32,
    pub phase: Phase,
    /// Directories the set created (relative to the locked one): taken away again, if
    /// empty, when the set is undone.
    #[serde(default)]
    pub made: Vec<String>,
    #[serde(default)]
    pub entry: Vec<Entry>,
}

const HEADER: &str = "# gpuplan is writing a set of files in this directory (or was, until it was stopped).\n# The next gpuplan run that writes or reads here completes or undoes the set. Do not edit.\n";

/// Write the journal in `root`, atomically (a temporary file renamed over it, both synced).
pub(super) fn write(root: &OwnedFd, j: &Journal) -> io::Result<()> {
    let text = format!(
        "{HEADER}{}",
        toml::to_string(j).map_err(|err| io::Error::other(err.to_string()))?
    );
    let temp = temp_name(NAME, "new");
    let fd = rfs::openat(
        root,
        temp.as_str(),
        OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o644),
    )
    .map_err(e)?;
    let mut f = std::fs::File::from(fd);
    if f.write_all(text.as_bytes()).is_ok() && faults::step() {
        // A test's SIGKILL between the journal's two writes: its temporary file stays.
        return Err(io::Error::other("killed (a test's simulated SIGKILL)"));
    }
    let done = f
        .sync_all()
        .and_then(|()| rfs::renameat(root, temp.as_str(), root, NAME).map_err(e))
        .and_then(|()| rfs::fsync(root).map_err(e));
    if done.is_err() {
        let _ = rfs::unlinkat(root, temp.as_str(), AtFlags::empty());
    }
    done
}

/// Remove the journal: the set is whole, old or new.
pub(super) fn remove(root: &OwnedFd) -> io::Result<()> {
    match rfs::unlinkat(root, NAME, AtFlags::empty()) {
        Ok(()) | Err(rustix::io::Errno::NOENT) => rfs::fsync(root).map_err(e),
        Err(err) => Err(e(err)),
    }
}

/// Whether a journal stands in `root` (a set was interrupted, or is being written).
pub(super) fn present(root: &OwnedFd) -> bool {
    rfs::statat(root, NAME, AtFlags::SYMLINK_NOFOLLOW).is_ok()
}

fn damaged(why: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("`{NAME}` here is not a journal gpuplan wrote ({why}); nothing was changed: remove it if no gpuplan run is writing this directory"),
    )
}

fn read(root: &OwnedFd) -> io::Result<Option<Journal>> {
    let fd = match rfs::openat(
        root,
        NAME,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
        Mode::empty(),
    ) {
        Ok(fd) => fd,
        Err(rustix::io::Errno::NOENT) => return Ok(None),
        Err(rustix::io::Errno::LOOP) => return Err(damaged("a symbolic link")),
        Err(err) => return Err(e(err)),
    };
    if FileType::from_raw_mode(rfs::fstat(&fd).map_err(e)?.st_mode) != FileType::RegularFile {
        return Err(damaged("not a regular file"));
    }
    let mut text = String::new();
    std::fs::File::from(fd)
        .take(16 << 20)
        .read_to_string(&mut text)
        .map_err(|_| damaged("not UTF-8 text"))?;
    let j: Journal = toml::from_str(&text).map_err(|err| damaged(err.message()))?;
    if j.version != 1 {
        return Err(damaged("an unknown version"));
    }
    if !j.made.iter().all(|d| plain_relative(d)) {
        return Err(damaged("a directory it names is not a plain relative path"));
    }
    for en in &j.entry {
        let plain_dir = en.dir.is_empty() || plain_relative(&en.dir);
        let plain_name = plain_relative(&en.name) && !en.name.contains('/');
        let temp_ok = en.temp.as_deref().is_none_or(|t| ours(t) == Some("new"));
        let backup_ok = en.backup.as_deref().is_none_or(|b| ours(b) == Some("old"));
        if !(plain_dir && plain_name && temp_ok && backup_ok) {
            return Err(damaged("an entry names a file gpuplan does not make"));
        }
    }
    Ok(Some(j))
}

/// Whether settling `en` in `phase` would replace or remove the target itself (not only
/// gpuplan's own temporary and kept files beside it).
fn touches_target(dir: &OwnedFd, en: &Entry, phase: Phase) -> bool {
    let name = en.name.as_str();
    match phase {
        Phase::Stage => false,
        Phase::Swap => match (&en.temp, &en.backup) {
            (Some(t), _) => exists(dir, t),
            (None, Some(b)) => same_inode(dir, name, b),
            (None, None) => false,
        },
        Phase::Undo => match &en.backup {
            Some(b) => !same_inode(dir, name, b) && exists(dir, b),
            None => en.temp.is_some() && exists(dir, name),
        },
    }
}

/// The lists gpuplan keeps of the files it owns in a directory it writes sets into: render's
/// manifest and the refresh cache's list (with the cache's tag). A journal may touch these
/// and what they list, nothing else.
pub(super) const LISTS: [&str; 2] = [".gpuplan-render.toml", "sources.toml"];
const TAG: &str = "CACHEDIR.TAG";

/// An entry's path relative to the locked directory.
fn key(en: &Entry) -> String {
    if en.dir.is_empty() {
        en.name.clone()
    } else {
        format!("{}/{}", en.dir, en.name)
    }
}

/// Every path the directory's lists name, as they stand, as the set would leave them (a
/// list's new content staged beside it) and as they were (its kept old file), with the lists
/// themselves.
fn owned(root: &OwnedFd, j: &Journal) -> std::collections::BTreeSet<String> {
    let mut out: std::collections::BTreeSet<String> = LISTS
        .iter()
        .chain([&TAG])
        .map(|s| (*s).to_owned())
        .collect();
    for list in LISTS {
        let mut texts = vec![read_small(root, list)];
        for en in j
            .entry
            .iter()
            .filter(|en| en.dir.is_empty() && en.name == list)
        {
            texts.extend(
                en.temp
                    .iter()
                    .chain(&en.backup)
                    .map(|f| read_small(root, f)),
            );
        }
        for t in texts.into_iter().flatten() {
            if let Ok(v) = toml::from_str::<toml::Value>(&t) {
                strings(&v, &mut out);
            }
        }
    }
    out
}

/// Every string in a TOML value (a list's paths, wherever its format keeps them).
fn strings(v: &toml::Value, out: &mut std::collections::BTreeSet<String>) {
    match v {
        toml::Value::String(s) if plain_relative(s) => {
            out.insert(s.clone());
        }
        toml::Value::Array(a) => a.iter().for_each(|x| strings(x, out)),
        toml::Value::Table(t) => t.values().for_each(|x| strings(x, out)),
        _ => {}
    }
}

/// A small regular file's text in `dir`, not through a link; `None` otherwise.
fn read_small(dir: &OwnedFd, name: &str) -> Option<String> {
    let fd = rfs::openat(
        dir,
        name,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .ok()?;
    if FileType::from_raw_mode(rfs::fstat(&fd).ok()?.st_mode) != FileType::RegularFile {
        return None;
    }
    let mut text = String::new();
    std::fs::File::from(fd)
        .take(4 << 20)
        .read_to_string(&mut text)
        .ok()?;
    Some(text)
}

/// Complete or undo the set a journal in `root` describes, then remove the journal. A run
/// holding the directory's write lock calls this before it does anything else there.
pub(super) fn recover(root: &OwnedFd) -> io::Result<()> {
    let Some(j) = read(root)? else {
        return Ok(());
    };
    // Only files the directory's own lists say gpuplan owns are replaced or removed, checked
    // for every entry before any is settled: a journal planted beside files gpuplan never
    // wrote would otherwise delete or replace them.
    let owned = owned(root, &j);
    for en in &j.entry {
        let Some(dir) = open_dir(root, &en.dir)? else {
            continue;
        };
        if touches_target(dir.as_ref().unwrap_or(root), en, j.phase) && !owned.contains(&key(en)) {
            return Err(damaged(&format!(
                "it names `{}`, which no list of gpuplan's here names",
                crate::core::printable(&key(en))
            )));
        }
    }
    // The lists last, as the run that wrote the journal undoes them: killed again here,
    // they still name every file left to settle.
    let list = |en: &&Entry| en.dir.is_empty() && LISTS.contains(&en.name.as_str());
    let order = j
        .entry
        .iter()
        .filter(|en| !list(en))
        .chain(j.entry.iter().filter(list));
    for en in order {
        let Some(dir) = open_dir(root, &en.dir)? else {
            continue;
        };
        let dir = dir.as_ref().unwrap_or(root);
        settle(dir, en, j.phase)?;
    }
    if j.phase != Phase::Swap {
        for key in j.made.iter().rev() {
            let (parent, name) = key.rsplit_once('/').unwrap_or(("", key));
            if let Some(p) = open_dir(root, parent)? {
                let _ = rfs::unlinkat(p.as_ref().unwrap_or(root), name, AtFlags::REMOVEDIR);
            }
        }
    }
    remove(root)
}

/// The entry's directory: `None` when it is gone, `Some(None)` for `root` itself.
fn open_dir(root: &OwnedFd, key: &str) -> io::Result<Option<Option<OwnedFd>>> {
    if key.is_empty() {
        return Ok(Some(None));
    }
    let mut at: Option<OwnedFd> = None;
    for part in key.split('/') {
        match open_sub(at.as_ref().unwrap_or(root), part, false)? {
            Some((fd, _)) => at = Some(fd),
            None => return Ok(None),
        }
    }
    Ok(Some(at))
}

fn exists(dir: &OwnedFd, name: &str) -> bool {
    rfs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW).is_ok()
}

fn same_inode(dir: &OwnedFd, a: &str, b: &str) -> bool {
    match (
        rfs::statat(dir, a, AtFlags::SYMLINK_NOFOLLOW),
        rfs::statat(dir, b, AtFlags::SYMLINK_NOFOLLOW),
    ) {
        (Ok(x), Ok(y)) => x.st_dev == y.st_dev && x.st_ino == y.st_ino,
        _ => false,
    }
}

fn unlink(dir: &OwnedFd, name: &str) -> io::Result<()> {
    match rfs::unlinkat(dir, name, AtFlags::empty()) {
        Ok(()) | Err(rustix::io::Errno::NOENT) => Ok(()),
        Err(err) => Err(e(err)),
    }
}

fn settle(dir: &OwnedFd, en: &Entry, phase: Phase) -> io::Result<()> {
    let name = en.name.as_str();
    match phase {
        // Nothing was replaced: what was made beside the targets goes.
        Phase::Stage => {
            for t in en.temp.iter().chain(&en.backup) {
                unlink(dir, t)?;
            }
        }
        // Forward: what is not yet in place goes into place; the kept old files go.
        Phase::Swap => {
            match (&en.temp, &en.backup) {
                (Some(t), _) if exists(dir, t) => {
                    rfs::renameat(dir, t.as_str(), dir, name).map_err(e)?
                }
                (None, Some(b)) if same_inode(dir, name, b) => unlink(dir, name)?,
                _ => {}
            }
            if let Some(b) = &en.backup {
                unlink(dir, b)?;
            }
        }
        // Back: the new content goes and each kept old file returns to its name.
        Phase::Undo => {
            if let Some(t) = &en.temp {
                unlink(dir, t)?;
            }
            match &en.backup {
                Some(b) if same_inode(dir, name, b) => unlink(dir, b)?,
                Some(b) if exists(dir, b) => {
                    rfs::renameat(dir, b.as_str(), dir, name).map_err(e)?
                }
                Some(_) => {}
                // Nothing stood there before: a file there now is the set's new one.
                None if en.temp.is_some() => unlink(dir, name)?,
                None => {}
            }
        }
    }
    Ok(())
}
