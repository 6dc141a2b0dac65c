//! Directory locks: one writer or many readers, waited for with a bound, and the directory
//! made whole before the run uses it.

use super::journal;
use crate::fsio::{faults, notice, wait_limit, FileError, Hold};
use rustix::fs::{self as rfs, FlockOperation};
use std::io;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use super::clean::{leftovers, sweep};
use super::fd::{e, open_root};

/// A lock on a directory, held until dropped (closing the descriptor releases it).
pub(crate) struct DirLock {
    pub(super) fd: OwnedFd,
    root: PathBuf,
    /// Directories the lock made (outermost first): taken away again on drop unless a set
    /// was written.
    made: Vec<PathBuf>,
    pub(super) kept: std::cell::Cell<bool>,
    /// Shared locks on the directories above it, held as long as this one: a run writing
    /// into a directory nested in another run's output waits for that run (and that run
    /// for it) instead of sweeping its temporary and kept files.
    _above: Vec<OwnedFd>,
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

pub(in crate::fsio) fn lock(
    root: &Path,
    hold: Hold,
    create: bool,
) -> Result<Option<DirLock>, FileError> {
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
        // Outermost first, as every run takes them: no two runs wait on each other.
        let above = ancestors(root)
            .into_iter()
            .map(|(p, a)| wait(&a, FlockOperation::NonBlockingLockShared, &p).map(|()| a))
            .collect::<io::Result<Vec<OwnedFd>>>()
            .map_err(fail)?;
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
            _above: above,
        };
        settle(&lock, hold).map_err(fail)?;
        return Ok(Some(lock));
    }
    Err(fail(io::Error::other(
        "the directory kept being replaced while gpuplan waited for it",
    )))
}

/// The directories above `root` that can be opened, outermost first (the file system's
/// root itself left out: no run writes there).
fn ancestors(root: &Path) -> Vec<(PathBuf, OwnedFd)> {
    let Ok(real) = std::fs::canonicalize(root) else {
        return Vec::new();
    };
    let mut out: Vec<(PathBuf, OwnedFd)> = real
        .ancestors()
        .skip(1)
        .filter(|p| p.parent().is_some())
        .filter_map(|p| {
            rfs::open(
                p,
                rfs::OFlags::RDONLY | rfs::OFlags::DIRECTORY | rfs::OFlags::CLOEXEC,
                rfs::Mode::empty(),
            )
            .ok()
            .map(|fd| (p.to_owned(), fd))
        })
        .collect();
    out.reverse();
    out
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

/// `dir` locked for removal when no run holds it (an exclusive lock can be had at once),
/// held until the returned lock is dropped: a run that locks it meanwhile finds it gone
/// once it gets the lock, and makes its own again. A directory that cannot be opened or
/// locked counts as held, and is left alone.
pub(in crate::fsio) fn unused(dir: &Path) -> Option<OwnedFd> {
    let flags =
        rfs::OFlags::RDONLY | rfs::OFlags::DIRECTORY | rfs::OFlags::NOFOLLOW | rfs::OFlags::CLOEXEC;
    let fd = rfs::open(dir, flags, rfs::Mode::empty()).ok()?;
    rfs::flock(&fd, FlockOperation::NonBlockingLockExclusive).ok()?;
    Some(fd)
}
