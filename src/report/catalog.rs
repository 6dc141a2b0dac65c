//! `catalog --format json`: the catalog's GPU models, SKUs and dated figures as typed
//! documents, so `gpuplan schema --output catalog|catalog-gpu|catalog-sku` is generated from
//! the very types the output is written from.

use schemars::JsonSchema;
use serde::Serialize;

use crate::catalog::{Catalog, DataKind, GpuModel, Price, ProviderCatalog, RegionPrices, Sku};
use crate::core::Provider;

pub const CATALOG_SCHEMA: &str = "gpuplan.catalog/v1";
pub const GPU_SCHEMA: &str = "gpuplan.catalog-gpu/v1";
pub const SKU_SCHEMA: &str = "gpuplan.catalog-sku/v1";

/// `gpuplan catalog --format json`: every source, GPU model and provider's SKUs.
#[derive(Debug, Serialize, JsonSchema)]
pub struct CatalogDoc {
    pub schema: &'static str,
    pub sources: Vec<SourceDoc>,
    pub gpus: Vec<GpuModel>,
    pub providers: Vec<ProviderDoc>,
}

/// One data file of the catalog.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SourceDoc {
    pub file: String,
    pub kind: DataKind,
    pub provider: Option<Provider>,
    /// The date the file's figures are as of (for an undated file, the day they were taken).
    pub as_of: String,
    pub undated: bool,
    pub source: String,
}

/// One provider's regions and the SKUs offered in the region asked for (all without one).
#[derive(Debug, Serialize, JsonSchema)]
pub struct ProviderDoc {
    pub provider: Provider,
    pub regions: Vec<String>,
    pub skus: Vec<SkuDoc>,
}

/// A document of its own (`--gpu`, `--sku`): the object the overview lists, with the
/// `schema` key every JSON output starts with.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Versioned<T> {
    pub schema: &'static str,
    #[serde(flatten)]
    pub doc: T,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct SkuDoc {
    pub provider: Provider,
    pub name: String,
    pub gpu_model: String,
    pub gpu_count: u32,
    /// Share of one GPU for partitioned sizes (Azure NVv4); 1 otherwise.
    pub gpu_partition: f64,
    pub gpu_memory_gib: Option<f64>,
    pub vcpus: u32,
    pub memory_gib: f64,
    pub quota_family: String,
    pub spot_quota_family: String,
    pub quota_family_verified: bool,
    pub nvlink: bool,
    /// How nodes talk to each other: `none`, `infiniband` or `efa`.
    pub inter_node: String,
    pub efa_interfaces: Option<u32>,
    /// `kubernetes.io/arch` of the host: `amd64` or `arm64`.
    pub cpu_architecture: String,
    /// The VM reaches its GPU through SR-IOV vGPU (GRID guest driver, installed by AKS).
    pub vgpu: bool,
    /// The host, not the guest, sets MIG on the GPU: the VM sees one MIG instance per GPU
    /// (its share of the card) and cannot create others.
    pub host_mig: bool,
    pub retired: bool,
    pub unpriced: Option<String>,
    pub note: Option<String>,
    pub regions: Vec<RegionDoc>,
}

/// A SKU's prices, spot band and account data in one region.
#[derive(Debug, Serialize, JsonSchema)]
pub struct RegionDoc {
    pub region: String,
    pub on_demand_usd_per_hour: Option<f64>,
    pub on_demand_source: Option<String>,
    pub spot_usd_per_hour: Option<f64>,
    pub spot_source: Option<String>,
    pub reserved_1y_usd_per_hour: Option<f64>,
    pub reserved_3y_usd_per_hour: Option<f64>,
    pub capacity_block_usd_per_hour: Option<f64>,
    pub spot_band: Option<String>,
    pub spot_band_source: Option<String>,
    pub spot_band_as_of: Option<String>,
    /// Per-account data, present after `catalog refresh`.
    pub zones: Option<Vec<String>>,
    pub restriction: Option<String>,
    pub quota_vcpus: Option<f64>,
    pub spot_quota_vcpus: Option<f64>,
    pub spot_placement_score: Option<u8>,
    /// Each figure with its own date and source.
    pub figures: Figures,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Figures {
    pub on_demand: Option<FigureDoc>,
    pub spot: Option<FigureDoc>,
    pub reserved_1y: Option<FigureDoc>,
    pub reserved_3y: Option<FigureDoc>,
    pub capacity_block: Option<FigureDoc>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct FigureDoc {
    pub usd_per_hour: f64,
    /// `null`: the source is undated.
    pub as_of: Option<String>,
    pub source: String,
}

pub fn overview(c: &Catalog, region: Option<&str>) -> CatalogDoc {
    CatalogDoc {
        schema: CATALOG_SCHEMA,
        sources: c
            .sources
            .iter()
            .map(|s| SourceDoc {
                file: s.file.clone(),
                kind: s.kind,
                provider: s.provider,
                as_of: s.as_of.to_string(),
                undated: s.undated,
                source: s.source.clone(),
            })
            .collect(),
        gpus: c.gpus.values().cloned().collect(),
        providers: c
            .providers
            .iter()
            .map(|(p, pc)| ProviderDoc {
                provider: *p,
                regions: pc.regions.clone(),
                skus: skus_in(pc, region).map(|s| sku(c, pc, s)).collect(),
            })
            .collect(),
    }
}

/// The SKUs of `pc` offered in `region` (every SKU without one).
pub fn skus_in<'a>(
    pc: &'a ProviderCatalog,
    region: Option<&'a str>,
) -> impl Iterator<Item = &'a Sku> {
    pc.skus
        .values()
        .filter(move |s| region.is_none_or(|r| pc.offered(&s.name, r)))
}

