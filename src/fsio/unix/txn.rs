//! Writing a set of files as one: stage every file, swap them in under a journal, and undo
//! or complete an interrupted set.

use super::journal;
use crate::fsio::imp::lock;
use crate::fsio::{
    faults, refuse, split_rel, temp_name, too_large, FileError, Hold, Tree, NOT_REGULAR, SYMLINK,
};
use rustix::fs::{self as rfs, AtFlags, FileType, Mode, OFlags};
use std::io;
use std::io::{Read, Write};
use std::os::fd::OwnedFd;
use std::path::Path;

use super::clean::sweep;
use super::fd::{e, open_root, open_sub};
use super::lock::DirLock;

/// What stands at a target now.
enum Prior {
    None,
    /// A regular file, kept under a hard link until the set is in place.
    File {
        backup: Option<String>,
        st: rfs::Stat,
    },
}

fn prior(dir: &OwnedFd, name: &str) -> io::Result<Prior> {
    match rfs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) => match FileType::from_raw_mode(st.st_mode) {
            FileType::RegularFile => Ok(Prior::File { backup: None, st }),
            FileType::Symlink => Err(refuse(io::ErrorKind::InvalidInput, SYMLINK)),
            _ => Err(refuse(io::ErrorKind::InvalidInput, NOT_REGULAR)),
        },
        Err(rustix::io::Errno::NOENT) => Ok(Prior::None),
        Err(err) => Err(e(err)),
    }
}

/// One target of the set, staged.
struct Staged {
    /// Index into the transaction's open directories ([`MISSING`] until made).
    dir: usize,
    /// The directory relative to the root, as the journal names it.
    key: String,
    name: String,
    rel: String,
    /// The temporary file the new content is written to (named before it is made, so the
    /// journal can name it), for a put; `None` for a removal.
    new: Option<String>,
    /// Whether the temporary file exists now.
    temp_made: bool,
    /// The name the old file is kept under, where a regular file stood.
    old: Option<String>,
    prior: Prior,
    done: bool,
}

/// The transaction: directories opened, targets staged; its `Drop` undoes whatever a
/// failure left, so no path out of `commit` leaves a temporary file or a half set.
struct Txn {
    dirs: Vec<(String, OwnedFd, bool)>,
    staged: Vec<Staged>,
    finished: bool,
    /// Sweep each directory entered of what an interrupted run left (writing, not reading).
    sweep: bool,
    /// The journal's phase, for a set that has one.
    journal: Option<journal::Phase>,
}

impl Txn {
    fn new(root: OwnedFd, sweep: bool) -> Txn {
        Txn {
            dirs: vec![(String::new(), root, false)],
            staged: Vec::new(),
            finished: !sweep,
            sweep,
            journal: None,
        }
    }

    fn dir(&mut self, parts: &[&str], create: bool) -> io::Result<Option<usize>> {
        let mut at = 0usize;
        let mut key = String::new();
        for p in parts {
            if !key.is_empty() {
                key.push('/');
            }
            key.push_str(p);
            if let Some(i) = self.dirs.iter().position(|(k, _, _)| *k == key) {
                at = i;
                continue;
            }
            let Some((fd, made)) = open_sub(&self.dirs[at].1, p, create)? else {
                return Ok(None);
            };
            if self.sweep && !made {
                sweep(&fd, None);
            }
            self.dirs.push((key.clone(), fd, made));
            at = self.dirs.len() - 1;
        }
        Ok(Some(at))
    }

    /// Remove the directory `key` (relative to the root) if it is empty.
    fn remove_dir(&self, key: &str) {
        let (parent, name) = key.rsplit_once('/').unwrap_or(("", key));
        if let Some(p) = self.dirs.iter().position(|(k, _, _)| k == parent) {
            let _ = rfs::unlinkat(&self.dirs[p].1, name, AtFlags::REMOVEDIR);
        }
    }

    fn write_journal(&mut self, phase: journal::Phase) -> io::Result<()> {
        let entry = self
            .staged
            .iter()
            .map(|s| journal::Entry {
                dir: s.key.clone(),
                name: s.name.clone(),
                temp: s.new.clone(),
                backup: s.old.clone(),
            })
            .collect();
        let j = journal::Journal {
            version: 1,
            phase,
            made: self.to_make(),
            entry,
        };
        journal::write(&self.dirs[0].1, &j)?;
        self.journal = Some(phase);
        killed()
    }

