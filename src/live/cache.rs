//! The refresh cache: only the files a refresh fetched, each dated in the cache's own
//! `sources.toml`; commands read each file from whichever of cache and embedded catalog is
//! newer (`Catalog::layered`). Written into a staging directory and swapped in whole, so a
//! failed refresh leaves the previous cache as it was.

use std::path::{Path, PathBuf};

use super::azure_prices::Row;

/// `GPUPLAN_CACHE`, else `$XDG_CACHE_HOME/gpuplan`, else `~/.cache/gpuplan`.
pub fn default_dir() -> Option<PathBuf> {
    if let Some(d) = std::env::var_os("GPUPLAN_CACHE").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(d));
    }
    if let Some(d) = std::env::var_os("XDG_CACHE_HOME").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(d).join("gpuplan"));
    }
    std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache").join("gpuplan"))
}

/// A cache that holds refreshed files.
pub fn present(dir: &Path) -> bool {
    dir.join("sources.toml").is_file()
}

/// A refreshed CSV file: `header`, then the previous file's rows for regions not refreshed
/// now (column `region_col`), then `rows`. Written with the csv crate, so any field may hold
/// commas or quotes.
pub fn merge_csv(
    previous: &str,
    header: &[&str],
    region_col: usize,
    regions: &[String],
    rows: &[Vec<String>],
) -> String {
    let mut w = csv::WriterBuilder::new()
        .terminator(csv::Terminator::Any(b'\n'))
        .from_writer(Vec::new());
    let _ = w.write_record(header);
    let mut rdr = csv::ReaderBuilder::new()
        .flexible(true)
        .from_reader(previous.as_bytes());
    for rec in rdr.records().flatten() {
        let region = rec.get(region_col).unwrap_or("");
        if rec.len() == header.len() && !regions.iter().any(|r| r == region) {
            let _ = w.write_record(&rec);
        }
    }
    for r in rows {
        let _ = w.write_record(r);
    }
    String::from_utf8(w.into_inner().unwrap_or_default()).unwrap_or_default()
}

pub const PRICE_HEADER: [&str; 7] = [
    "armSkuName",
    "armRegionName",
    "kind",
    "retailPrice",
    "unitOfMeasure",
    "captured",
    "source",
];

/// The `prices-retail.csv` text: fetched rows for the refreshed regions, and the previous
/// rows of every other region.
pub fn retail_csv(
    previous: &str,
    rows: &[Row],
    regions: &[String],
    fetched: &str,
    source: &str,
) -> String {
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                r.sku.clone(),
                r.region.clone(),
                r.kind.to_owned(),
                r.price.to_string(),
                r.unit.clone(),
                fetched.to_owned(),
                format!("{source} ({})", r.note),
            ]
        })
        .collect();
    merge_csv(previous, &PRICE_HEADER, 1, regions, &rows)
}

/// One refreshed file and how `sources.toml` describes it.
pub struct Entry {
    pub path: &'static str,
    pub kind: &'static str,
    pub provider: &'static str,
    pub source: String,
    pub licence: &'static str,
    pub text: String,
}

/// Write the cache: the previous cache's files, with `entries` replacing theirs, dated
/// `fetched`.
pub fn write(dir: &Path, entries: &[Entry], fetched: &str) -> std::io::Result<()> {
    let parent = dir
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent)?;
    let name = dir
        .file_name()
        .map_or("gpuplan".into(), |n| n.to_string_lossy().into_owned());
    let stage = parent.join(format!(".{name}.refresh-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&stage);
    let result = (|| {
        let mut sources: toml::Table = if present(dir) {
            toml::from_str(&std::fs::read_to_string(dir.join("sources.toml"))?).unwrap_or_default()
        } else {
            toml::Table::new()
        };
        let mut files: Vec<toml::Value> = match sources.remove("file") {
            Some(toml::Value::Array(a)) => a,
            _ => Vec::new(),
        };
        files.retain(|f| {
            let p = f.get("path").and_then(|v| v.as_str()).unwrap_or("");
            !entries.iter().any(|e| e.path == p)
        });
        // Files kept from the previous cache are copied across.
        for f in &files {
            let p = f.get("path").and_then(|v| v.as_str()).unwrap_or("");
            let target = stage.join(p);
            if let Some(d) = target.parent() {
                std::fs::create_dir_all(d)?;
            }
            std::fs::copy(dir.join(p), target)?;
        }
        for e in entries {
            let target = stage.join(e.path);
            if let Some(d) = target.parent() {
                std::fs::create_dir_all(d)?;
            }
            std::fs::write(&target, &e.text)?;
            let mut t = toml::Table::new();
            t.insert("path".into(), e.path.into());
            t.insert("kind".into(), e.kind.into());
            t.insert("provider".into(), e.provider.into());
            t.insert("as_of".into(), fetched.into());
            t.insert("source".into(), e.source.clone().into());
            t.insert("licence".into(), e.licence.into());
            files.push(toml::Value::Table(t));
        }
        files.sort_by(|a, b| {
            a.get("path")
                .and_then(|v| v.as_str())
                .cmp(&b.get("path").and_then(|v| v.as_str()))
        });
        sources.insert("file".into(), toml::Value::Array(files));
        std::fs::write(
            stage.join("sources.toml"),
            format!(
                "# Files refreshed by `gpuplan catalog refresh`; each is used while it is newer than the embedded one.\n{}",
                toml::to_string(&sources).unwrap_or_default()
            ),
        )
    })();
    if let Err(e) = result {
        let _ = std::fs::remove_dir_all(&stage);
        return Err(e);
    }
    let old = parent.join(format!(".{name}.old-{}", std::process::id()));
    if dir.exists() {
        std::fs::rename(dir, &old)?;
    }
    if let Err(e) = std::fs::rename(&stage, dir) {
        let _ = std::fs::rename(&old, dir);
        let _ = std::fs::remove_dir_all(&stage);
        return Err(e);
    }
    let _ = std::fs::remove_dir_all(&old);
    Ok(())
}
