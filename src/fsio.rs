//! Files: every file gpuplan reads from a path it was given or found in data, and every file
//! it writes, goes through here, so the rules hold everywhere at once.
//!
//! Reading: only regular files (a pipe too, where a person hands gpuplan a plan through one),
//! opened without blocking so a FIFO planted at a path can never hang a command, and never
//! more than a stated number of bytes.
//!
//! Writing ([`write_file`], [`Tree`]): only regular files are replaced; a device, a FIFO, a
//! socket, a directory or a symbolic link at a target is refused, and no directory below the
//! one the user named is entered through a symbolic link (each is opened relative to its
//! parent with `O_NOFOLLOW`). Every file is written to an exclusively created temporary file
//! beside its target and renamed over it only when every file of the set is written; a new
//! file gets `0666 & !umask`, a replaced one keeps its mode and owner (it is the old file's
//! hard link that is kept until the set is in place, so a failure puts back the very file
//! that was there). Directories the set created go again on failure. The directory written
//! into is locked (`flock`) for the whole set, so two gpuplan runs never interleave.
//! Errors name the target, never a temporary file.

use std::io::{self, Read as _, Write as _};
use std::path::{Component, Path, PathBuf};

/// What went wrong with which file: the path is the user's target, never a temporary name.
#[derive(Debug, thiserror::Error)]
#[error("`{}`: {source}", crate::core::printable(&path.display().to_string()))]
pub(crate) struct FileError {
    pub path: PathBuf,
    #[source]
    pub source: io::Error,
}

fn refuse(kind: io::ErrorKind, why: &str) -> io::Error {
    io::Error::new(kind, why.to_owned())
}

pub(crate) const NOT_REGULAR: &str =
    "not a regular file (a device, a FIFO, a socket or a directory); gpuplan writes only regular files (use `-` for standard output)";
const NOT_REGULAR_INPUT: &str = "not a regular file (a device, a FIFO, a socket or a directory)";
const SYMLINK: &str =
    "a symbolic link; gpuplan neither writes through links nor replaces them (name the file it points to; `-` is standard output)";

// ---------------------------------------------------------------------------------------
// Reading

/// Whether a reader accepts a pipe besides a regular file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Input {
    /// Data files (catalog, cache, templates, baselines, telemetry): a regular file only.
    Regular,
    /// A file a person names on the command line and may hand over through a pipe
    /// (`gpuplan diff <(git show main:plan.toml) plan.toml`): a regular file or a pipe.
    RegularOrPipe,
}

/// An opened input and what it is.
pub(crate) struct Opened {
    pub file: std::fs::File,
    /// Its size when it is a regular file.
    pub len: Option<u64>,
}

/// Open `path` for reading as `kind` allows. A FIFO never blocks the open, and is refused
/// unless pipes are allowed; a device, a socket or a directory is always refused.
pub(crate) fn open(path: &Path, kind: Input) -> io::Result<Opened> {
    imp::open(path, kind)
}

/// Read at most `limit` bytes of a regular file; a longer file is an error, not a silent cut.
pub(crate) fn read(path: &Path, limit: u64) -> io::Result<Vec<u8>> {
    read_as(path, limit, Input::Regular)
}

/// [`read`], with what `kind` accepts; `-` is standard input where pipes are accepted.
pub(crate) fn read_as(path: &Path, limit: u64, kind: Input) -> io::Result<Vec<u8>> {
    let buf = if path.as_os_str() == "-" && kind == Input::RegularOrPipe {
        let mut buf = Vec::new();
        io::stdin().lock().take(limit + 1).read_to_end(&mut buf)?;
        buf
    } else {
        prefix_of(open(path, kind)?, limit + 1)?
    };
    if buf.len() as u64 > limit {
        return Err(too_large(limit));
    }
    Ok(buf)
}

/// [`read`] as UTF-8 text.
pub(crate) fn read_text(path: &Path, limit: u64) -> io::Result<String> {
    String::from_utf8(read(path, limit)?)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "not valid UTF-8"))
}

fn prefix_of(o: Opened, n: u64) -> io::Result<Vec<u8>> {
    let mut buf = Vec::with_capacity(o.len.unwrap_or(0).min(n).min(64 << 20) as usize);
    o.file.take(n).read_to_end(&mut buf)?;
    Ok(buf)
}