    /// The directories the set makes, outermost first: those it made and those still to
    /// make (every prefix of a missing target directory that is not open).
    fn to_make(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for (k, _, made) in &self.dirs {
            if *made {
                out.push(k.clone());
            }
        }
        for s in self.staged.iter().filter(|s| s.dir == MISSING) {
            let mut key = String::new();
            for part in s.key.split('/') {
                if !key.is_empty() {
                    key.push('/');
                }
                key.push_str(part);
                if !self.dirs.iter().any(|(k, _, _)| *k == key) && !out.contains(&key) {
                    out.push(key.clone());
                }
            }
        }
        out
    }

    /// Put back what was replaced or removed, newest first; take away what is new. The
    /// directory's lists of what gpuplan owns go back last, so a run killed here leaves them
    /// naming every new file still standing (recovery touches only what they name).
    fn undo(&self) {
        let list = |s: &&Staged| s.key.is_empty() && journal::LISTS.contains(&s.name.as_str());
        let order = self
            .staged
            .iter()
            .rev()
            .filter(|s| !list(s))
            .chain(self.staged.iter().rev().filter(list));
        for s in order {
            if killed().is_err() {
                return;
            }
            if s.dir == MISSING {
                continue;
            }
            let fd = &self.dirs[s.dir].1;
            if let (Some(t), true) = (&s.new, s.temp_made && !s.done) {
                let _ = rfs::unlinkat(fd, t.as_str(), AtFlags::empty());
            }
            let backup = match &s.prior {
                Prior::File {
                    backup: Some(b), ..
                } => Some(b),
                _ => None,
            };
            match (s.done, backup, &s.prior) {
                (false, Some(b), _) => {
                    let _ = rfs::unlinkat(fd, b.as_str(), AtFlags::empty());
                }
                (true, Some(b), _) => {
                    let _ = rfs::renameat(fd, b.as_str(), fd, s.name.as_str());
                }
                (true, None, Prior::None) => {
                    let _ = rfs::unlinkat(fd, s.name.as_str(), AtFlags::empty());
                }
                _ => {}
            }
        }
        // Directories the set made, innermost first (only if empty again).
        for i in (1..self.dirs.len()).rev() {
            if self.dirs[i].2 {
                let key = self.dirs[i].0.clone();
                self.remove_dir(&key);
            }
        }
    }
}

impl Drop for Txn {
    fn drop(&mut self) {
        if self.finished || faults::dead() {
            return;
        }
        // Past the point where every new file was written, the set is undone under an `undo`
        // journal; if that cannot be recorded, the `swap` journal stays and the next run
        // completes the set instead, so it is whole either way.
        if self.journal == Some(journal::Phase::Swap)
            && self.write_journal(journal::Phase::Undo).is_err()
        {
            return;
        }
        self.undo();
        if self.journal.is_some() && !faults::dead() {
            let _ = journal::remove(&self.dirs[0].1);
        }
    }
}

/// Keep the file at `name` under the hard link `backup`, so it can be put back exactly.
fn keep(dir: &OwnedFd, name: &str, backup: &str) -> io::Result<()> {
    rfs::linkat(dir, name, dir, backup, AtFlags::empty()).map_err(e)
}

/// Write `bytes` to the new file `temp` (created exclusively: a planted file or link under
/// that name makes this fail rather than be followed).
fn stage(dir: &OwnedFd, temp: &str, bytes: &[u8], prior: &Prior) -> io::Result<()> {
    let fd = rfs::openat(
        dir,
        temp,
        OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        // The kernel takes the umask off: `0666 & !umask`, as any tool's new file.
        Mode::from_raw_mode(0o666),
    )
    .map_err(e)?;
    let result = (|| {
        if let Prior::File { st, .. } = prior {
            // A replaced file keeps its mode, and its owner where this process may say so.
            rfs::fchmod(&fd, Mode::from_raw_mode(st.st_mode & 0o7777)).map_err(e)?;
            let _ = rfs::fchown(
                &fd,
                Some(rustix::fs::Uid::from_raw(st.st_uid)),
                Some(rustix::fs::Gid::from_raw(st.st_gid)),
            );
        }
        let mut f = std::fs::File::from(fd);
        f.write_all(bytes)?;
        f.sync_all()
    })();
    if result.is_err() {
        let _ = rfs::unlinkat(dir, temp, AtFlags::empty());
    }
    result
}

