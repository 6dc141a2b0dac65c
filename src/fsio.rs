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

use std::io::{self, Read as _};
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

/// Whether nothing is at `path`, not even a dangling link: an input a pull request's base
/// does not have yet (a baseline, a plan), which is then an empty one. Any other failure to
/// look is left to the read, which says what it was.
pub(crate) fn absent(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_err_and(|e| e.kind() == io::ErrorKind::NotFound)
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
    if !dir.is_dir() {
        // Said for what it is: the OS's "entity not found" names neither the file nor why.
        return Err(fail(refuse(
            io::ErrorKind::NotFound,
            "its directory does not exist (gpuplan writes a file only into a directory that exists)",
        )));
    }
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

    /// Carry the set out, holding the directory's write lock for the set ([`lock`]). On any
    /// error the directory is as it was.
    pub(crate) fn commit(self) -> Result<(), FileError> {
        imp::commit(self, None)
    }

    /// [`Tree::commit`] under a write lock the caller took on the same directory, for a run
    /// that reads what is there (a manifest, the previous cache) before it writes.
    pub(crate) fn commit_in(self, lock: &DirLock) -> Result<(), FileError> {
        imp::commit(self, Some(lock))
    }
}

// ---------------------------------------------------------------------------------------
// Locking: Terraform's state lock is the model. A second writer waits, with a message, and
// gives up with an error after a bounded time; it never interleaves.

/// How a run holds a directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Hold {
    /// Reading a set of files another run may be writing; shared with other readers.
    Read,
    /// Writing: one run at a time, for as long as the lock is kept.
    Write,
}

pub(crate) use imp::DirLock;

/// Lock `root` as `hold` says, for as long as the returned lock lives (`flock` on the
/// directory itself, so no lock file is left behind). `create` makes a missing directory
/// for a write (and the lock takes it away again unless a set was written in it); a
/// missing directory is `None` otherwise. Before it returns, a set an earlier run left half
/// written (it was killed) is completed or undone from its journal, and that run's
/// temporary files are swept.
pub(crate) fn lock(root: &Path, hold: Hold, create: bool) -> Result<Option<DirLock>, FileError> {
    imp::lock(root, hold, create)
}

/// How long a run waits for another that holds a directory: `GPUPLAN_LOCK_TIMEOUT` seconds,
/// 60 unless set (0 gives up at once, as `terraform -lock-timeout=0s`).
fn wait_limit() -> std::time::Duration {
    let secs = std::env::var("GPUPLAN_LOCK_TIMEOUT")
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .unwrap_or(60)
        .min(24 * 3600);
    std::time::Duration::from_secs(secs)
}

type Notice = Box<dyn Fn(&str) + Send + Sync>;
static NOTICE: std::sync::OnceLock<Notice> = std::sync::OnceLock::new();

/// Where the message that a run waits for another goes (standard error, set once by the
/// command line).
pub(crate) fn on_wait(f: impl Fn(&str) + Send + Sync + 'static) {
    let _ = NOTICE.set(Box::new(f));
}

#[cfg_attr(not(unix), allow(dead_code))]
fn notice(text: &str) {
    if let Some(f) = NOTICE.get() {
        f(text);
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

/// What a name gpuplan gave a temporary file says it holds (`"new"` content or an `"old"`
/// file kept for rollback), or `None` when the name is not one [`temp_name`] makes: what a
/// sweep deletes and a journal may name, nothing else.
fn ours(name: &str) -> Option<&str> {
    let rest = name.strip_prefix('.')?;
    let (_, tail) = rest.rsplit_once(".gpuplan-")?;
    let (what, hex) = tail.split_once('-')?;
    let hex_ok = hex.len() == 16 && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    (hex_ok && matches!(what, "new" | "old")).then_some(what)
}

/// The prefix of the directory a cache refresh stages its files in, inside the cache.
pub(crate) const STAGE_PREFIX: &str = ".gpuplan-stage-";

/// Whether `name` is a staging directory a refresh made ([`STAGE_PREFIX`] and the random
/// letters `tempfile` adds).
fn stage_dir(name: &str) -> bool {
    name.strip_prefix(STAGE_PREFIX)
        .is_some_and(|r| r.len() >= 6 && r.bytes().all(|b| b.is_ascii_alphanumeric()))
}

/// Faults the tests inject into a commit, to see it roll back.
mod faults {
    #[cfg(test)]
    thread_local! {
        /// The swap step (1-based) at which this thread's next commit fails, as a full disk
        /// or a lost mount would make it; 0 for none.
        pub(super) static FAIL_AT: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    }

    #[cfg(test)]
    thread_local! {
        /// The step (1-based, counted over every write a commit makes) at which this thread's
        /// process is "killed": from there on nothing more happens, not even the rollback a
        /// failure runs, as after SIGKILL; 0 for never.
        pub(super) static KILL_AT: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
        pub(super) static STEP: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    }

    /// One more write has been made; true when the process is dead from here on.
    #[cfg_attr(not(unix), allow(dead_code))]
    pub(super) fn step() -> bool {
        #[cfg(test)]
        {
            STEP.with(|s| s.set(s.get() + 1));
            dead()
        }
        #[cfg(not(test))]
        false
    }

    /// Whether the process is dead (a test's SIGKILL has happened).
    #[cfg_attr(not(unix), allow(dead_code))]
    pub(super) fn dead() -> bool {
        #[cfg(test)]
        return KILL_AT.with(|k| k.get() != 0 && STEP.with(|s| s.get()) >= k.get());
        #[cfg(not(test))]
        false
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
#[path = "fsio/unix/mod.rs"]
mod imp;

mod first;
pub(crate) use first::first_set;

#[cfg(not(unix))]
#[path = "fsio/other.rs"]
mod imp;

#[cfg(all(test, unix))]
mod tests;
