//! The POSIX implementation: directory file descriptors and the `*at` calls.

mod clean;
mod fd;
pub(in crate::fsio) mod journal;
mod lock;
mod txn;

pub(in crate::fsio) use fd::{open, rename_new, same_file, sync_dir};
pub(crate) use lock::DirLock;
pub(in crate::fsio) use lock::{lock, unused};
pub(in crate::fsio) use txn::{commit, read_tree};