pub(in crate::fsio) fn commit(t: Tree, held: Option<&DirLock>) -> Result<(), FileError> {
    let own;
    let lock = match held {
        Some(l) => l,
        None => {
            own = lock(&t.root, Hold::Write, t.create_root)?.ok_or_else(|| FileError {
                path: t.root.clone(),
                source: io::Error::from(io::ErrorKind::NotFound),
            })?;
            &own
        }
    };
    let root = lock.fd.try_clone().map_err(|source| FileError {
        path: t.root.clone(),
        source,
    })?;
    let mut txn = Txn::new(root, true);
    check_targets(&t, &mut txn)?;
    let journaled = txn.staged.len() > 1;
    if journaled {
        txn.write_journal(journal::Phase::Stage)
            .map_err(|source| FileError {
                path: t.root.clone(),
                source,
            })?;
    }
    stage_all(&t, &mut txn)?;
    if journaled {
        txn.write_journal(journal::Phase::Swap)
            .map_err(|source| FileError {
                path: t.root.clone(),
                source,
            })?;
    }
    swap_all(&t, &mut txn)?;
    finish(&t, txn).map_err(|source| FileError {
        path: t.root.clone(),
        source,
    })?;
    lock.kept.set(true);
    Ok(())
}

/// A target whose directory the set has yet to make.
const MISSING: usize = usize::MAX;

/// Check every target before anything is written, and name each file the set will make.
/// Nothing is made here, directories included: the journal names them first.
fn check_targets(t: &Tree, txn: &mut Txn) -> Result<(), FileError> {
    let at = |rel: &str| t.root.join(rel);
    for (rel, _) in &t.puts {
        let fail = |source| FileError {
            path: at(rel),
            source,
        };
        let (parts, name) = split_rel(rel).map_err(fail)?;
        let (dir, prior) = match txn.dir(&parts, false).map_err(fail)? {
            Some(d) => (d, prior(&txn.dirs[d].1, name).map_err(fail)?),
            None => (MISSING, Prior::None),
        };
        txn.staged.push(Staged {
            dir,
            key: parts.join("/"),
            name: name.to_owned(),
            rel: rel.clone(),
            new: Some(temp_name(name, "new")),
            temp_made: false,
            old: matches!(prior, Prior::File { .. }).then(|| temp_name(name, "old")),
            prior,
            done: false,
        });
    }
    for rel in &t.removes {
        let fail = |source| FileError {
            path: at(rel),
            source,
        };
        let (parts, name) = split_rel(rel).map_err(fail)?;
        let Some(dir) = txn.dir(&parts, false).map_err(fail)? else {
            continue;
        };
        // Anything but a regular file (someone put a link or a device there) is not a file
        // gpuplan wrote any more: left alone.
        if let Ok(p @ Prior::File { .. }) = prior(&txn.dirs[dir].1, name) {
            txn.staged.push(Staged {
                dir,
                key: parts.join("/"),
                name: name.to_owned(),
                rel: rel.clone(),
                new: None,
                temp_made: false,
                old: Some(temp_name(name, "old")),
                prior: p,
                done: false,
            });
        }
    }
    Ok(())
}

/// New content beside each target (its directory made first where missing), old files kept
/// under a hard link.
fn stage_all(t: &Tree, txn: &mut Txn) -> Result<(), FileError> {
    for i in 0..txn.staged.len() {
        let target = t.root.join(&txn.staged[i].rel);
        let fail = |source| FileError {
            path: target.clone(),
            source,
        };
        if txn.staged[i].dir == MISSING {
            let key = txn.staged[i].key.clone();
            let parts: Vec<&str> = key.split('/').collect();
            txn.staged[i].dir = txn.dir(&parts, true).map_err(fail)?.unwrap_or(0);
            killed().map_err(fail)?;
        }
        let dir = txn.staged[i].dir;
        if let Some(b) = txn.staged[i].old.clone() {
            keep(&txn.dirs[dir].1, &txn.staged[i].name, &b).map_err(fail)?;
            if let Prior::File { backup, .. } = &mut txn.staged[i].prior {
                *backup = Some(b);
            }
            killed().map_err(fail)?;
        }
        if let Some(temp) = txn.staged[i].new.clone() {
            let bytes = &t.puts[i].1;
            stage(&txn.dirs[dir].1, &temp, bytes, &txn.staged[i].prior).map_err(fail)?;
            txn.staged[i].temp_made = true;
            killed().map_err(fail)?;
        }
    }
    Ok(())
}