fn figure(p: Option<&Price>) -> Option<FigureDoc> {
    p.map(|x| FigureDoc {
        usd_per_hour: x.usd_per_hour,
        as_of: x.as_of.map(|d| d.to_string()),
        source: x.source.to_string(),
    })
}

fn region(pc: &ProviderCatalog, s: &Sku, r: &str, p: &RegionPrices) -> RegionDoc {
    let band = pc.band(&s.name, r);
    let rate = |x: &Option<Price>| x.as_ref().map(|x| x.usd_per_hour);
    let source = |x: &Option<Price>| x.as_ref().map(|x| x.source.to_string());
    RegionDoc {
        region: r.to_owned(),
        on_demand_usd_per_hour: rate(&p.on_demand),
        on_demand_source: source(&p.on_demand),
        spot_usd_per_hour: rate(&p.spot),
        spot_source: source(&p.spot),
        reserved_1y_usd_per_hour: rate(&p.reserved_1y),
        reserved_3y_usd_per_hour: rate(&p.reserved_3y),
        capacity_block_usd_per_hour: rate(&p.capacity_block),
        spot_band: band.map(|b| b.label.clone()),
        spot_band_source: band.map(|b| b.source.to_string()),
        spot_band_as_of: band.and_then(|b| b.as_of.map(|d| d.to_string())),
        zones: pc
            .availability
            .get(&(s.name.clone(), r.to_owned()))
            .map(|a| a.zones.clone()),
        restriction: pc.restriction(&s.name, r).map(str::to_owned),
        quota_vcpus: pc.quota(r, &s.quota_family).map(|q| q.limit),
        spot_quota_vcpus: pc.quota(r, s.spot_quota()).map(|q| q.limit),
        spot_placement_score: pc
            .spot_placement
            .get(&(s.gpu_model.clone(), r.to_owned()))
            .map(|x| x.0),
        figures: Figures {
            on_demand: figure(p.on_demand.as_ref()),
            spot: figure(p.spot.as_ref()),
            reserved_1y: figure(p.reserved_1y.as_ref()),
            reserved_3y: figure(p.reserved_3y.as_ref()),
            capacity_block: figure(p.capacity_block.as_ref()),
        },
    }
}

pub fn sku(c: &Catalog, pc: &ProviderCatalog, s: &Sku) -> SkuDoc {
    SkuDoc {
        provider: s.provider,
        name: s.name.clone(),
        gpu_model: s.gpu_model.clone(),
        gpu_count: s.gpu_count,
        gpu_partition: s.gpu_partition,
        gpu_memory_gib: c.sku_gpu(s).map(|g| g.memory_gib),
        vcpus: s.vcpus,
        memory_gib: s.memory_gib,
        quota_family: s.quota_family.clone(),
        spot_quota_family: s.spot_quota().to_owned(),
        quota_family_verified: s.quota_family_verified,
        nvlink: s.nvlink,
        inter_node: s.inter_node.as_str().to_owned(),
        efa_interfaces: s.efa_interfaces,
        cpu_architecture: s.cpu_architecture().to_owned(),
        vgpu: s.vgpu,
        host_mig: c.host_mig(s),
        retired: s.retired,
        unpriced: s.unpriced.clone(),
        note: s.note.clone(),
        regions: pc
            .prices
            .iter()
            .filter(|((n, _), _)| n == &s.name)
            .map(|((_, r), p)| region(pc, s, r, p))
            .collect(),
    }
}

/// `doc` as a document of its own, under `schema`.
pub fn versioned<T>(schema: &'static str, doc: T) -> Versioned<T> {
    Versioned { schema, doc }
}
