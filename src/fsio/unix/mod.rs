//! The POSIX implementation: directory file descriptors and the `*at` calls.

mod clean;
mod fd;
mod lock;
mod txn;

pub(in crate::fsio) use fd::{e, open, open_sub, same_file};
pub(in crate::fsio) use lock::lock;
pub(crate) use lock::DirLock;
pub(in crate::fsio) use txn::{commit, read_tree};