/// Each rename is atomic; a failure drops `txn`, which puts everything back.
fn swap_all(t: &Tree, txn: &mut Txn) -> Result<(), FileError> {
    for i in 0..txn.staged.len() {
        let dir = &txn.dirs[txn.staged[i].dir].1;
        let s = &txn.staged[i];
        let r = match &s.new {
            _ if faults::fail_here(i) => Err(rustix::io::Errno::IO),
            Some(temp) => rfs::renameat(dir, temp.as_str(), dir, s.name.as_str()),
            None => rfs::unlinkat(dir, s.name.as_str(), AtFlags::empty()),
        };
        if let Err(err) = r {
            return Err(FileError {
                path: t.root.join(&s.rel),
                source: e(err),
            });
        }
        txn.staged[i].done = true;
        killed().map_err(|source| FileError {
            path: t.root.join(&txn.staged[i].rel),
            source,
        })?;
    }
    Ok(())
}

/// In place: the kept old files go, the directories are made durable, the journal goes, and
/// a directory left empty by a removal goes too if the set made nothing in it.
fn finish(t: &Tree, mut txn: Txn) -> io::Result<()> {
    for s in &txn.staged {
        if let Some(b) = &s.old {
            let _ = rfs::unlinkat(&txn.dirs[s.dir].1, b.as_str(), AtFlags::empty());
            killed()?;
        }
    }
    for (_, fd, _) in &txn.dirs {
        let _ = rfs::fsync(fd);
    }
    if txn.journal.is_some() {
        let _ = journal::remove(&txn.dirs[0].1);
    }
    txn.finished = true;
    let emptied: Vec<String> = txn
        .staged
        .iter()
        .filter(|s| s.new.is_none())
        .filter_map(|s| s.rel.rsplit_once('/').map(|(d, _)| d.to_owned()))
        .collect();
    for d in emptied {
        if !t.puts.iter().any(|(p, _)| p.starts_with(&format!("{d}/"))) {
            txn.remove_dir(&d);
        }
    }
    Ok(())
}

/// After each write a commit makes: in tests, where a simulated SIGKILL stops the run.
fn killed() -> io::Result<()> {
    if faults::step() {
        return Err(io::Error::other("killed (a test's simulated SIGKILL)"));
    }
    Ok(())
}

pub(in crate::fsio) fn read_tree(
    root: &Path,
    rels: &[String],
    limit: u64,
) -> Result<Vec<Option<Vec<u8>>>, FileError> {
    let whole = |source| FileError {
        path: root.to_owned(),
        source,
    };
    let root_fd = match open_root(root, false) {
        Ok((fd, _)) => fd,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(vec![None; rels.len()]),
        Err(err) => return Err(whole(err)),
    };
    let mut txn = Txn::new(root_fd, false);
    let mut out = Vec::with_capacity(rels.len());
    for rel in rels {
        let fail = |source| FileError {
            path: root.join(rel),
            source,
        };
        let (parts, name) = split_rel(rel).map_err(fail)?;
        let Some(dir) = txn.dir(&parts, false).map_err(fail)? else {
            out.push(None);
            continue;
        };
        let dfd = &txn.dirs[dir].1;
        match prior(dfd, name).map_err(fail)? {
            Prior::None => out.push(None),
            Prior::File { .. } => {
                let fd = rfs::openat(
                    dfd,
                    name,
                    OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
                    Mode::empty(),
                )
                .map_err(e)
                .map_err(fail)?;
                let st = rfs::fstat(&fd).map_err(e).map_err(fail)?;
                if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile {
                    return Err(fail(refuse(io::ErrorKind::InvalidInput, NOT_REGULAR)));
                }
                let mut buf = Vec::new();
                std::fs::File::from(fd)
                    .take(limit + 1)
                    .read_to_end(&mut buf)
                    .map_err(fail)?;
                if buf.len() as u64 > limit {
                    return Err(fail(too_large(limit)));
                }
                out.push(Some(buf));
            }
        }
    }
    Ok(out)
}
