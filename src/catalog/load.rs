//! Reading the catalog data files (TOML, CSV, JSON) into the typed catalog.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use indexmap::IndexMap;
use serde::Deserialize;

use super::{
    catalog_diag, Assumptions, Catalog, DataSource, GpuModel, InterNode, MigProfile, MigSpec,
    Price, ProviderCatalog, Sku, SpotBand,
};
use crate::core::Date;
use crate::core::Provider;
use crate::diag::Diag;
use crate::source::SourceFile;

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
                    return Ok(SourceFile::new(p.display().to_string(), text));
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
const MAX_DATA_BYTES: u64 = 64 << 20;

fn toml_file<T: for<'de> Deserialize<'de>>(file: &Arc<SourceFile>) -> Result<T, CatalogError> {
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
struct SourcesFile {
    file: Vec<SourceEntry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)] // licence and note are documentation for people reading the file
struct SourceEntry {
    path: String,
    kind: String,
    provider: Option<Provider>,
    as_of: String,
    /// The source records no date for its figures (`as_of` is then the day they were taken).
    #[serde(default)]
    undated: bool,
    source: String,
    licence: String,
    note: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct Meta {
    as_of: String,
    source: String,
    provider: Option<Provider>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GpusFile {
    #[allow(dead_code)]
    meta: Meta,
    gpu: Vec<GpuEntry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GpuEntry {
    name: String,
    vendor: String,
    memory_gib: f64,
    architecture: String,
    compute_capability: Option<String>,
    #[serde(default)]
    aliases: Vec<String>,
    mig: Option<MigEntry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MigEntry {
    compute_slices: u8,
    memory_slices: u8,
    pci_device_ids: Vec<String>,
    placement_source: String,
    #[serde(default)]
    aks_profiles: Vec<String>,
    profiles: Vec<ProfileEntry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ProfileEntry {
    name: String,
    compute: u8,
    memory_slices: u8,
    memory_gib: f64,
    starts: Vec<u8>,
    max_count: u8,
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
    #[serde(default)]
    retired: bool,
    /// `arm64` for Graviton-based instances; x86_64 when absent.
    cpu_architecture: Option<String>,
    unpriced: Option<String>,
    note: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AssumptionsFile {
    #[allow(dead_code)]
    meta: Meta,
    spot_band: Vec<BandEntry>,
    restart: RestartEntry,
    server_default: Vec<ServerDefault>,
    check: CheckEntry,
    recommend: RecommendEntry,
    render: RenderEntry,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RenderEntry {
    node_disk_os_gib: f64,
    node_disk_images_gib: f64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RecommendEntry {
    daemonset_cpu: f64,
    allocatable_memory_share: f64,
    time_slicing_memory_headroom: f64,
    time_slicing_default_share: f64,
    kube_reserved_cpu: Vec<KubeReservedEntry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct KubeReservedEntry {
    provider: Provider,
    vcpus: Vec<f64>,
    millicores: Vec<f64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BandEntry {
    index: u8,
    aws_label: String,
    azure_label: String,
    monthly_interruption: f64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RestartEntry {
    node_acquire_minutes: f64,
    image_pull_minutes: f64,
    weight_load_minutes: f64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ServerDefault {
    engine: String,
    gpu_memory_utilization: f64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CheckEntry {
    stale_after_days: i64,
    stale_after_days_by_figure: StaleEntry,
    low_utilization: f64,
    min_kv_cache_share: f64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StaleEntry {
    on_demand: i64,
    reserved: i64,
    spot_price: i64,
    spot_band: i64,
    capacity_block: i64,
}

#[derive(Deserialize)]
struct AdvisorFile {
    ranges: Vec<AdvisorRange>,
    spot_advisor: IndexMap<String, IndexMap<String, IndexMap<String, AdvisorEntry>>>,
}

#[derive(Deserialize)]
struct AdvisorRange {
    index: u8,
    label: String,
}

#[derive(Deserialize)]
struct AdvisorEntry {
    s: i32,
    r: u8,
}

fn invalid(file: &Arc<SourceFile>, span: std::ops::Range<usize>, msg: String) -> CatalogError {
    CatalogError::Invalid(vec![catalog_diag(file, span, msg)])
}

/// An error pointing at the first `"name"` in the file: where that entry is defined.
fn invalid_at_name(file: &Arc<SourceFile>, name: &str, msg: String) -> CatalogError {
    let quoted = format!("\"{name}\"");
    let at = file.text.find(&quoted).unwrap_or(0);
    invalid(file, at..at + quoted.len(), msg)
}

fn date(file: &Arc<SourceFile>, s: &str) -> Result<Date, CatalogError> {
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
fn cache_list(dir: &Path) -> Result<String, CatalogError> {
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

pub(super) fn load(files: &Files, providers: &[Provider]) -> Result<Catalog, CatalogError> {
    let sources_file = files.read("sources.toml")?;
    let sources: SourcesFile = toml_file(&sources_file)?;
    let mut data_sources = Vec::new();
    for s in &sources.file {
        let kind = match s.kind.as_str() {
            "gpus" => "gpus",
            "skus" => "skus",
            "prices" => "prices",
            "spot-bands" => "spot-bands",
            "assumptions" => "assumptions",
            "quota" => "quota",
            "availability" => "availability",
            "shapes" => "shapes",
            other => {
                return Err(invalid(
                    &sources_file,
                    0..0,
                    format!("unknown data kind `{other}` for `{}`", s.path),
                ))
            }
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
        providers: IndexMap::new(),
        assumptions,
        sources: data_sources,
    };
    let mut wanted: Vec<Provider> = providers.to_vec();
    wanted.sort();
    wanted.dedup();
    for p in wanted {
        let pc = load_provider(files, p, &catalog)?;
        catalog.providers.insert(p, pc);
    }
    catalog.sources.retain(|s| {
        s.provider
            .is_none_or(|p| catalog.providers.contains_key(&p))
    });
    Ok(catalog)
}

fn load_gpus(file: &Arc<SourceFile>) -> Result<IndexMap<String, GpuModel>, CatalogError> {
    let parsed: GpusFile = toml_file(file)?;
    let mut out = IndexMap::new();
    for g in parsed.gpu {
        let mig = g.mig.map(|m| MigSpec {
            compute_slices: m.compute_slices,
            memory_slices: m.memory_slices,
            pci_device_ids: m.pci_device_ids,
            placement_source: m.placement_source,
            aks_profiles: m.aks_profiles,
            profiles: m
                .profiles
                .into_iter()
                .map(|p| MigProfile {
                    name: p.name,
                    compute: p.compute,
                    memory_slices: p.memory_slices,
                    memory_gib: p.memory_gib,
                    starts: p.starts,
                    max_count: p.max_count,
                })
                .collect(),
        });
        if let Some(m) = &mig {
            // Placements are bit masks over memory slices (mig.rs): keep them within a u32.
            if m.memory_slices == 0 || m.memory_slices > 31 || m.compute_slices == 0 {
                return Err(invalid_at_name(
                    file,
                    &g.name,
                    format!(
                        "`{}`: MIG needs 1-31 memory slices and at least one compute slice",
                        g.name
                    ),
                ));
            }
            if let Some(bad) = m.aks_profiles.iter().find(|a| m.profile(a).is_none()) {
                return Err(invalid_at_name(
                    file,
                    &g.name,
                    format!(
                        "`{}`: AKS profile `{bad}` is not one of its MIG profiles",
                        g.name
                    ),
                ));
            }
            // A placement must fit inside the GPU; otherwise every layout check below is wrong.
            for p in &m.profiles {
                if p.starts.iter().any(|s| {
                    u16::from(*s) + u16::from(p.memory_slices) > u16::from(m.memory_slices)
                }) || p.compute > m.compute_slices
                    || p.compute == 0
                    || p.memory_slices == 0
                {
                    return Err(invalid_at_name(
                        file,
                        &p.name,
                        format!(
                            "MIG profile `{}` of `{}` does not fit the GPU's slices",
                            p.name, g.name
                        ),
                    ));
                }
            }
        }
        if out.contains_key(&g.name) {
            return Err(invalid(
                file,
                0..0,
                format!("GPU `{}` is listed twice", g.name),
            ));
        }
        out.insert(
            g.name.clone(),
            GpuModel {
                name: g.name,
                vendor: g.vendor,
                memory_gib: g.memory_gib,
                architecture: g.architecture,
                compute_capability: g.compute_capability,
                aliases: g.aliases,
                mig,
            },
        );
    }
    Ok(out)
}

fn load_assumptions(file: &Arc<SourceFile>) -> Result<Assumptions, CatalogError> {
    let a: AssumptionsFile = toml_file(file)?;
    let mut kube_reserved_cpu = IndexMap::new();
    for k in a.recommend.kube_reserved_cpu {
        let rising = k.vcpus.windows(2).all(|w| w[0] < w[1]);
        let sane = k
            .vcpus
            .iter()
            .chain(&k.millicores)
            .all(|v| v.is_finite() && *v >= 0.0);
        if k.vcpus.len() < 2 || k.vcpus.len() != k.millicores.len() || !rising || !sane {
            return Err(invalid(
                file,
                0..0,
                format!(
                    "kube_reserved_cpu for {}: `vcpus` must rise, with one `millicores` value \
                     each and at least two points",
                    k.provider.as_str()
                ),
            ));
        }
        let pts = k.vcpus.into_iter().zip(k.millicores).collect();
        if kube_reserved_cpu.insert(k.provider, pts).is_some() {
            return Err(invalid(
                file,
                0..0,
                format!(
                    "kube_reserved_cpu for {} is listed twice",
                    k.provider.as_str()
                ),
            ));
        }
    }
    for (name, v) in [
        ("node_disk_os_gib", a.render.node_disk_os_gib),
        ("node_disk_images_gib", a.render.node_disk_images_gib),
    ] {
        if !(v.is_finite() && (0.0..=65_536.0).contains(&v)) {
            let at = file.text.find(name).map_or(0..0, |i| i..i + name.len());
            return Err(invalid(
                file,
                at,
                format!("{name} must be in [0, 65536] GiB"),
            ));
        }
    }
    if !(a.recommend.daemonset_cpu.is_finite() && a.recommend.daemonset_cpu >= 0.0) {
        return Err(invalid(
            file,
            0..0,
            "daemonset_cpu must be 0 or more".into(),
        ));
    }
    Ok(Assumptions {
        band_monthly_interruption: a
            .spot_band
            .into_iter()
            .map(|b| (b.index, b.aws_label, b.azure_label, b.monthly_interruption))
            .collect(),
        node_acquire_minutes: a.restart.node_acquire_minutes,
        image_pull_minutes: a.restart.image_pull_minutes,
        weight_load_minutes: a.restart.weight_load_minutes,
        server_defaults: a
            .server_default
            .into_iter()
            .map(|s| (s.engine.to_ascii_lowercase(), s.gpu_memory_utilization))
            .collect(),
        stale_after_days: a.check.stale_after_days,
        stale_limits: {
            let s = &a.check.stale_after_days_by_figure;
            [
                (super::Figure::OnDemand, s.on_demand),
                (super::Figure::Reserved, s.reserved),
                (super::Figure::Spot, s.spot_price),
                (super::Figure::SpotBand, s.spot_band),
                (super::Figure::CapacityBlock, s.capacity_block),
            ]
            .into_iter()
            .collect()
        },
        low_utilization: a.check.low_utilization,
        min_kv_cache_share: a.check.min_kv_cache_share,
        daemonset_cpu: a.recommend.daemonset_cpu,
        kube_reserved_cpu,
        allocatable_memory_share: a.recommend.allocatable_memory_share,
        time_slicing_memory_headroom: a.recommend.time_slicing_memory_headroom,
        time_slicing_default_share: a.recommend.time_slicing_default_share,
        node_disk_os_gib: a.render.node_disk_os_gib,
        node_disk_images_gib: a.render.node_disk_images_gib,
    })
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
        if catalog.gpu(&s.gpu_model).is_none() {
            return Err(invalid_at_name(
                &skus_file,
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
                    &skus_file,
                    &s.name,
                    format!(
                        "SKU `{}`: `inter_node = \"{other}\"`, expected none, infiniband or efa",
                        s.name
                    ),
                ))
            }
        };
        pc.skus.insert(
            s.name.clone(),
            Sku {
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
                retired: s.retired,
                arm64: s.cpu_architecture.as_deref() == Some("arm64"),
                unpriced: s.unpriced,
                note: s.note,
            },
        );
    }
    // Every price file, oldest first; each figure keeps the newest dated value (`offer`), so
    // the order only decides ties.
    let dated = |path: &str| figure_date(&catalog.sources, path);
    let prices_file = files.read(&format!("{dir}/prices.csv"))?;
    load_skypilot_prices(&prices_file, &mut pc, dated(&format!("{dir}/prices.csv")))?;
    if p == Provider::Azure {
        if let Some(f) = files.optional(AZURE_TABLE)? {
            load_ondemand_table(&f, &mut pc, dated(AZURE_TABLE), true)?;
        }
        let retail = files.read("azure/prices-retail.csv")?;
        load_retail_overrides(&retail, &mut pc)?;
    }
    if p == Provider::Aws {
        let advisor = files.read("aws/spot-advisor.json")?;
        load_advisor(&advisor, &mut pc, dated("aws/spot-advisor.json"))?;
        if let Some(f) = files.optional(AWS_SNAPSHOT)? {
            load_aws_snapshot(&f, &mut pc, catalog, dated(AWS_SNAPSHOT))?;
        }
        if let Some(f) = files.optional(AWS_US_EAST_1)? {
            load_ondemand_table(&f, &mut pc, dated(AWS_US_EAST_1), false)?;
        }
        if let Some(f) = files.optional("aws/prices-live.csv")? {
            load_retail_overrides(&f, &mut pc)?;
        }
        if let Some(f) = files.optional("aws/instance-types.csv")? {
            load_shapes(&f, &mut pc)?;
        }
        if let Some(f) = files.optional("aws/spot-placement.csv")? {
            for (at, r) in records(&f, &super::columns::PLACEMENT)? {
                let score = r[2]
                    .parse::<u8>()
                    .ok()
                    .filter(|s| (1..=10).contains(s))
                    .ok_or_else(|| {
                        invalid(
                            &f,
                            at..at,
                            format!("`{}` is not a placement score (1-10)", r[2]),
                        )
                    })?;
                pc.spot_placement.insert(
                    (r[0].clone(), r[1].clone()),
                    (score, row_source(&f, &r[4], &r[3])),
                );
            }
        }
    }
    if p == Provider::Azure {
        if let Some(f) = files.optional("azure/spot-eviction.csv")? {
            load_eviction(&f, &mut pc, catalog)?;
        }
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

fn csv_err(file: &Arc<SourceFile>, e: &csv::Error) -> CatalogError {
    let at = e
        .position()
        .map_or(0, |p| usize::try_from(p.byte()).unwrap_or(0));
    invalid(file, at..at, format!("malformed CSV: {e}"))
}

fn parse_price(
    file: &Arc<SourceFile>,
    rec: &csv::StringRecord,
    idx: usize,
) -> Result<Option<f64>, CatalogError> {
    let raw = rec.get(idx).unwrap_or("").trim();
    if raw.is_empty() {
        return Ok(None);
    }
    let at = rec
        .position()
        .map_or(0, |p| usize::try_from(p.byte()).unwrap_or(0));
    match raw.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(Some(v)),
        _ => Err(invalid(
            file,
            at..at,
            format!("`{raw}` is not a price in USD per hour"),
        )),
    }
}

/// The Azure on-demand table of every GPU size in every region (2026-06-18).
const AZURE_TABLE: &str = "azure/ondemand-2026-06-18.csv";
/// The AWS snapshot with on-demand, spot, bands and reserved rates (2025-11-30).
const AWS_SNAPSHOT: &str = "aws/prices-2025-11-30.csv";
/// The newest AWS on-demand figures, us-east-1 only (2026-07-20).
const AWS_US_EAST_1: &str = "aws/ondemand-us-east-1-2026-07-20.csv";

/// The date figures from `path` carry: the file's `as_of`, or `None` for an undated source.
fn figure_date(sources: &[DataSource], path: &str) -> Option<Date> {
    sources
        .iter()
        .rev()
        .find(|s| s.file == path)
        .filter(|s| !s.undated)
        .map(|s| s.as_of)
}

/// Keep the newer figure: a dated one beats an undated one, a later date an earlier one, and
/// on a tie the one read later (a correction or capture of the same day) wins.
fn offer(slot: &mut Option<Price>, p: Price) -> bool {
    if slot.as_ref().is_none_or(|old| old.as_of <= p.as_of) {
        *slot = Some(p);
        true
    } else {
        false
    }
}

/// A spot price replaces the zone list with its own when it is the newer figure.
fn offer_spot(entry: &mut super::RegionPrices, p: Price, zone: &str) {
    let v = p.usd_per_hour;
    let same_source = entry.spot.as_ref().is_some_and(|s| s.source == p.source);
    if same_source {
        // More zones of the same file: the lowest is the region's figure.
        entry.spot_zones.push((zone.to_owned(), v));
        if entry.spot.as_ref().is_some_and(|s| v < s.usd_per_hour) {
            entry.spot = Some(p);
        }
    } else if offer(&mut entry.spot, p) {
        entry.spot_zones = vec![(zone.to_owned(), v)];
    }
}

fn offer_band(pc: &mut ProviderCatalog, key: (String, String), band: SpotBand) {
    match pc.spot_bands.get(&key) {
        Some(old) if old.as_of > band.as_of => {}
        _ => {
            pc.spot_bands.insert(key, band);
        }
    }
}

/// A region name, not a Local Zone or Wavelength zone (`us-east-1-atl-1`), which the tables
/// list beside regions but which node groups do not run in.
fn is_region(provider: Provider, r: &str) -> bool {
    match provider {
        Provider::Azure => {
            !r.is_empty()
                && r.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        }
        Provider::Aws => {
            let parts: Vec<&str> = r.split('-').collect();
            matches!(parts.len(), 3 | 4)
                && parts
                    .last()
                    .is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit()))
                && parts[..parts.len() - 1]
                    .iter()
                    .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_lowercase()))
                && (parts.len() == 3 || parts[1] == "gov")
        }
    }
}

/// The index of a named CSV column, or a located error.
fn column(
    file: &Arc<SourceFile>,
    headers: &csv::StringRecord,
    name: &str,
) -> Result<usize, CatalogError> {
    headers
        .iter()
        .position(|h| h == name)
        .ok_or_else(|| invalid(file, 0..0, format!("missing CSV column `{name}`")))
}

fn row_at(rec: &csv::StringRecord) -> usize {
    rec.position()
        .map_or(0, |p| usize::try_from(p.byte()).unwrap_or(0))
}

/// SkyPilot `vms.csv` rows: InstanceType, ..., Price, SpotPrice, Region, (Generation | AvailabilityZone).
fn load_skypilot_prices(
    file: &Arc<SourceFile>,
    pc: &mut ProviderCatalog,
    as_of: Option<Date>,
) -> Result<(), CatalogError> {
    let source: Arc<str> = Arc::from(file.name.as_str());
    let mut rdr = csv::Reader::from_reader(file.text.as_bytes());
    let headers = rdr.headers().map_err(|e| csv_err(file, &e))?.clone();
    let col = |name: &str| column(file, &headers, name);
    let (c_type, c_price, c_spot, c_region) = (
        col("InstanceType")?,
        col("Price")?,
        col("SpotPrice")?,
        col("Region")?,
    );
    let c_zone = headers.iter().position(|h| h == "AvailabilityZone");
    for rec in rdr.records() {
        let rec = rec.map_err(|e| csv_err(file, &e))?;
        let sku = rec.get(c_type).unwrap_or("");
        if !pc.skus.contains_key(sku) {
            continue;
        }
        let region = rec.get(c_region).unwrap_or("").to_owned();
        let od = parse_price(file, &rec, c_price)?;
        let spot = parse_price(file, &rec, c_spot)?;
        let entry = pc.prices.entry((sku.to_owned(), region)).or_default();
        if let Some(od) = od {
            // The first row of a (SKU, region) is kept: duplicates in the source repeat it.
            if entry.on_demand.is_none() {
                offer(
                    &mut entry.on_demand,
                    Price {
                        usd_per_hour: od,
                        source: Arc::clone(&source),
                        as_of,
                    },
                );
            }
        }
        // A spot price equal to (or above) on-demand means the source had none.
        if let Some(sp) = spot.filter(|sp| od.is_none_or(|od| *sp < od)) {
            let zone = c_zone.and_then(|c| rec.get(c)).unwrap_or_default();
            offer_spot(
                entry,
                Price {
                    usd_per_hour: sp,
                    source: Arc::clone(&source),
                    as_of,
                },
                zone,
            );
        }
    }
    Ok(())
}

/// `sku|instance_type, region, ondemand_usd_per_hour` tables (from the Karpenter providers'
/// generated price lists). `complete`: the table lists every region a SKU is sold in, so an
/// older row for a region it omits is dropped (the SKU is no longer offered there).
/// `_Promo` sizes are skipped: they are temporary discounts on retired sizes, 2.2-3x off the
/// list price, and not something to plan capacity on.
fn load_ondemand_table(
    file: &Arc<SourceFile>,
    pc: &mut ProviderCatalog,
    as_of: Option<Date>,
    complete: bool,
) -> Result<(), CatalogError> {
    let source: Arc<str> = Arc::from(file.name.as_str());
    let mut rdr = csv::Reader::from_reader(file.text.as_bytes());
    let headers = rdr.headers().map_err(|e| csv_err(file, &e))?.clone();
    if headers.len() != 3 || headers.get(2) != Some("ondemand_usd_per_hour") {
        return Err(invalid(
            file,
            0..0,
            "expected the columns sku (or instance_type), region, ondemand_usd_per_hour".into(),
        ));
    }
    let mut listed: IndexMap<String, Vec<String>> = IndexMap::new();
    for rec in rdr.records() {
        let rec = rec.map_err(|e| csv_err(file, &e))?;
        let (sku, region) = (rec.get(0).unwrap_or(""), rec.get(1).unwrap_or(""));
        let Some(provider) = pc.skus.get(sku).map(|s| s.provider) else {
            continue;
        };
        if sku.ends_with("_Promo") || !is_region(provider, region) {
            continue;
        }
        let Some(v) = parse_price(file, &rec, 2)? else {
            continue;
        };
        if v <= 0.0 {
            return Err(invalid(
                file,
                row_at(&rec)..row_at(&rec),
                format!("`{v}` is not a price: on-demand is never free"),
            ));
        }
        listed
            .entry(sku.to_owned())
            .or_default()
            .push(region.to_owned());
        let entry = pc
            .prices
            .entry((sku.to_owned(), region.to_owned()))
            .or_default();
        offer(
            &mut entry.on_demand,
            Price {
                usd_per_hour: v,
                source: Arc::clone(&source),
                as_of,
            },
        );
    }
    if complete {
        drop_unlisted(pc, &listed);
    }
    Ok(())
}

/// Forget the older figures of (SKU, region) pairs a complete newer table does not list.
fn drop_unlisted(pc: &mut ProviderCatalog, listed: &IndexMap<String, Vec<String>>) {
    let gone = |(sku, region): &(String, String)| {
        listed
            .get(sku)
            .is_some_and(|regions| !regions.contains(region))
    };
    pc.prices.retain(|k, _| !gone(k));
    pc.spot_bands.retain(|k, _| !gone(k));
}

/// The AWS snapshot (instances.vantage.sh, 2025-11-30): on-demand, spot min, interruption band
/// and Reserved Instance effective hourly rates per instance type and region. It is complete
/// for the types it lists.
fn load_aws_snapshot(
    file: &Arc<SourceFile>,
    pc: &mut ProviderCatalog,
    catalog: &Catalog,
    as_of: Option<Date>,
) -> Result<(), CatalogError> {
    let mut rdr = csv::Reader::from_reader(file.text.as_bytes());
    let headers = rdr.headers().map_err(|e| csv_err(file, &e))?.clone();
    let col = |name: &str| column(file, &headers, name);
    let (c_type, c_region, c_od, c_spot, c_band) = (
        col("instance_type")?,
        col("region")?,
        col("ondemand")?,
        col("spot_min")?,
        col("pct_interrupt")?,
    );
    // The term gpuplan quotes, in order of preference: standard before convertible (cheaper,
    // and what a steady floor needs), no upfront before partial and all upfront (no capital
    // outlay; the rates are effective hourly with any upfront amortised over the term).
    let terms = |years: u8| -> Result<Vec<(usize, String)>, CatalogError> {
        let mut out = Vec::new();
        for (kind, label) in [
            ("Standard.noUpfront", "standard, no upfront"),
            ("Standard.partialUpfront", "standard, partial upfront"),
            ("Standard.allUpfront", "standard, all upfront"),
            ("Convertible.noUpfront", "convertible, no upfront"),
        ] {
            out.push((
                col(&format!("yrTerm{years}{kind}"))?,
                format!("{years}-year {label}"),
            ));
        }
        Ok(out)
    };
    let (terms_1y, terms_3y) = (terms(1)?, terms(3)?);
    let name: &str = &file.name;
    let mut listed: IndexMap<String, Vec<String>> = IndexMap::new();
    for rec in rdr.records() {
        let rec = rec.map_err(|e| csv_err(file, &e))?;
        let (sku, region) = (
            rec.get(c_type).unwrap_or(""),
            rec.get(c_region).unwrap_or(""),
        );
        if !pc.skus.contains_key(sku) || !is_region(Provider::Aws, region) {
            continue;
        }
        let at = row_at(&rec);
        let Some(od) = parse_price(file, &rec, c_od)? else {
            continue;
        };
        listed
            .entry(sku.to_owned())
            .or_default()
            .push(region.to_owned());
        let key = (sku.to_owned(), region.to_owned());
        let price = |usd: f64, what: &str| Price {
            usd_per_hour: usd,
            source: Arc::from(format!("{name} ({what})")),
            as_of,
        };
        let reserved = |terms: &[(usize, String)]| -> Result<Option<Price>, CatalogError> {
            for (c, label) in terms {
                if let Some(v) = parse_price(file, &rec, *c)? {
                    if v > 0.0 && v < od {
                        return Ok(Some(price(
                            v,
                            &format!("Reserved Instance, {label}, effective hourly"),
                        )));
                    }
                    return Err(invalid(
                        file,
                        at..at,
                        format!("reserved rate {v} for `{sku}` in {region} is not below its on-demand {od}"),
                    ));
                }
            }
            Ok(None)
        };
        let (r1, r3) = (reserved(&terms_1y)?, reserved(&terms_3y)?);
        let entry = pc.prices.entry(key.clone()).or_default();
        offer(&mut entry.on_demand, price(od, "Linux on-demand"));
        if let Some(p) = r1 {
            offer(&mut entry.reserved_1y, p);
        }
        if let Some(p) = r3 {
            offer(&mut entry.reserved_3y, p);
        }
        // A spot price at or above on-demand is no spot price (as in the SkyPilot rows).
        if let Some(sp) = parse_price(file, &rec, c_spot)?.filter(|sp| *sp > 0.0 && *sp < od) {
            offer_spot(entry, price(sp, "spot, lowest zone"), "");
        }
        let label = rec.get(c_band).unwrap_or("").trim();
        if !label.is_empty() {
            let Some(b) = catalog
                .assumptions
                .band_monthly_interruption
                .iter()
                .find(|b| b.1 == label)
            else {
                return Err(invalid(
                    file,
                    at..at,
                    format!(
                        "interruption band `{label}`: expected <5%, 5-10%, 10-15%, 15-20% or >20%"
                    ),
                ));
            };
            offer_band(
                pc,
                key,
                SpotBand {
                    index: b.0,
                    label: label.to_owned(),
                    savings_pct: None,
                    source: Arc::from(format!("{name} (Spot Instance Advisor band)")),
                    as_of,
                },
            );
        }
    }
    drop_unlisted(pc, &listed);
    Ok(())
}

/// Captured Retail Prices rows, newer than the SkyPilot snapshot: they replace it.
fn load_retail_overrides(
    file: &Arc<SourceFile>,
    pc: &mut ProviderCatalog,
) -> Result<(), CatalogError> {
    let mut rdr = csv::Reader::from_reader(file.text.as_bytes());
    for rec in rdr.records() {
        let rec = rec.map_err(|e| csv_err(file, &e))?;
        let (sku, region, kind) = (
            rec.get(0).unwrap_or(""),
            rec.get(1).unwrap_or(""),
            rec.get(2).unwrap_or(""),
        );
        let Some(v) = parse_price(file, &rec, 3)? else {
            continue;
        };
        let at = row_at(&rec);
        // `captured` is the day the row was fetched: the figure's date.
        let captured = rec.get(5).unwrap_or("").trim();
        let as_of = Some(captured_date(file, at, captured)?);
        let source: Arc<str> = Arc::from(format!(
            "{} ({}, captured {})",
            file.name,
            rec.get(6).unwrap_or(""),
            rec.get(5).unwrap_or("")
        ));
        let price = Price {
            usd_per_hour: v,
            source,
            as_of,
        };
        let entry = pc
            .prices
            .entry((sku.to_owned(), region.to_owned()))
            .or_default();
        match kind {
            "consumption" => {
                offer(&mut entry.on_demand, price);
            }
            "capacity-block" => {
                offer(&mut entry.capacity_block, price);
            }
            "spot" => offer_spot(entry, price, ""),
            // Reservation rows carry the price of the whole term (Retail Prices API): 365 or
            // 3 x 365 days of 24 hours.
            "reservation-1y" | "reservation-3y" => {
                let hours = if kind == "reservation-1y" {
                    8760.0
                } else {
                    26_280.0
                };
                let hourly = Price {
                    usd_per_hour: price.usd_per_hour / hours,
                    ..price
                };
                if kind == "reservation-1y" {
                    offer(&mut entry.reserved_1y, hourly);
                } else {
                    offer(&mut entry.reserved_3y, hourly);
                }
            }
            other => {
                return Err(invalid(
                    file,
                    at..at,
                    format!("price kind `{other}`: expected consumption, spot, capacity-block, reservation-1y or reservation-3y"),
                ));
            }
        }
    }
    Ok(())
}

fn load_advisor(
    file: &Arc<SourceFile>,
    pc: &mut ProviderCatalog,
    as_of: Option<Date>,
) -> Result<(), CatalogError> {
    let parsed: AdvisorFile = serde_json::from_str(&file.text).map_err(|e| {
        let off = line_offset(&file.text, e.line(), e.column());
        invalid(file, off..off, format!("spot advisor data: {e}"))
    })?;
    let source: Arc<str> = Arc::from(file.name.as_str());
    for (region, oses) in parsed.spot_advisor {
        let Some(linux) = oses.get("Linux") else {
            continue;
        };
        for (ty, e) in linux {
            if !pc.skus.contains_key(ty) {
                continue;
            }
            let label = parsed
                .ranges
                .iter()
                .find(|r| r.index == e.r)
                .map(|r| r.label.clone())
                .unwrap_or_else(|| format!("band {}", e.r));
            offer_band(
                pc,
                (ty.clone(), region.clone()),
                SpotBand {
                    index: e.r,
                    label,
                    savings_pct: Some(e.s),
                    source: Arc::clone(&source),
                    as_of,
                },
            );
        }
    }
    Ok(())
}

/// The records of a refreshed CSV file with its named columns, each record with its byte
/// offset for errors.
fn records(
    file: &Arc<SourceFile>,
    columns: &[&str],
) -> Result<Vec<(usize, Vec<String>)>, CatalogError> {
    let mut rdr = csv::Reader::from_reader(file.text.as_bytes());
    let headers = rdr.headers().map_err(|e| csv_err(file, &e))?.clone();
    let idx = columns
        .iter()
        .map(|c| {
            headers
                .iter()
                .position(|h| h == *c)
                .ok_or_else(|| invalid(file, 0..0, format!("missing CSV column `{c}`")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let mut out = Vec::new();
    for rec in rdr.records() {
        let rec = rec.map_err(|e| csv_err(file, &e))?;
        let at = rec
            .position()
            .map_or(0, |p| usize::try_from(p.byte()).unwrap_or(0));
        out.push((
            at,
            idx.iter()
                .map(|&i| rec.get(i).unwrap_or("").trim().to_owned())
                .collect(),
        ));
    }
    Ok(out)
}

fn number(file: &Arc<SourceFile>, at: usize, raw: &str, what: &str) -> Result<f64, CatalogError> {
    match raw.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        _ => Err(invalid(file, at..at, format!("`{raw}` is not {what}"))),
    }
}

fn row_source(file: &Arc<SourceFile>, source: &str, captured: &str) -> Arc<str> {
    Arc::from(format!("{} ({source}, captured {captured})", file.name))
}

/// `quota.csv`: region, family, limit_vcpus, used_vcpus, captured, source.
fn load_quota(file: &Arc<SourceFile>, pc: &mut ProviderCatalog) -> Result<(), CatalogError> {
    for (at, r) in records(file, &super::columns::QUOTA)? {
        let limit = number(file, at, &r[2], "a vCPU limit")?;
        // AWS Service Quotas reports no usage.
        let used = match r[3].as_str() {
            "" => None,
            u => Some(number(file, at, u, "a vCPU count")?),
        };
        pc.quotas.insert(
            (r[0].clone(), super::quota_key(&r[1])),
            super::QuotaLimit {
                family: r[1].clone(),
                limit,
                used,
                source: row_source(file, &r[5], &r[4]),
            },
        );
    }
    Ok(())
}

/// `availability.csv`: sku, region, zones (space-separated), restriction, captured, source.
fn load_availability(file: &Arc<SourceFile>, pc: &mut ProviderCatalog) -> Result<(), CatalogError> {
    for (_, r) in records(file, &super::columns::AVAILABILITY)? {
        pc.availability.insert(
            (r[0].clone(), r[1].clone()),
            super::Availability {
                zones: r[2].split_whitespace().map(str::to_owned).collect(),
                restriction: Some(r[3].clone()).filter(|x| !x.is_empty()),
                source: row_source(file, &r[5], &r[4]),
            },
        );
    }
    Ok(())
}

/// `azure/spot-eviction.csv`: sku, region, band (`0-5` … `20+`), spot_usd_per_hour, captured,
/// source. A band replaces the catalog's "unknown"; a spot price replaces the retail one.
fn load_eviction(
    file: &Arc<SourceFile>,
    pc: &mut ProviderCatalog,
    catalog: &Catalog,
) -> Result<(), CatalogError> {
    for (at, r) in records(file, &super::columns::EVICTION)? {
        let source = row_source(file, &r[5], &r[4]);
        let as_of = Some(captured_date(file, at, &r[4])?);
        if !r[2].is_empty() {
            let Some(b) = catalog
                .assumptions
                .band_monthly_interruption
                .iter()
                .find(|b| b.2 == r[2])
            else {
                return Err(invalid(
                    file,
                    at..at,
                    format!(
                        "eviction band `{}`: expected 0-5, 5-10, 10-15, 15-20 or 20+",
                        r[2]
                    ),
                ));
            };
            pc.spot_bands.insert(
                (r[0].clone(), r[1].clone()),
                SpotBand {
                    index: b.0,
                    label: r[2].clone(),
                    savings_pct: None,
                    source: Arc::clone(&source),
                    as_of,
                },
            );
        }
        if !r[3].is_empty() {
            let v = number(file, at, &r[3], "a price in USD per hour")?;
            let entry = pc.prices.entry((r[0].clone(), r[1].clone())).or_default();
            offer_spot(
                entry,
                Price {
                    usd_per_hour: v,
                    source,
                    as_of,
                },
                "",
            );
        }
    }
    Ok(())
}

/// The date of a refreshed row's `captured` (a date or an RFC 3339 time).
fn captured_date(file: &Arc<SourceFile>, at: usize, captured: &str) -> Result<Date, CatalogError> {
    captured.get(..10).and_then(Date::parse).ok_or_else(|| {
        invalid(
            file,
            at..at,
            format!("`captured` is `{captured}`, expected a date (YYYY-MM-DD)"),
        )
    })
}

/// `aws/instance-types.csv` (DescribeInstanceTypes): sku, gpu_count, vcpus, memory_mib, efa,
/// captured, source. The provider's own shape replaces the catalog's.
fn load_shapes(file: &Arc<SourceFile>, pc: &mut ProviderCatalog) -> Result<(), CatalogError> {
    for (at, r) in records(file, &super::columns::SHAPES)? {
        let Some(sku) = pc.skus.get_mut(&r[0]) else {
            continue;
        };
        let whole = |raw: &str, what: &str| -> Result<u32, CatalogError> {
            raw.parse::<u32>()
                .map_err(|_| invalid(file, at..at, format!("`{raw}` is not {what}")))
        };
        // Fractional-GPU sizes report one GPU; their share stays the catalog's.
        if !r[1].is_empty() && sku.gpu_partition >= 1.0 {
            sku.gpu_count = whole(&r[1], "a GPU count")?;
        }
        sku.vcpus = whole(&r[2], "a vCPU count")?;
        sku.memory_gib = number(file, at, &r[3], "a memory size in MiB")? / 1024.0;
        if r[4] == "true" && sku.inter_node == InterNode::None {
            sku.inter_node = InterNode::Efa;
        }
    }
    Ok(())
}

fn line_offset(text: &str, line: usize, col: usize) -> usize {
    text.split_inclusive('\n')
        .take(line.saturating_sub(1))
        .map(str::len)
        .sum::<usize>()
        + col.saturating_sub(1)
}