pub(crate) fn too_large(limit: u64) -> io::Error {
    let size = if limit >= 1 << 20 {
        format!("{} MiB", limit >> 20)
    } else {
        format!("{limit} bytes")
    };
    io::Error::new(
        io::ErrorKind::FileTooLarge,
        format!("larger than {size}, the limit for this input"),
    )
}

/// Whether two paths name the same file (the same device and inode), so a command never
/// writes its output over one of its inputs.
pub(crate) fn same_file(a: &Path, b: &Path) -> bool {
    imp::same_file(a, b)
}

// ---------------------------------------------------------------------------------------
// Writing

/// Write one file as [`Tree`] writes a set: `path`'s directory as the user named it, the file
/// itself replaced only if it is a regular file.
pub(crate) fn write_file(path: &Path, bytes: &[u8]) -> Result<(), FileError> {
    let fail = |source| FileError {
        path: path.to_owned(),
        source,
    };
    let name = match path.components().next_back() {
        Some(Component::Normal(n)) => n.to_string_lossy().into_owned(),
        _ => return Err(fail(refuse(io::ErrorKind::InvalidInput, "not a file name"))),
    };
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let mut t = Tree::new(dir, false);
    t.put(&name, bytes.to_vec());
    t.commit().map_err(|e| FileError {
        path: path.to_owned(),
        source: e.source,
    })
}

/// A set of files written under one directory, all or nothing: every target is checked and
/// staged before any is replaced. `rel` paths are plain relative names (`terraform/main.tf`).
pub(crate) struct Tree {
    root: PathBuf,
    create_root: bool,
    puts: Vec<(String, Vec<u8>)>,
    removes: Vec<String>,
}

impl Tree {
    /// A set to write under `root`; `create` makes `root` (and its parents) when missing.
    pub(crate) fn new(root: &Path, create: bool) -> Tree {
        Tree {
            root: root.to_owned(),
            create_root: create,
            puts: Vec::new(),
            removes: Vec::new(),
        }
    }

    /// Write `bytes` at `rel`; files are renamed into place in the order they were put.
    pub(crate) fn put(&mut self, rel: &str, bytes: Vec<u8>) {
        self.puts.push((rel.to_owned(), bytes));
    }

    /// Remove the regular file at `rel` (a file gpuplan wrote before) with the set; a missing
    /// file is no error.
    pub(crate) fn remove(&mut self, rel: &str) {
        self.removes.push(rel.to_owned());
    }

    /// Carry the set out. On any error the directory is as it was.
    pub(crate) fn commit(self) -> Result<(), FileError> {
        imp::commit(self)
    }
}

/// The content of each of `rels` under `root` as it is on disk now (`None` where there is no
/// file), read without following a symbolic link below `root` and never from anything but a
/// regular file: what `render --check` compares.
pub(crate) fn read_tree(
    root: &Path,
    rels: &[String],
    limit: u64,
) -> Result<Vec<Option<Vec<u8>>>, FileError> {
    imp::read_tree(root, rels, limit)
}

/// A relative path gpuplan may write or remove under a directory: plain names only (no
/// `..`, no root, no empty or `.` component, no backslash, no NUL).
pub(crate) fn plain_relative(rel: &str) -> bool {
    !rel.is_empty()
        && !rel.contains(['\\', '\0'])
        && rel
            .split('/')
            .all(|c| !c.is_empty() && c != "." && c != "..")
}

fn split_rel(rel: &str) -> io::Result<(Vec<&str>, &str)> {
    if !plain_relative(rel) {
        return Err(refuse(
            io::ErrorKind::InvalidInput,
            "not a plain relative path",
        ));
    }
    let mut parts: Vec<&str> = rel.split('/').collect();
    let name = parts.pop().unwrap_or_default();
    Ok((parts, name))
}

/// A name for a temporary file no one can guess: created exclusively, so a planted file or
/// link under that name makes the create fail rather than be followed.
fn temp_name(target: &str, what: &str) -> String {
    use std::hash::{BuildHasher as _, Hasher as _};
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u32(std::process::id());
    h.write_u64(N.fetch_add(1, Ordering::Relaxed));
    if let Ok(t) = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
        h.write_u128(t.as_nanos());
    }
    let short: String = target.chars().take(40).collect();
    format!(".{short}.gpuplan-{what}-{:016x}", h.finish())
}

