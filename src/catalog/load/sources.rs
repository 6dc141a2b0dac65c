//! `sources.toml`: the list of data files with their kind, date, source and licence, and the
//! refresh cache's own list, checked against the cache's own text before any file it names
//! is used.

use std::path::Path;
use std::sync::Arc;

use serde::Deserialize;

use super::{invalid, toml_file, CatalogError, MAX_DATA_BYTES};
use crate::catalog::DataKind;
use crate::core::Date;
use crate::core::Provider;
use crate::source::SourceFile;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct SourcesFile {
    pub(super) file: Vec<SourceEntry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)] // licence and note are documentation for people reading the file
pub(super) struct SourceEntry {
    pub(super) path: String,
    pub(super) kind: String,
    pub(super) provider: Option<Provider>,
    pub(super) as_of: String,
    /// The source records no date for its figures (`as_of` is then the day they were taken).
    #[serde(default)]
    pub(super) undated: bool,
    pub(super) source: String,
    licence: String,
    note: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub(super) struct Meta {
    pub(super) as_of: String,
    pub(super) source: String,
    pub(super) provider: Option<Provider>,
}

pub(super) fn date(file: &Arc<SourceFile>, s: &str) -> Result<Date, CatalogError> {
    Date::parse(s).ok_or_else(|| {
        let at = file.text.find(s).unwrap_or(0);
        invalid(
            file,
            at..at + s.len(),
            format!("`{s}` is not a date (YYYY-MM-DD)"),
        )
    })
}

/// One entry of the cache's list, with where each value stands in the cache's own file.
#[derive(Deserialize)]
struct CacheEntry {
    path: toml::Spanned<String>,
    kind: toml::Spanned<String>,
    as_of: toml::Spanned<String>,
    #[serde(flatten)]
    _rest: toml::Table,
}

#[derive(Deserialize)]
struct CacheList {
    #[serde(default)]
    file: Vec<CacheEntry>,
}

/// The refresh cache's own `sources.toml`, checked before any file it lists is used: a list
/// that does not parse, names a path that is not a plain file inside the cache, a kind gpuplan
/// does not know or a date that is not one is an error located in that file, at that value
/// (never in the merged list, which is not on disk), every such problem at once.
pub(super) fn cache_list(dir: &Path) -> Result<String, CatalogError> {
    let path = dir.join("sources.toml");
    let text = match crate::fsio::read_text(&path, MAX_DATA_BYTES) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(String::new()),
        Err(source) => {
            return Err(CatalogError::Io {
                path: crate::core::shown(&path),
                source,
            })
        }
    };
    let file = SourceFile::new(path.display().to_string(), text.clone());
    let list: CacheList = toml_file(&file)?;
    let _: SourcesFile = toml_file(&file)?;
    let mut problems = Vec::new();
    let mut bad = |span: std::ops::Range<usize>, msg: String| {
        problems.push(crate::catalog::catalog_diag(&file, span, msg).help(
            "the cache's list was edited or damaged; run `gpuplan catalog refresh` to replace it",
        ));
    };
    for e in &list.file {
        let p = e.path.get_ref();
        if !crate::fsio::plain_relative(p) || !crate::source::safe_path(dir, p) {
            bad(
                e.path.span(),
                format!(
                    "`{}` is not a plain path to a file inside the cache",
                    p.escape_debug()
                ),
            );
        }
        if DataKind::parse(e.kind.get_ref()).is_none() {
            bad(
                e.kind.span(),
                format!(
                    "unknown data kind `{}`; expected one of {}",
                    e.kind.get_ref().escape_debug(),
                    DataKind::ALL
                        .iter()
                        .map(|k| k.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            );
        }
        if Date::parse(e.as_of.get_ref()).is_none() {
            bad(
                e.as_of.span(),
                format!(
                    "`as_of = \"{}\"` is not a date (YYYY-MM-DD)",
                    e.as_of.get_ref().escape_debug()
                ),
            );
        }
    }
    if problems.is_empty() {
        Ok(text)
    } else {
        Err(CatalogError::Invalid(problems))
    }
}
