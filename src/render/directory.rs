//! The output directory render owns: its manifest of the files it wrote, what it may remove,
//! what is someone else's, and the drift `--check` reports.

use std::collections::BTreeMap;
use std::path::Path;

use super::RenderError;

/// The list `render` keeps in its output directory of the files it wrote there: the next
/// render removes those it no longer writes (its own files only), and `--check` reports them.
pub(crate) const MANIFEST: &str = ".gpuplan-render.toml";

/// Rendered files are small; anything past this at a target is not one of them.
pub(super) const MAX_RENDERED_BYTES: u64 = 256 << 20;

fn manifest_text(files: &BTreeMap<String, String>) -> String {
    let mut t = String::from(
        "# Files `gpuplan render` wrote in this directory. The next render removes those it no\n# longer writes; `gpuplan render --check` reports them. Do not edit.\nversion = 1\nfiles = [\n",
    );
    for rel in files.keys() {
        t.push_str(&format!("  {},\n", toml::Value::String(rel.clone())));
    }
    t.push_str("]\n");
    t
}

/// A path a manifest may name: a plain relative path of the kind render writes (no hidden
/// component, a rendered file's extension). A tampered manifest never steers a removal.
fn rendered_path(rel: &str) -> bool {
    crate::fsio::plain_relative(rel)
        && rel.split('/').all(|c| !c.starts_with('.'))
        && [".tf", ".yaml", ".md"].iter().any(|x| rel.ends_with(x))
}

/// The files the previous render in `dir` wrote, as its manifest says (none without one),
/// that a removal may touch.
fn previous(dir: &Path) -> Result<Vec<String>, RenderError> {
    Ok(removable(listed(dir)?.as_deref()))
}

/// Of the paths a manifest names, those a removal may touch ([`rendered_path`]).
fn removable(listed: Option<&[String]>) -> Vec<String> {
    listed
        .unwrap_or_default()
        .iter()
        .filter(|f| rendered_path(f))
        .cloned()
        .collect()
}

/// Every path the manifest in `dir` names, or `None` where there is no manifest.
fn listed(dir: &Path) -> Result<Option<Vec<String>>, RenderError> {
    let fail = |e: crate::fsio::FileError| RenderError::Write {
        path: e.path,
        source: e.source,
    };
    let text = match crate::fsio::read_tree(dir, &[MANIFEST.to_owned()], 1 << 20).map_err(fail)? {
        v if v.first().is_some_and(|f| f.is_some()) => {
            v.into_iter().next().flatten().unwrap_or_default()
        }
        _ => return Ok(None),
    };
    #[derive(serde::Deserialize)]
    struct Manifest {
        files: Vec<String>,
    }
    let m: Manifest = std::str::from_utf8(&text)
        .ok()
        .and_then(|t| toml::from_str(t).ok())
        .ok_or_else(|| RenderError::Write {
            path: dir.join(MANIFEST),
            source: std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "not a manifest gpuplan wrote; remove it to render into this directory",
            ),
        })?;
    Ok(Some(m.files))
}

/// What in `dir` is someone else's: without a manifest (`listed` is `None`), anything in it
/// (a directory gpuplan did not render into is not its to write; empty directories aside);
/// with one, each target that is on disk but not named by it. At most five names, sorted.
fn foreign(
    dir: &Path,
    files: &BTreeMap<String, String>,
    listed: Option<&[String]>,
) -> Result<Vec<String>, RenderError> {
    let mut theirs: Vec<String> = match listed {
        Some(named) => {
            let rels: Vec<String> = files
                .keys()
                .filter(|f| !named.contains(f))
                .cloned()
                .collect();
            let there = crate::fsio::read_tree(dir, &rels, MAX_RENDERED_BYTES).map_err(|e| {
                RenderError::Write {
                    path: e.path,
                    source: e.source,
                }
            })?;
            rels.into_iter()
                .zip(there)
                .filter(|(_, t)| t.is_some())
                .map(|(f, _)| f)
                .collect()
        }
        None => occupied(dir).map_err(|source| RenderError::Write {
            path: dir.to_owned(),
            source,
        })?,
    };
    theirs.sort();
    theirs.truncate(5);
    Ok(theirs)
}

/// The entries of `dir` that are not empty directories (a directory a killed first render
/// made and left empty holds nothing of anyone's).
fn occupied(dir: &Path) -> std::io::Result<Vec<String>> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir)? {
        let e = e?;
        let empty_dir = e.file_type()?.is_dir()
            && std::fs::read_dir(e.path()).is_ok_and(|mut d| d.next().is_none());
        if !empty_dir {
            out.push(e.file_name().to_string_lossy().into_owned());
        }
    }
    Ok(out)
}