/// Faults the tests inject into a commit, to see it roll back.
mod faults {
    #[cfg(test)]
    thread_local! {
        /// The swap step (1-based) at which this thread's next commit fails, as a full disk
        /// or a lost mount would make it; 0 for none.
        pub(super) static FAIL_AT: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    }

    #[cfg_attr(not(unix), allow(dead_code))]
    pub(super) fn fail_here(step: usize) -> bool {
        #[cfg(test)]
        return FAIL_AT.with(|f| f.get() == step + 1);
        #[cfg(not(test))]
        {
            let _ = step;
            false
        }
    }
}

#[cfg(unix)]
mod imp {
    //! The POSIX implementation: directory file descriptors and the `*at` calls.

    use super::*;
    use rustix::fs::{self as rfs, AtFlags, FileType, FlockOperation, Mode, OFlags, CWD};
    use std::os::fd::OwnedFd;

    fn e(err: rustix::io::Errno) -> io::Error {
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
    fn open_sub(dir: &OwnedFd, name: &str, create: bool) -> io::Result<Option<(OwnedFd, bool)>> {
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
        dir: usize,
        name: String,
        rel: String,
        temp: Option<String>,
        prior: Prior,
        done: bool,
    }

    /// The transaction: directories opened, targets staged; its `Drop` undoes whatever a
    /// failure left, so no path out of `commit` leaves a temporary file or a half set.
    struct Txn {
        root_made: Vec<PathBuf>,
        dirs: Vec<(String, OwnedFd, bool)>,
        staged: Vec<Staged>,
        finished: bool,
    }

    impl Txn {
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
                self.dirs.push((key.clone(), fd, made));
                at = self.dirs.len() - 1;
            }
            Ok(Some(at))
        }
    }

    impl Txn {
        /// Remove the directory `key` (relative to the root) if it is empty.
        fn remove_dir(&self, key: &str) {
            let (parent, name) = key.rsplit_once('/').unwrap_or(("", key));
            if let Some(p) = self.dirs.iter().position(|(k, _, _)| k == parent) {
                let _ = rfs::unlinkat(&self.dirs[p].1, name, AtFlags::REMOVEDIR);
            }
        }
    }

    impl Drop for Txn {
        fn drop(&mut self) {
            if self.finished {
                return;
            }
            // Put back what was replaced or removed, newest first; take away what is new.
            for s in self.staged.iter().rev() {
                let fd = &self.dirs[s.dir].1;
                if let Some(t) = &s.temp {
                    let _ = rfs::unlinkat(fd, t.as_str(), AtFlags::empty());
                }
                if !s.done {
                    if let Prior::File {
                        backup: Some(b), ..
                    } = &s.prior
                    {
                        let _ = rfs::unlinkat(fd, b.as_str(), AtFlags::empty());
                    }
                    continue;
                }
                match &s.prior {
                    Prior::File {
                        backup: Some(b), ..
                    } => {
                        let _ = rfs::renameat(fd, b.as_str(), fd, s.name.as_str());
                    }
                    Prior::File { backup: None, .. } => {}
                    Prior::None => {
                        let _ = rfs::unlinkat(fd, s.name.as_str(), AtFlags::empty());
                    }
                }
            }
            // Directories the set made, innermost first (only if empty again).
            for i in (1..self.dirs.len()).rev() {
                if self.dirs[i].2 {
                    let key = self.dirs[i].0.clone();
                    self.remove_dir(&key);
                }
            }
            for d in self.root_made.iter().rev() {
                let _ = std::fs::remove_dir(d);
            }
        }
    }

    /// Keep the file at `name` under a hard link, so it can be put back exactly.
    fn keep(dir: &OwnedFd, name: &str) -> io::Result<String> {
        loop {
            let b = temp_name(name, "old");
            match rfs::linkat(dir, name, dir, b.as_str(), AtFlags::empty()) {
                Ok(()) => return Ok(b),
                Err(rustix::io::Errno::EXIST) => continue,
                Err(err) => return Err(e(err)),
            }
        }
    }

    fn stage(dir: &OwnedFd, name: &str, bytes: &[u8], prior: &Prior) -> io::Result<String> {
        let (fd, temp) = loop {
            let t = temp_name(name, "new");
            match rfs::openat(
                dir,
                t.as_str(),
                OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                // The kernel takes the umask off: `0666 & !umask`, as any tool's new file.
                Mode::from_raw_mode(0o666),
            ) {
                Ok(fd) => break (fd, t),
                Err(rustix::io::Errno::EXIST) => continue,
                Err(err) => return Err(e(err)),
            }
        };
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
        if let Err(err) = result {
            let _ = rfs::unlinkat(dir, temp.as_str(), AtFlags::empty());
            return Err(err);
        }
        Ok(temp)
    }

    pub(super) fn commit(t: Tree) -> Result<(), FileError> {
        let at = |rel: &str| t.root.join(rel);
        let whole = |source| FileError {
            path: t.root.clone(),
            source,
        };
        let (root, root_made) = open_root(&t.root, t.create_root).map_err(whole)?;
        // One writer at a time in this directory; released when `root` closes.
        rfs::flock(&root, FlockOperation::LockExclusive)
            .map_err(e)
            .map_err(whole)?;
        let mut txn = Txn {
            root_made,
            dirs: vec![(String::new(), root, false)],
            staged: Vec::new(),
            finished: false,
        };
        // Check every target before anything is written.
        for (rel, _) in &t.puts {
            let fail = |source| FileError {
                path: at(rel),
                source,
            };
            let (parts, name) = split_rel(rel).map_err(fail)?;
            let dir = txn.dir(&parts, true).map_err(fail)?.unwrap_or(0);
            let prior = prior(&txn.dirs[dir].1, name).map_err(fail)?;
            txn.staged.push(Staged {
                dir,
                name: name.to_owned(),
                rel: rel.clone(),
                temp: None,
                prior,
                done: false,
            });
        }
        let puts = t.puts.len();
        for rel in &t.removes {
            let fail = |source| FileError {
                path: at(rel),
                source,
            };
            let (parts, name) = split_rel(rel).map_err(fail)?;
            let Some(dir) = txn.dir(&parts, false).map_err(fail)? else {
                continue;
            };
            match prior(&txn.dirs[dir].1, name) {
                Ok(p @ Prior::File { .. }) => txn.staged.push(Staged {
                    dir,
                    name: name.to_owned(),
                    rel: rel.clone(),
                    temp: None,
                    prior: p,
                    done: false,
                }),
                Ok(Prior::None) => {}
                // Not a file gpuplan wrote any more (someone put a link or a device there):
                // left alone.
                Err(_) => {}
            }
        }
        // Stage: new content beside each target, old files kept under a hard link.
        for i in 0..txn.staged.len() {
            let target = at(&txn.staged[i].rel);
            let fail = |source| FileError {
                path: target.clone(),
                source,
            };
            let dir = txn.staged[i].dir;
            if let Prior::File { .. } = txn.staged[i].prior {
                let b = keep(&txn.dirs[dir].1, &txn.staged[i].name).map_err(fail)?;
                if let Prior::File { backup, .. } = &mut txn.staged[i].prior {
                    *backup = Some(b);
                }
            }
            if i < puts {
                let temp = stage(
                    &txn.dirs[dir].1,
                    &txn.staged[i].name,
                    &t.puts[i].1,
                    &txn.staged[i].prior,
                )
                .map_err(fail)?;
                txn.staged[i].temp = Some(temp);
            }
        }
        // Swap: each rename is atomic; a failure drops `txn`, which puts everything back.
        for i in 0..txn.staged.len() {
            let dir = &txn.dirs[txn.staged[i].dir].1;
            let s = &txn.staged[i];
            let r = match &s.temp {
                _ if faults::fail_here(i) => Err(rustix::io::Errno::IO),
                Some(temp) => rfs::renameat(dir, temp.as_str(), dir, s.name.as_str()),
                None => rfs::unlinkat(dir, s.name.as_str(), AtFlags::empty()),
            };
            if let Err(err) = r {
                return Err(FileError {
                    path: at(&s.rel),
                    source: e(err),
                });
            }
            let s = &mut txn.staged[i];
            s.temp = None;
            s.done = true;
        }
        // In place: the kept old files go, and the directories are made durable.
        for s in &txn.staged {
            if let Prior::File {
                backup: Some(b), ..
            } = &s.prior
            {
                let _ = rfs::unlinkat(&txn.dirs[s.dir].1, b.as_str(), AtFlags::empty());
            }
        }
        // A directory left empty by a removal goes too, if the set made nothing in it.
        let emptied: Vec<String> = txn.staged[puts..]
            .iter()
            .filter_map(|s| s.rel.rsplit_once('/').map(|(d, _)| d.to_owned()))
            .collect();
        for (_, fd, _) in &txn.dirs {
            let _ = rfs::fsync(fd);
        }
        txn.finished = true;
        for d in emptied {
            if !t.puts.iter().any(|(p, _)| p.starts_with(&format!("{d}/"))) {
                txn.remove_dir(&d);
            }
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
        let mut txn = Txn {
            root_made: Vec::new(),
            dirs: vec![(String::new(), root_fd, false)],
            staged: Vec::new(),
            finished: true,
        };
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
}

#[cfg(not(unix))]
mod imp {
    //! Elsewhere: the same rules with the standard library's calls, each component checked.

    use super::*;

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
            Ok(m) if m.file_type().is_symlink() => {
                Err(refuse(io::ErrorKind::InvalidInput, SYMLINK))
            }
            Ok(m) if !m.is_file() => Err(refuse(io::ErrorKind::InvalidInput, NOT_REGULAR)),
            _ => Ok(at),
        }
    }

    pub(super) fn commit(t: Tree) -> Result<(), FileError> {
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
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    use super::faults::FAIL_AT;

    fn mode(p: &Path) -> u32 {
        std::fs::metadata(p).unwrap().permissions().mode() & 0o7777
    }

    #[test]
    fn a_new_file_takes_the_umask_and_a_replaced_one_keeps_its_mode() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("a.txt");
        write_file(&p, b"one").unwrap();
        // The test process's umask: whatever it is, the new file is 0666 less it.
        let m = rustix::process::umask(rustix::fs::Mode::from_raw_mode(0o022));
        rustix::process::umask(m);
        assert_eq!(mode(&p), 0o666 & !m.bits());
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o640)).unwrap();
        write_file(&p, b"two").unwrap();
        assert_eq!(mode(&p), 0o640);
        assert_eq!(std::fs::read(&p).unwrap(), b"two");
        // Nothing but the file is left in the directory.
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 1);
    }

    #[test]
    fn devices_fifos_and_links_are_refused_and_left_as_they_were() {
        let d = tempfile::tempdir().unwrap();
        let err = write_file(Path::new("/dev/null"), b"x").unwrap_err();
        assert!(err.to_string().contains("not a regular file"), "{err}");
        assert!(std::fs::metadata("/dev/null")
            .unwrap()
            .file_type()
            .is_char_device_like());
        let fifo = d.path().join("fifo");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        assert!(write_file(&fifo, b"x").is_err());
        // Reading a FIFO never blocks: refused at once.
        assert!(read(&fifo, 10).is_err());
        let target = d.path().join("target");
        std::fs::write(&target, b"keep").unwrap();
        let link = d.path().join("link");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let err = write_file(&link, b"x").unwrap_err();
        assert!(err.to_string().contains("symbolic link"), "{err}");
        assert_eq!(std::fs::read(&target).unwrap(), b"keep");
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
    }

    trait CharDev {
        fn is_char_device_like(&self) -> bool;
    }
    impl CharDev for std::fs::FileType {
        fn is_char_device_like(&self) -> bool {
            use std::os::unix::fs::FileTypeExt;
            self.is_char_device()
        }
    }

    #[test]
    fn a_tree_never_enters_a_linked_directory_and_fails_whole() {
        let d = tempfile::tempdir().unwrap();
        let out = d.path().join("out");
        let elsewhere = d.path().join("elsewhere");
        std::fs::create_dir_all(&out).unwrap();
        std::fs::create_dir_all(&elsewhere).unwrap();
        std::fs::write(elsewhere.join("main.tf"), b"theirs").unwrap();
        std::os::unix::fs::symlink(&elsewhere, out.join("terraform")).unwrap();
        std::fs::write(out.join("README.md"), b"old readme").unwrap();
        let mut t = Tree::new(&out, true);
        t.put("README.md", b"new readme".to_vec());
        t.put("terraform/main.tf", b"ours".to_vec());
        let err = t.commit().unwrap_err();
        assert!(err.path.ends_with("terraform/main.tf"), "{err}");
        assert_eq!(std::fs::read(elsewhere.join("main.tf")).unwrap(), b"theirs");
        assert_eq!(std::fs::read(out.join("README.md")).unwrap(), b"old readme");
        let names: Vec<_> = std::fs::read_dir(&out)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 2, "{names:?}");
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn a_failed_rename_puts_back_the_very_files_that_were_there() {
        let d = tempfile::tempdir().unwrap();
        let out = d.path().join("out");
        std::fs::create_dir_all(out.join("helm")).unwrap();
        std::fs::write(out.join("README.md"), b"old").unwrap();
        std::fs::set_permissions(
            out.join("README.md"),
            std::fs::Permissions::from_mode(0o604),
        )
        .unwrap();
        std::fs::write(out.join("helm/old.yaml"), b"removed, then back").unwrap();
        let inode = |p: &Path| std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(p).unwrap());
        let before = inode(&out.join("README.md"));
        // Every step but the last swaps; the last fails, after the README was swapped in, a
        // new file and directory made and an old file removed.
        let mut t = Tree::new(&out, true);
        t.put("README.md", b"new".to_vec());
        t.put("kueue/kueue.yaml", b"new".to_vec());
        t.put("serving/values.yaml", b"new".to_vec());
        t.remove("helm/old.yaml");
        FAIL_AT.with(|f| f.set(4));
        let err = t.commit().unwrap_err();
        FAIL_AT.with(|f| f.set(0));
        assert!(err.path.ends_with("helm/old.yaml"), "{err}");
        assert!(
            !err.to_string().contains(".gpuplan-"),
            "no temporary name: {err}"
        );
        assert_eq!(std::fs::read(out.join("README.md")).unwrap(), b"old");
        assert_eq!(mode(&out.join("README.md")), 0o604);
        assert_eq!(
            inode(&out.join("README.md")),
            before,
            "the very file, not a copy"
        );
        assert_eq!(
            std::fs::read(out.join("helm/old.yaml")).unwrap(),
            b"removed, then back"
        );
        assert_eq!(
            names(&out),
            ["README.md", "helm"],
            "the directories the set made are gone"
        );
        assert_eq!(names(&out.join("helm")), ["old.yaml"]);
    }

    #[test]
    fn removals_take_only_regular_files_and_emptied_directories() {
        let d = tempfile::tempdir().unwrap();
        let out = d.path().join("out");
        std::fs::create_dir_all(out.join("karpenter")).unwrap();
        std::fs::write(out.join("karpenter/karpenter.yaml"), b"old").unwrap();
        let mut t = Tree::new(&out, true);
        t.put("README.md", b"x".to_vec());
        t.remove("karpenter/karpenter.yaml");
        t.remove("never/was.yaml");
        t.commit().unwrap();
        assert!(!out.join("karpenter").exists());
        assert_eq!(std::fs::read(out.join("README.md")).unwrap(), b"x");
    }

    #[test]
    fn pipes_are_read_where_a_person_hands_one_over() {
        let (r, mut w) = std::io::pipe().unwrap();
        let t = std::thread::spawn(move || w.write_all(b"version = 1\n"));
        use std::os::fd::AsRawFd;
        let path = PathBuf::from(format!("/proc/self/fd/{}", r.as_raw_fd()));
        let got = read_as(&path, 100, Input::RegularOrPipe).unwrap();
        t.join().unwrap().unwrap();
        assert_eq!(got, b"version = 1\n");
        assert!(read_as(Path::new("/dev/zero"), 100, Input::RegularOrPipe).is_err());
    }

    #[test]
    fn only_plain_relative_paths() {
        for bad in ["", "/x", "../x", "a//b", "a/", "a/./b", "a\\b", "a\0b", "."] {
            assert!(!plain_relative(bad), "{bad:?}");
        }
        assert!(plain_relative("terraform/main.tf"));
    }
}
