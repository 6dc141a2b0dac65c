//! The POSIX implementation: directory file descriptors and the `*at` calls.

use super::*;
use rustix::fs::{self as rfs, AtFlags, FileType, FlockOperation, Mode, OFlags, CWD};
use std::os::fd::OwnedFd;

pub(super) fn e(err: rustix::io::Errno) -> io::Error {
    io::Error::from(err)
}

pub(super) fn open(path: &Path, kind: Input) -> io::Result<Opened> {
    let fd = rfs::openat(
        CWD,
        path,
        OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(e)?;
    let st = rfs::fstat(&fd).map_err(e)?;
    let ft = FileType::from_raw_mode(st.st_mode);
    let len = match ft {
        FileType::RegularFile => Some(st.st_size as u64),
        FileType::Fifo if kind == Input::RegularOrPipe => {
            // A pipe someone handed over: read it as a pipe is read, waiting for data.
            let fl = rfs::fcntl_getfl(&fd).map_err(e)?;
            rfs::fcntl_setfl(&fd, fl - OFlags::NONBLOCK).map_err(e)?;
            None
        }
        _ => return Err(refuse(io::ErrorKind::InvalidInput, NOT_REGULAR_INPUT)),
    };
    Ok(Opened {
        file: std::fs::File::from(fd),
        len,
    })
}

pub(super) fn same_file(a: &Path, b: &Path) -> bool {
    match (rfs::stat(a), rfs::stat(b)) {
        (Ok(x), Ok(y)) => x.st_dev == y.st_dev && x.st_ino == y.st_ino,
        _ => false,
    }
}

/// The directory the user named, followed as they spelled it (it is theirs to choose).
fn open_root(root: &Path, create: bool) -> io::Result<(OwnedFd, Vec<PathBuf>)> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    match rfs::openat(CWD, root, flags, Mode::empty()) {
        Ok(fd) => Ok((fd, Vec::new())),
        Err(rustix::io::Errno::NOENT) if create => {
            // The directories this creates, outermost first, to remove again on failure.
            let mut made = Vec::new();
            let mut at = PathBuf::new();
            for c in root.components() {
                // `x/../cache` with no `x`: the system would make `x` to go back out of it.
                if c == Component::ParentDir && made.last() == Some(&at) {
                    return Err(refuse(
                        io::ErrorKind::NotFound,
                        "a `..` follows a directory that does not exist; give the path without it",
                    ));
                }
                at.push(c);
                if !at.exists() {
                    made.push(at.clone());
                }
            }
            std::fs::create_dir_all(root)?;
            let fd = rfs::openat(CWD, root, flags, Mode::empty()).map_err(e)?;
            Ok((fd, made))
        }
        Err(rustix::io::Errno::NOTDIR) => {
            Err(refuse(io::ErrorKind::InvalidInput, "not a directory"))
        }
        Err(err) => Err(e(err)),
    }
}

