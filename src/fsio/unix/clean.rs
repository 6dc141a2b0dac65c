//! What an interrupted run may leave in a directory, and sweeping it.

use crate::fsio::{ours, stage_dir};
use rustix::fs::{self as rfs, AtFlags, FileType};
use std::os::fd::OwnedFd;
use std::path::Path;

/// The names in `dir` that an interrupted gpuplan run may have left: its temporary files
/// and staging directories (what they are is checked before anything is deleted).
pub(in crate::fsio) fn leftovers(dir: &OwnedFd) -> Vec<String> {
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
pub(in crate::fsio) fn sweep(dir: &OwnedFd, path: Option<&Path>) {
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
