//! Reading the catalog data files (TOML, CSV, JSON) into the typed catalog.

use std::path::PathBuf;
use std::sync::Arc;

use indexmap::IndexMap;
use serde::Deserialize;

mod assumptions;
mod aws;
mod azure;
mod gpus;
mod prices;
mod refreshed;
mod sources;

use super::{catalog_diag, Catalog, DataKind, DataSource, InterNode, ProviderCatalog, Sku};
use crate::core::Provider;
use crate::diag::Diag;
use crate::source::SourceFile;
use assumptions::load_assumptions;
use gpus::load_gpus;
use prices::{figure_date, load_skypilot_prices};
use refreshed::{load_availability, load_quota};
use sources::{cache_list, date, Meta, SourcesFile};

#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum CatalogError {
    #[error("cannot read catalog file `{path}`: {source}")]
    #[diagnostic(code(gpuplan::catalog::read))]
    Io {
        path: String,
        source: std::io::Error,
    },
    /// Located problems (file, line, column), printed like a plan's.
    #[error("the catalog has {} problem(s)", .0.len())]
    #[diagnostic(code(gpuplan::catalog::invalid))]
    Invalid(Vec<Diag>),
}

pub(super) enum Files {
    Embedded,
    Dir(PathBuf),
    /// A refresh cache over the embedded catalog: each file from whichever is newer.
    Layered(PathBuf),
}

/// `path -> as_of` of a `sources.toml` text.
fn dates(text: &str) -> std::collections::BTreeMap<String, String> {
    toml::from_str::<SourcesFile>(text)
        .map(|f| f.file.into_iter().map(|e| (e.path, e.as_of)).collect())
        .unwrap_or_default()
}

