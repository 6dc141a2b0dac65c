//! Elsewhere: the same rules with the standard library's calls, each component checked.

use std::io::{self, Write as _};
use std::path::{Path, PathBuf};

use super::{
    refuse, split_rel, FileError, Hold, Input, Opened, Tree, NOT_REGULAR, NOT_REGULAR_INPUT,
    SYMLINK,
};

pub(super) fn open(path: &Path, kind: Input) -> io::Result<Opened> {
    let _ = kind;
    let meta = std::fs::metadata(path)?;
    if !meta.is_file() {
        return Err(refuse(io::ErrorKind::InvalidInput, NOT_REGULAR_INPUT));
    }
    Ok(Opened {
        file: std::fs::File::open(path)?,
        len: Some(meta.len()),
    })
}

pub(super) fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(x), Ok(y)) => x == y,
        _ => false,
    }
}

fn check(root: &Path, rel: &str, create: bool) -> io::Result<PathBuf> {
    let (parts, name) = split_rel(rel)?;
    let mut at = root.to_owned();
    for p in parts {
        at.push(p);
        match std::fs::symlink_metadata(&at) {
            Ok(m) if m.file_type().is_symlink() => {
                return Err(refuse(io::ErrorKind::InvalidInput, SYMLINK))
            }
            Ok(m) if !m.is_dir() => {
                return Err(refuse(io::ErrorKind::InvalidInput, "not a directory"))
            }
            Ok(_) => {}
            Err(_) if create => std::fs::create_dir(&at)?,
            Err(err) => return Err(err),
        }
    }
    at.push(name);
    match std::fs::symlink_metadata(&at) {
        Ok(m) if m.file_type().is_symlink() => Err(refuse(io::ErrorKind::InvalidInput, SYMLINK)),
        Ok(m) if !m.is_file() => Err(refuse(io::ErrorKind::InvalidInput, NOT_REGULAR)),
        _ => Ok(at),
    }
}

/// Elsewhere no lock is taken: the directory is only made and named.
pub(crate) struct DirLock;

pub(super) fn lock(root: &Path, hold: Hold, create: bool) -> Result<Option<DirLock>, FileError> {
    if create && hold == Hold::Write {
        std::fs::create_dir_all(root).map_err(|source| FileError {
            path: root.to_owned(),
            source,
        })?;
    }
    Ok(root.is_dir().then_some(DirLock))
}

pub(super) fn commit(t: Tree, _held: Option<&DirLock>) -> Result<(), FileError> {
    if t.create_root {
        std::fs::create_dir_all(&t.root).map_err(|source| FileError {
            path: t.root.clone(),
            source,
        })?;
    }
    let mut staged = Vec::new();
    for (rel, bytes) in &t.puts {
        let fail = |source| FileError {
            path: t.root.join(rel),
            source,
        };
        let target = check(&t.root, rel, true).map_err(fail)?;
        let before = std::fs::read(&target).ok();
        let dir = target.parent().unwrap_or(&t.root).to_owned();
        let mut tmp = tempfile::Builder::new()
            .prefix(".gpuplan-")
            .tempfile_in(&dir)
            .map_err(fail)?;
        tmp.write_all(bytes).map_err(fail)?;
        staged.push((tmp, target, before));
    }
    let mut done: Vec<(PathBuf, Option<Vec<u8>>)> = Vec::new();
    for (tmp, target, before) in staged {
        if let Err(err) = tmp.persist(&target) {
            for (p, old) in done.into_iter().rev() {
                match old {
                    Some(b) => {
                        let _ = std::fs::write(&p, b);
                    }
                    None => {
                        let _ = std::fs::remove_file(&p);
                    }
                }
            }
            return Err(FileError {
                path: target,
                source: err.error,
            });
        }
        done.push((target, before));
    }
    for rel in &t.removes {
        if let Ok(p) = check(&t.root, rel, false) {
            let _ = std::fs::remove_file(p);
        }
    }
    Ok(())
}

pub(super) fn read_tree(
    root: &Path,
    rels: &[String],
    limit: u64,
) -> Result<Vec<Option<Vec<u8>>>, FileError> {
    rels.iter()
        .map(|rel| {
            let fail = |source| FileError {
                path: root.join(rel),
                source,
            };
            let p = check(root, rel, false).map_err(fail)?;
            match std::fs::metadata(&p) {
                Err(_) => Ok(None),
                Ok(_) => super::read(&p, limit).map(Some).map_err(fail),
            }
        })
        .collect()
}

pub(super) fn rename_new(from: &Path, to: &Path) -> io::Result<()> {
    if std::fs::symlink_metadata(to).is_ok() {
        return Err(io::ErrorKind::AlreadyExists.into());
    }
    std::fs::rename(from, to)
}

pub(super) fn sync_dir(_dir: &Path) {}

/// Without locks no staging directory can be known to be abandoned: none is removed.
pub(super) fn unused(_dir: &Path) -> Option<()> {
    None
}
