//! `sources.toml`: the list of data files with their kind, date, source and licence, and the
//! refresh cache's own list, checked against the cache's own text before any file it names
//! is used.

use std::path::Path;
use std::sync::Arc;

use serde::Deserialize;

use super::{invalid, toml_file, CatalogError, MAX_DATA_BYTES};
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

/// The refresh cache's own `sources.toml`, checked before any file it lists is used: a list
/// that does not parse, or names a path outside the cache, is an error located in it (not
/// in the embedded file that would have been read instead).
pub(super) fn cache_list(dir: &Path) -> Result<String, CatalogError> {
    let path = dir.join("sources.toml");
    let text = match crate::fsio::read_text(&path, MAX_DATA_BYTES) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(String::new()),
        Err(source) => {
            return Err(CatalogError::Io {
                path: path.display().to_string(),
                source,
            })
        }
    };
    let file = SourceFile::new(path.display().to_string(), text.clone());
    let list: SourcesFile = toml_file(&file)?;
    for e in &list.file {
        if !crate::source::safe_path(dir, &e.path) {
            let at = text
                .find(&format!("\"{}\"", e.path))
                .map_or(0..0, |i| i..i + e.path.len() + 2);
            return Err(invalid(
                &file,
                at,
                format!("`{}` is not a path inside the cache: the list was edited or damaged; run `gpuplan catalog refresh` to replace it", e.path),
            ));
        }
    }
    Ok(text)
}