/// How the files under a directory stand against what render would write now.
#[derive(Debug, Default)]
pub(crate) struct Drift {
    /// Files that differ from what would be written, missing ones included.
    pub changed: Vec<String>,
    /// Files a previous render wrote that this one would remove.
    pub stale: Vec<String>,
}

impl Drift {
    pub(crate) fn is_empty(&self) -> bool {
        self.changed.is_empty() && self.stale.is_empty()
    }
}

/// What differs under `dir`; read without following links below it and from regular files
/// only (a FIFO at a target is an error, never a wait).
pub(crate) fn drift(dir: &Path, files: &BTreeMap<String, String>) -> Result<Drift, RenderError> {
    let fail = |e: crate::fsio::FileError| RenderError::Read {
        path: e.path,
        source: e.source,
    };
    // A render writing here now is waited for: its set is compared whole.
    let _lock = crate::fsio::lock(dir, crate::fsio::Hold::Read, false).map_err(fail)?;
    let old = previous(dir)?;
    let mut all: Vec<(String, String)> =
        files.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    all.push((MANIFEST.to_owned(), manifest_text(files)));
    let rels: Vec<String> = all.iter().map(|(k, _)| k.clone()).collect();
    let on_disk = crate::fsio::read_tree(dir, &rels, MAX_RENDERED_BYTES).map_err(fail)?;
    let changed = all
        .iter()
        .zip(on_disk)
        .filter(|((_, want), have)| have.as_deref() != Some(want.as_bytes()))
        .map(|((rel, _), _)| rel.clone())
        .collect();
    let gone: Vec<String> = old.into_iter().filter(|f| !files.contains_key(f)).collect();
    let there = crate::fsio::read_tree(dir, &gone, MAX_RENDERED_BYTES).map_err(fail)?;
    let stale = gone
        .into_iter()
        .zip(there)
        .filter(|(_, t)| t.is_some())
        .map(|(f, _)| f)
        .collect();
    Ok(Drift { changed, stale })
}

/// Write every file, all or nothing ([`crate::fsio::Tree`]): staged beside their targets,
/// renamed into place only when all are written, the previous files put back on any failure,
/// the manifest last; files the previous render wrote and this one does not are removed.
/// Returns the files removed.
pub(crate) fn write(
    dir: &Path,
    files: &BTreeMap<String, String>,
    overwrite: bool,
) -> Result<Vec<String>, RenderError> {
    let fail = |e: crate::fsio::FileError| RenderError::Write {
        path: e.path,
        source: e.source,
    };
    // A first render fills a staging directory that becomes `dir` whole: killed before it
    // is done, it leaves no directory behind.
    let first = crate::fsio::first_set(dir, |staged, lock| set(staged, files).commit_in(lock))
        .map_err(fail)?;
    if first.is_some() {
        return Ok(Vec::new());
    }
    // Locked from reading the manifest to writing the new one, so a second render waits and
    // removes what this one wrote: the manifest always names every file here.
    let lock = crate::fsio::lock(dir, crate::fsio::Hold::Write, true)
        .map_err(fail)?
        .ok_or_else(|| RenderError::Write {
            path: dir.to_owned(),
            source: std::io::ErrorKind::NotFound.into(),
        })?;
    // The manifest, read once: what the last render owns here, and what it may remove.
    let named = listed(dir)?;
    let old = removable(named.as_deref());
    if !overwrite {
        let theirs = foreign(dir, files, named.as_deref())?;
        if !theirs.is_empty() {
            return Err(RenderError::Write {
                path: dir.to_owned(),
                source: std::io::Error::new(
                    std::io::ErrorKind::AlreadyExists,
                    format!(
                        "it holds files gpuplan did not render ({}); nothing was changed: render into a new or empty directory, or pass `--overwrite` to replace them",
                        theirs
                            .iter()
                            .map(|f| format!("`{}`", crate::core::printable(f)))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                ),
            });
        }
    }
    let stale: Vec<String> = old.into_iter().filter(|f| !files.contains_key(f)).collect();
    let mut t = set(dir, files);
    for f in &stale {
        t.remove(f);
    }
    t.commit_in(&lock).map_err(fail)?;
    Ok(stale)
}

/// The rendered files and their manifest (last), as one set under `dir`.
fn set(dir: &Path, files: &BTreeMap<String, String>) -> crate::fsio::Tree {
    let mut t = crate::fsio::Tree::new(dir, true);
    for (rel, content) in files {
        t.put(rel, content.clone().into_bytes());
    }
    t.put(MANIFEST, manifest_text(files).into_bytes());
    t
}