/// `name` inside `dir`, as a directory, never through a symbolic link.
pub(super) fn open_sub(
    dir: &OwnedFd,
    name: &str,
    create: bool,
) -> io::Result<Option<(OwnedFd, bool)>> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let mut made = false;
    match rfs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) => match FileType::from_raw_mode(st.st_mode) {
            FileType::Directory => {}
            FileType::Symlink => return Err(refuse(io::ErrorKind::InvalidInput, SYMLINK)),
            _ => {
                return Err(refuse(
                    io::ErrorKind::InvalidInput,
                    "not a directory, where gpuplan writes a directory",
                ))
            }
        },
        Err(rustix::io::Errno::NOENT) if create => {
            rfs::mkdirat(dir, name, Mode::from_raw_mode(0o777)).map_err(e)?;
            made = true;
        }
        Err(rustix::io::Errno::NOENT) => return Ok(None),
        Err(err) => return Err(e(err)),
    }
    let fd = rfs::openat(dir, name, flags, Mode::empty()).map_err(|err| match err {
        rustix::io::Errno::LOOP => refuse(io::ErrorKind::InvalidInput, SYMLINK),
        other => e(other),
    })?;
    Ok(Some((fd, made)))
}

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

    /// Put back what was replaced or removed, newest first; take away what is new.
    fn undo(&self) {
        for s in self.staged.iter().rev() {
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

// ---------------------------------------------------------------------------------------
// Locks

/// A lock on a directory, held until dropped (closing the descriptor releases it).
pub(crate) struct DirLock {
    fd: OwnedFd,
    root: PathBuf,
    /// Directories the lock made (outermost first): taken away again on drop unless a set
    /// was written.
    made: Vec<PathBuf>,
    kept: std::cell::Cell<bool>,
}

impl Drop for DirLock {
    fn drop(&mut self) {
        if !self.kept.get() && !faults::dead() {
            for d in self.made.iter().rev() {
                let _ = std::fs::remove_dir(d);
            }
        }
    }
}

pub(super) fn lock(root: &Path, hold: Hold, create: bool) -> Result<Option<DirLock>, FileError> {
    let fail = |source| FileError {
        path: root.to_owned(),
        source,
    };
    // A directory removed while this run waited (a first refresh that failed takes away the
    // directory it made) is no longer the one the path names: open it again.
    for _ in 0..8 {
        let (fd, made) = match open_root(root, create && hold == Hold::Write) {
            Ok(x) => x,
            Err(err) if err.kind() == io::ErrorKind::NotFound && !create => return Ok(None),
            Err(err) => return Err(fail(err)),
        };
        let op = match hold {
            Hold::Read => FlockOperation::NonBlockingLockShared,
            Hold::Write => FlockOperation::NonBlockingLockExclusive,
        };
        wait(&fd, op, root).map_err(fail)?;
        let here = match (rfs::fstat(&fd), rfs::stat(root)) {
            (Ok(a), Ok(b)) => a.st_dev == b.st_dev && a.st_ino == b.st_ino,
            _ => false,
        };
        if !here {
            continue;
        }
        let lock = DirLock {
            fd,
            root: root.to_owned(),
            made,
            kept: std::cell::Cell::new(false),
        };
        settle(&lock, hold).map_err(fail)?;
        return Ok(Some(lock));
    }
    Err(fail(io::Error::other(
        "the directory kept being replaced while gpuplan waited for it",
    )))
}

/// Take the lock `op` (non-blocking), polling until [`wait_limit`]; say once that this run
/// waits, and name the setting when it gives up.
fn wait(fd: &OwnedFd, op: FlockOperation, root: &Path) -> io::Result<()> {
    let limit = wait_limit();
    let deadline = std::time::Instant::now() + limit;
    let mut told = false;
    loop {
        match rfs::flock(fd, op) {
            Ok(()) => return Ok(()),
            Err(rustix::io::Errno::WOULDBLOCK | rustix::io::Errno::INTR) => {}
            // A file system without locks (some NFS and FUSE mounts): as Cargo does, go on
            // without one and say so; the journal still makes every set whole.
            Err(
                rustix::io::Errno::NOLCK
                | rustix::io::Errno::OPNOTSUPP
                | rustix::io::Errno::NOSYS
                | rustix::io::Errno::BADF,
            ) => {
                notice(&format!(
                    "`{}` is on a file system without locks; gpuplan goes on without one (two runs at once there may interleave)",
                    crate::core::shown(root)
                ));
                return Ok(());
            }
            Err(err) => return Err(e(err)),
        }
        if std::time::Instant::now() >= deadline {
            return Err(io::Error::new(
                io::ErrorKind::WouldBlock,
                format!(
                    "another gpuplan run is using this directory; gave up after waiting {} s (GPUPLAN_LOCK_TIMEOUT sets the wait)",
                    limit.as_secs()
                ),
            ));
        }
        if !told {
            notice(&format!(
                "waiting for another gpuplan run that is using `{}` (at most {} s; GPUPLAN_LOCK_TIMEOUT sets the wait)",
                crate::core::shown(root),
                limit.as_secs()
            ));
            told = true;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// Make the locked directory whole before the run uses it: an interrupted set is completed
/// or undone and its temporary files swept. A reader that finds a journal or such files
/// takes the write lock for that, then goes back to sharing.
fn settle(lock: &DirLock, hold: Hold) -> io::Result<()> {
    match hold {
        Hold::Write => {
            journal::recover(&lock.fd)?;
            sweep(&lock.fd, Some(&lock.root));
            Ok(())
        }
        Hold::Read if journal::present(&lock.fd) || !leftovers(&lock.fd).is_empty() => {
            wait(
                &lock.fd,
                FlockOperation::NonBlockingLockExclusive,
                &lock.root,
            )?;
            journal::recover(&lock.fd)?;
            sweep(&lock.fd, Some(&lock.root));
            rfs::flock(&lock.fd, FlockOperation::LockShared).map_err(e)
        }
        Hold::Read => Ok(()),
    }
}

/// The names in `dir` that an interrupted gpuplan run may have left: its temporary files
/// and staging directories (what they are is checked before anything is deleted).
fn leftovers(dir: &OwnedFd) -> Vec<String> {
    let Ok(mut entries) = rfs::Dir::read_from(dir) else {
        return Vec::new();
    };
    let mut names = Vec::new();
    while let Some(Ok(entry)) = entries.next() {
        if let Ok(n) = entry.file_name().to_str() {
            if ours(n).is_some() || stage_dir(n) {
                names.push(n.to_owned());
            }
        }
    }
    names
}

/// Delete what an interrupted gpuplan run left in `dir`: its temporary files (names only
/// [`temp_name`] makes, regular files only) and, given the directory's path, a refresh's
/// staging directory. Called under the write lock, so no live run's files are among them.
fn sweep(dir: &OwnedFd, path: Option<&Path>) {
    for n in leftovers(dir) {
        let Ok(st) = rfs::statat(dir, n.as_str(), AtFlags::SYMLINK_NOFOLLOW) else {
            continue;
        };
        match FileType::from_raw_mode(st.st_mode) {
            FileType::RegularFile if ours(&n).is_some() => {
                let _ = rfs::unlinkat(dir, n.as_str(), AtFlags::empty());
            }
            FileType::Directory if stage_dir(&n) => {
                if let Some(p) = path {
                    // Removes links as links, never what they point to.
                    let _ = std::fs::remove_dir_all(p.join(&n));
                }
            }
            _ => {}
        }
    }
}

// ---------------------------------------------------------------------------------------
// The set

pub(super) fn commit(t: Tree, held: Option<&DirLock>) -> Result<(), FileError> {
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

pub(super) fn read_tree(
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
