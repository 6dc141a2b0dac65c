//! Directory descriptors: opening a path, a tree's root and its subdirectories without
//! following a link, and reading files under a root.

use crate::fsio::{refuse, wait_limit, Input, Opened, NOT_REGULAR_INPUT, SYMLINK};
use rustix::fs::{self as rfs, AtFlags, FileType, Mode, OFlags, CWD};
use std::io;
use std::os::fd::OwnedFd;
use std::path::{Component, Path, PathBuf};

pub(in crate::fsio) fn e(err: rustix::io::Errno) -> io::Error {
    io::Error::from(err)
}

pub(in crate::fsio) fn open(path: &Path, kind: Input) -> io::Result<Opened> {
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
            // A pipe someone handed over: read it as a pipe is read, waiting for data. A FIFO
            // whose writer has not opened it yet would read as empty at once; its writer is
            // waited for first (as long as a lock is), then it is read to its end.
            wait_for_writer(&fd, path)?;
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

/// Wait until a FIFO has data or its writer has come and gone, at most `GPUPLAN_LOCK_TIMEOUT`
/// (60 s unless set).
fn wait_for_writer(fd: &OwnedFd, path: &Path) -> io::Result<()> {
    use rustix::event::{poll, PollFd, PollFlags, Timespec};
    let limit = wait_limit();
    let timeout = Timespec {
        tv_sec: i64::try_from(limit.as_secs()).unwrap_or(i64::MAX),
        tv_nsec: 0,
    };
    let start = std::time::Instant::now();
    loop {
        let mut fds = [PollFd::new(fd, PollFlags::IN)];
        match poll(&mut fds, Some(&timeout)) {
            Ok(0) => {
                return Err(refuse(
                    io::ErrorKind::TimedOut,
                    &format!(
                        "no one wrote to the pipe `{}` within {} s (GPUPLAN_LOCK_TIMEOUT): its writer never opened it",
                        crate::core::shown(path),
                        limit.as_secs()
                    ),
                ))
            }
            Ok(_) => return Ok(()),
            Err(rustix::io::Errno::INTR) if start.elapsed() < limit => continue,
            Err(err) => return Err(e(err)),
        }
    }
}

pub(in crate::fsio) fn same_file(a: &Path, b: &Path) -> bool {
    match (rfs::stat(a), rfs::stat(b)) {
        (Ok(x), Ok(y)) => x.st_dev == y.st_dev && x.st_ino == y.st_ino,
        _ => false,
    }
}

/// The directory the user named, followed as they spelled it (it is theirs to choose).
pub(in crate::fsio) fn open_root(root: &Path, create: bool) -> io::Result<(OwnedFd, Vec<PathBuf>)> {
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
pub(in crate::fsio) fn open_sub(
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

/// Rename `from` to `to` only if nothing is at `to` (an existing one is `AlreadyExists`).
pub(in crate::fsio) fn rename_new(from: &Path, to: &Path) -> io::Result<()> {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        rfs::renameat_with(CWD, from, CWD, to, rfs::RenameFlags::NOREPLACE).map_err(e)
    }
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    {
        if std::fs::symlink_metadata(to).is_ok() {
            return Err(io::ErrorKind::AlreadyExists.into());
        }
        rfs::renameat(CWD, from, CWD, to).map_err(e)
    }
}

/// Make a directory's entries durable (a rename into it), as far as the system allows.
pub(in crate::fsio) fn sync_dir(dir: &Path) {
    if let Ok(fd) = rfs::open(
        dir,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    ) {
        let _ = rfs::fsync(&fd);
    }
}