macro_rules! embedded {
    ($($path:literal),* $(,)?) => {
        /// Every embedded data file, by its path under `providers/`.
        pub fn embedded_files() -> Vec<(&'static str, &'static str)> {
            vec![$(($path, include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/providers/", $path)))),*]
        }

        fn embedded_file(path: &str) -> Option<&'static str> {
            match path {
                $($path => Some(include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/providers/", $path))),)*
                _ => None,
            }
        }
    };
}

embedded!(
    "sources.toml",
    "gpus.toml",
    "assumptions.toml",
    "azure/skus.toml",
    "azure/prices.csv",
    "azure/prices-retail.csv",
    "azure/ondemand-2026-06-18.csv",
    "azure/retail-eu-2026-08-20.csv",
    "aws/skus.toml",
    "aws/prices.csv",
    "aws/prices-2025-11-30.csv",
    "aws/ondemand-us-east-1-2026-07-20.csv",
    "aws/spot-advisor.json",
);

impl Files {
    /// A file only a refresh writes (per-account data has no embedded copy): `None` when
    /// this catalog has none.
    fn optional(&self, path: &str) -> Result<Option<Arc<SourceFile>>, CatalogError> {
        let present = match self {
            Files::Embedded => embedded_file(path).is_some(),
            Files::Dir(dir) => dir.join(path).is_file(),
            Files::Layered(dir) => embedded_file(path).is_some() || dir.join(path).is_file(),
        };
        if present {
            self.read(path).map(Some)
        } else {
            Ok(None)
        }
    }

    fn read(&self, path: &str) -> Result<Arc<SourceFile>, CatalogError> {
        match self {
            Files::Embedded => {
                let text = embedded_file(path).unwrap_or_default();
                Ok(SourceFile::new(
                    format!("<embedded>/providers/{path}"),
                    text,
                ))
            }
            Files::Layered(dir) => {
                let cache_sources = cache_list(dir)?;
                let embedded_sources = embedded_file("sources.toml").unwrap_or_default();
                let (cached, built_in) = (dates(&cache_sources), dates(embedded_sources));
                let newer = |p: &str| {
                    cached
                        .get(p)
                        .is_some_and(|c| built_in.get(p).is_none_or(|e| c > e))
                };
                if path == "sources.toml" {
                    // The embedded list, with the entries of newer cached files swapped in.
                    let mut merged: toml::Table =
                        toml::from_str(embedded_sources).unwrap_or_default();
                    let cache: toml::Table = toml::from_str(&cache_sources).unwrap_or_default();
                    if let (Some(toml::Value::Array(files)), Some(toml::Value::Array(cfiles))) =
                        (merged.get_mut("file"), cache.get("file"))
                    {
                        for f in files.iter_mut() {
                            let p = f
                                .get("path")
                                .and_then(|v| v.as_str())
                                .unwrap_or("")
                                .to_owned();
                            if newer(&p) {
                                if let Some(c) = cfiles.iter().find(|c| {
                                    c.get("path").and_then(|v| v.as_str()) == Some(p.as_str())
                                }) {
                                    *f = c.clone();
                                }
                            }
                        }
                        // Files only a refresh writes (quota, availability, ...) have no
                        // embedded entry: they join the list.
                        for c in cfiles {
                            let p = c.get("path").and_then(|v| v.as_str()).unwrap_or("");
                            if embedded_file(p).is_none() && dir.join(p).is_file() {
                                files.push(c.clone());
                            }
                        }
                    }
                    let text = toml::to_string(&merged).unwrap_or_default();
                    return Ok(SourceFile::new(
                        format!("{}/sources.toml (with the embedded catalog)", dir.display()),
                        text,
                    ));
                }
                if newer(path) {
                    let p = dir.join(path);
                    let text = crate::fsio::read_text(&p, MAX_DATA_BYTES).map_err(|source| {
                        CatalogError::Io {
                            path: p.display().to_string(),
                            source,
                        }
                    })?;
                    // Diagnostics name the file; prices name it as the cache's, wherever the
                    // cache sits.
                    return Ok(SourceFile::labelled(
                        p.display().to_string(),
                        format!("cache: {path}"),
                        text,
                    ));
                }
                Files::Embedded.read(path)
            }
            Files::Dir(dir) => {
                let p = dir.join(path);
                let text = crate::fsio::read_text(&p, MAX_DATA_BYTES).map_err(|source| {
                    CatalogError::Io {
                        path: p.display().to_string(),
                        source,
                    }
                })?;
                Ok(SourceFile::new(p.display().to_string(), text))
            }
        }
    }
}

/// A catalog data file (a price table, a SKU list) read from a directory or the cache: the
/// embedded ones are under 1 MiB, and a refresh writes a few MiB at most.
pub(super) const MAX_DATA_BYTES: u64 = 64 << 20;

pub(super) fn toml_file<T: for<'de> Deserialize<'de>>(
    file: &Arc<SourceFile>,
) -> Result<T, CatalogError> {
    toml::from_str(&file.text).map_err(|e| {
        CatalogError::Invalid(vec![catalog_diag(
            file,
            e.span().unwrap_or(0..0),
            e.message().to_owned(),
        )])
    })
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SkusFile {
    #[allow(dead_code)]
    meta: Meta,
    sku: Vec<SkuEntry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SkuEntry {
    name: String,
    gpu_model: String,
    gpu_count: u32,
    gpu_partition: Option<f64>,
    vcpus: u32,
    memory_gib: f64,
    quota_family: String,
    spot_quota_family: Option<String>,
    quota_family_verified: bool,
    nvlink: bool,
    inter_node: String,
    /// EFA interfaces EC2 gives the type (AWS only); absent where no source lists it.
    efa_interfaces: Option<u32>,
    #[serde(default)]
    retired: bool,
    /// `arm64` for Graviton-based instances; x86_64 when absent.
    cpu_architecture: Option<String>,
    /// The VM reaches its GPU through SR-IOV vGPU (Azure NVadsA10 v5, NCv6).
    #[serde(default)]
    vgpu: bool,
    unpriced: Option<String>,
    note: Option<String>,
}

pub(super) fn invalid(
    file: &Arc<SourceFile>,
    span: std::ops::Range<usize>,
    msg: String,
) -> CatalogError {
    CatalogError::Invalid(vec![catalog_diag(file, span, msg)])
}

/// An error pointing at the first `"name"` in the file: where that entry is defined.
pub(super) fn invalid_at_name(file: &Arc<SourceFile>, name: &str, msg: String) -> CatalogError {
    let quoted = format!("\"{name}\"");
    let at = file.text.find(&quoted).unwrap_or(0);
    invalid(file, at..at + quoted.len(), msg)
}

/// Every name an entry brings is a catalog name ([`super::name_ok`]), refused where it stands.
pub(super) fn names_ok<'a>(
    file: &Arc<SourceFile>,
    names: impl IntoIterator<Item = &'a String>,
) -> Result<(), CatalogError> {
    for n in names {
        if !super::name_ok(n) {
            return Err(invalid_at_name(
                file,
                n,
                format!(
                    "`{}` is not a catalog name (letters, digits, `.`, `_`, `+`, `-`, inner spaces)",
                    n.escape_debug()
                ),
            ));
        }
    }
    Ok(())
}

pub(super) fn load(files: &Files, providers: &[Provider]) -> Result<Catalog, CatalogError> {
    let sources_file = files.read("sources.toml")?;
    let sources: SourcesFile = toml_file(&sources_file)?;
    let mut data_sources = Vec::new();
    for s in &sources.file {
        let Some(kind) = DataKind::parse(&s.kind) else {
            return Err(invalid(
                &sources_file,
                0..0,
                format!("unknown data kind `{}` for `{}`", s.kind, s.path),
            ));
        };
        data_sources.push(DataSource {
            file: s.path.clone(),
            kind,
            provider: s.provider,
            as_of: date(&sources_file, &s.as_of)?,
            undated: s.undated,
            source: s.source.clone(),
        });
    }

    let gpus = load_gpus(&files.read("gpus.toml")?)?;
    let assumptions = load_assumptions(&files.read("assumptions.toml")?)?;

    let mut catalog = Catalog {
        gpus,
        partitions: IndexMap::new(),
        providers: IndexMap::new(),
        assumptions,
        sources: data_sources,
    };
    let mut wanted: Vec<Provider> = providers.to_vec();
    wanted.sort();
    wanted.dedup();
    for p in wanted {
        let pc = load_provider(files, p, &catalog)?;
        for s in pc.skus.values().filter(|s| s.gpu_partition < 1.0) {
            if let Some(g) = catalog.gpus.get(&s.gpu_model) {
                let part = crate::catalog::GpuModel {
                    memory_gib: g.memory_gib * s.gpu_partition,
                    nominal_memory_gib: g.nominal_memory_gib * s.gpu_partition,
                    mig: None,
                    ..g.clone()
                };
                catalog.partitions.insert(s.name.clone(), part);
            }
        }
        catalog.providers.insert(p, pc);
    }
    catalog.sources.retain(|s| {
        s.provider
            .is_none_or(|p| catalog.providers.contains_key(&p))
    });
    Ok(catalog)
}

fn load_provider(
    files: &Files,
    p: Provider,
    catalog: &Catalog,
) -> Result<ProviderCatalog, CatalogError> {
    let dir = p.as_str();
    let skus_file = files.read(&format!("{dir}/skus.toml"))?;
    let parsed: SkusFile = toml_file(&skus_file)?;
    let mut pc = ProviderCatalog::default();
    for s in parsed.sku {
        let sku = sku(&skus_file, p, catalog, s)?;
        pc.skus.insert(sku.name.clone(), sku);
    }
    // Every price file, oldest first; each figure keeps the newest dated value (`offer`), so
    // the order only decides ties.
    let dated = |path: &str| figure_date(&catalog.sources, path);
    let prices_file = files.read(&format!("{dir}/prices.csv"))?;
    load_skypilot_prices(&prices_file, &mut pc, dated(&format!("{dir}/prices.csv")))?;
    // Each cloud's own files, read by its own reader.
    match p {
        Provider::Azure => azure::load(files, &mut pc, catalog)?,
        Provider::Aws => aws::load(files, &mut pc, catalog)?,
    }
    if let Some(f) = files.optional(&format!("{dir}/quota.csv"))? {
        load_quota(&f, &mut pc)?;
    }
    if let Some(f) = files.optional(&format!("{dir}/availability.csv"))? {
        load_availability(&f, &mut pc)?;
    }
    // A (SKU, region) with neither a list price nor a Capacity Block price is not offered:
    // a spot row alone (the SkyPilot rows of p5e.48xlarge) has nothing to discount.
    pc.prices
        .retain(|_, p| p.on_demand.is_some() || p.capacity_block.is_some());
    // Files add regions in their own order; the catalog lists them sorted.
    pc.prices.sort_keys();
    pc.spot_bands.sort_keys();
    let mut regions: Vec<String> = pc.prices.keys().map(|(_, r)| r.clone()).collect();
    regions.sort();
    regions.dedup();
    pc.regions = regions;
    Ok(pc)
}

/// One SKU of `skus.toml`: its names are catalog names, its GPU is known, its interconnect
/// one of three.
fn sku(
    skus_file: &Arc<SourceFile>,
    p: Provider,
    catalog: &Catalog,
    s: SkuEntry,
) -> Result<Sku, CatalogError> {
    let names = [&s.name, &s.gpu_model, &s.quota_family]
        .into_iter()
        .chain(&s.spot_quota_family);
    names_ok(skus_file, names)?;
    if catalog.gpu(&s.gpu_model).is_none() {
        return Err(invalid_at_name(
            skus_file,
            &s.name,
            format!("SKU `{}` names unknown GPU model `{}`", s.name, s.gpu_model),
        ));
    }
    let inter_node = match s.inter_node.as_str() {
        "none" => InterNode::None,
        "infiniband" => InterNode::Infiniband,
        "efa" => InterNode::Efa,
        other => {
            return Err(invalid_at_name(
                skus_file,
                &s.name,
                format!(
                    "SKU `{}`: `inter_node = \"{other}\"`, expected none, infiniband or efa",
                    s.name
                ),
            ))
        }
    };
    Ok(Sku {
        provider: p,
        name: s.name,
        gpu_model: s.gpu_model,
        gpu_count: s.gpu_count,
        gpu_partition: s.gpu_partition.unwrap_or(1.0),
        vcpus: s.vcpus,
        memory_gib: s.memory_gib,
        quota_family: s.quota_family,
        spot_quota_family: s.spot_quota_family,
        quota_family_verified: s.quota_family_verified,
        nvlink: s.nvlink,
        inter_node,
        efa_interfaces: s.efa_interfaces,
        retired: s.retired,
        arm64: s.cpu_architecture.as_deref() == Some("arm64"),
        vgpu: s.vgpu,
        unpriced: s.unpriced,
        note: s.note,
    })
}
