//! The provider catalog: GPU models with MIG geometry, SKUs, prices, spot bands and planning
//! assumptions. Embedded from `providers/` at build time; `--catalog DIR` reads the same files
//! from a directory instead.

use std::path::Path;
use std::sync::Arc;

use indexmap::IndexMap;

use crate::core::Provider;
pub use crate::diag::CatalogCode;
use crate::diag::Diag;
use crate::source::SourceFile;

mod assumptions;
mod load;

pub use assumptions::{Assumptions, Figure};

pub use load::{embedded_files, CatalogError};

/// One GPU (or other accelerator) model; serialised as `catalog --gpu NAME --format json`
/// prints it.
#[derive(Debug, Clone, serde::Serialize, schemars::JsonSchema)]
pub struct GpuModel {
    pub name: String,
    pub vendor: String,
    /// GiB as CUDA reports the device's total (nvidia-smi's FB total / 1024): what a server's
    /// memory fraction multiplies, so every memory rule and the recommender use this figure.
    pub memory_gib: f64,
    /// The nominal (marketing) figure, for display beside the model's name.
    pub nominal_memory_gib: f64,
    /// Where `memory_gib` comes from.
    pub usable_memory_source: String,
    pub architecture: String,
    pub compute_capability: Option<String>,
    pub aliases: Vec<String>,
    pub mig: Option<MigSpec>,
}

impl GpuModel {
    pub fn is_nvidia(&self) -> bool {
        self.vendor == "nvidia"
    }
}

/// MIG geometry of a GPU: slice counts and every profile with its placements.
#[derive(Debug, Clone, serde::Serialize, schemars::JsonSchema)]
pub struct MigSpec {
    pub compute_slices: u8,
    pub memory_slices: u8,
    pub pci_device_ids: Vec<String>,
    pub placement_source: String,
    /// Where each profile's `memory_gib` (what the driver gives an instance) comes from:
    /// a published `nvidia-smi mig -lgip`, or an estimate from a measured GPU.
    pub driver_memory_source: String,
    /// The profiles AKS creates for `gpu_instance` MIG1g ... MIG7g on this GPU, in that order;
    /// empty when AKS offers MIG on no size with it.
    #[serde(skip)]
    pub aks_profiles: Vec<String>,
    pub profiles: Vec<MigProfile>,
}

impl MigSpec {
    pub fn profile(&self, name: &str) -> Option<&MigProfile> {
        self.profiles.iter().find(|p| p.name == name)
    }

    /// Whether AKS can create `name` (`gpu_instance`).
    pub fn aks_creates(&self, name: &str) -> bool {
        self.aks_profiles.iter().any(|p| p == name)
    }

    /// The azurerm `gpu_instance` value that creates profile `name` under AKS.
    pub(crate) fn aks_gpu_instance(&self, name: &str) -> Option<String> {
        self.aks_creates(name)
            .then(|| self.profile(name))
            .flatten()
            .map(|p| format!("MIG{}g", p.compute))
    }
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, schemars::JsonSchema)]
pub struct MigProfile {
    pub name: String,
    pub compute: u8,
    pub memory_slices: u8,
    /// What the driver gives an instance (`nvidia-smi mig -lgip`), never more than the GPU's
    /// usable total: less than the figure in the name (19.50 GiB for a 2g.20gb on A100 80GB).
    pub memory_gib: f64,
    pub starts: Vec<u8>,
    pub max_count: u8,
}

/// How nodes of a SKU talk to each other.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InterNode {
    None,
    Infiniband,
    Efa,
}

impl InterNode {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            InterNode::None => "none",
            InterNode::Infiniband => "infiniband",
            InterNode::Efa => "efa",
        }
    }
}

/// A VM size or instance type.
#[derive(Debug, Clone)]
pub struct Sku {
    pub provider: Provider,
    pub name: String,
    pub gpu_model: String,
    pub gpu_count: u32,
    /// Share of one GPU for partitioned sizes (Azure NVv4); 1.0 otherwise.
    pub gpu_partition: f64,
    pub vcpus: u32,
    pub memory_gib: f64,
    pub quota_family: String,
    pub spot_quota_family: Option<String>,
    pub quota_family_verified: bool,
    pub nvlink: bool,
    pub inter_node: InterNode,
    /// EFA interfaces per instance (EC2 DescribeInstanceTypes), where the catalog knows it.
    pub efa_interfaces: Option<u32>,
    pub retired: bool,
    /// Arm host CPUs (AWS Graviton): images must be built for arm64.
    pub arm64: bool,
    /// The VM reaches its GPU through SR-IOV vGPU: it runs the host's GRID guest driver
    /// (AKS installs it; the GPU Operator's data-centre driver does not run there), and on a
    /// MIG-capable card the host sets MIG, so the guest sees one MIG instance per GPU and
    /// cannot create others (`Catalog::host_mig`).
    pub vgpu: bool,
    /// Why no price table lists this SKU (sold only as UltraServer Capacity Blocks, ...): it
    /// is in the catalog for its shape and offered nowhere until a refresh prices it.
    pub unpriced: Option<String>,
    pub note: Option<String>,
}

impl Sku {
    /// The host's CPU architecture as Kubernetes labels it (`kubernetes.io/arch`).
    pub fn cpu_architecture(&self) -> &'static str {
        if self.arm64 {
            "arm64"
        } else {
            "amd64"
        }
    }
    /// What a multi-node gang whose replicas use `gpus` GPUs each lacks on this SKU, or `None`
    /// when it can run there: a fabric between nodes (InfiniBand, or EFA where EC2 gives the
    /// type EFA interfaces), and NVLink between a node's GPUs when a replica spans several
    /// (its gradients or tensor shards cross them every step; the context article: training
    /// wants NVLink). A gang of one-GPU replicas needs only the fabric, which is why EC2 offers
    /// EFA on g5, g6 and g6e sizes. `recommend` and GP026 both ask this, so they never disagree.
    pub(crate) fn gang_gap(&self, gpus: u32) -> Option<&'static str> {
        match (self.inter_node, self.nvlink || gpus <= 1) {
            (InterNode::None, true) => Some("no InfiniBand/EFA between nodes"),
            (InterNode::None, false) => Some("neither NVLink nor InfiniBand/EFA"),
            (_, false) => Some("no NVLink between the GPUs a replica spans"),
            (_, true) => None,
        }
    }
}

impl Sku {
    /// The quota bucket spot capacity of this SKU counts against.
    pub(crate) fn spot_quota(&self) -> &str {
        let cloud = crate::cloud::profile(self.provider).spot_quota_family;
        match (&self.spot_quota_family, cloud) {
            (Some(f), _) => f,
            (None, Some(f)) => f,
            (None, None) => &self.quota_family,
        }
    }
}

/// A price with where it came from and the date its source gives it.
#[derive(Debug, Clone, PartialEq)]
pub struct Price {
    pub usd_per_hour: f64,
    pub source: Arc<str>,
    /// The date the source records for the figure; `None` when it records none (the SkyPilot
    /// rows), which counts as older than any dated figure.
    pub as_of: Option<crate::core::Date>,
    /// For a reservation, the offering the rate is for as its source names it ("1-year
    /// standard, no upfront"; Azure's "1 Year"): what a purchase list tells a buyer.
    pub offering: Option<Arc<str>>,
}

impl Price {
    /// "as of 2025-11-30", or "undated".
    pub(crate) fn dated(&self) -> String {
        dated(self.as_of)
    }
}

/// "as of DATE", or "undated" for a source that records no date.
pub(crate) fn dated(as_of: Option<crate::core::Date>) -> String {
    as_of.map_or_else(|| "undated".to_owned(), |d| format!("as of {d}"))
}

/// "as of DATE" for a dated source, or "undated (taken DATE)" for one that records no date,
/// with the day its rows were taken into gpuplan: one wording for a source's age.
pub(crate) fn source_dated(as_of: impl std::fmt::Display, undated: bool) -> String {
    if undated {
        format!("undated (taken {as_of})")
    } else {
        format!("as of {as_of}")
    }
}

/// Prices of one SKU in one region.
#[derive(Debug, Clone, Default)]
pub struct RegionPrices {
    pub on_demand: Option<Price>,
    /// Spot as bought: the zones' average (a pool's nodes land in whichever zone has
    /// capacity); `None` when no dated source has one (or a spot price equal to on-demand,
    /// which in the SkyPilot rows means "not recorded").
    pub spot: Option<Price>,
    pub spot_zones: Vec<(String, f64)>,
    /// The cheapest zone's spot price where the source gives it: a note, never the price.
    pub spot_cheapest_zone: Option<f64>,
    pub reserved_1y: Option<Price>,
    pub reserved_3y: Option<Price>,
    /// AWS Capacity Block for ML, per instance-hour (from a refresh).
    pub capacity_block: Option<Price>,
}

impl RegionPrices {
    /// The catalog's own figure for a capacity type, with no stand-in: `None` when it has
    /// none (a reservation price offline, a Capacity Block price before a refresh). A
    /// capacity reservation is paid at the on-demand rate.
    pub fn listed(&self, capacity: crate::core::Capacity) -> Option<&Price> {
        use crate::core::Capacity;
        match capacity {
            Capacity::OnDemand | Capacity::CapacityReservation => self.on_demand.as_ref(),
            Capacity::Spot => self.spot.as_ref(),
            Capacity::Reserved1y => self.reserved_1y.as_ref(),
            Capacity::Reserved3y => self.reserved_3y.as_ref(),
            Capacity::CapacityBlock => self.capacity_block.as_ref(),
        }
    }
}

/// A spot interruption (eviction) band for a SKU in a region.
#[derive(Debug, Clone)]
pub struct SpotBand {
    pub index: u8,
    pub label: String,
    pub savings_pct: Option<i32>,
    pub source: Arc<str>,
    pub as_of: Option<crate::core::Date>,
}

/// A quota bucket's limit read from the provider (`catalog refresh`), in vCPUs.
#[derive(Debug, Clone)]
pub struct QuotaLimit {
    /// The family (Azure) or quota code (AWS) as the provider spells it.
    pub family: String,
    pub limit: f64,
    /// vCPUs in use when fetched, where the provider reports it (Azure usages).
    pub used: Option<f64>,
    pub source: Arc<str>,
}

impl QuotaLimit {
    /// Where the limit came from, with the use at the time when known.
    pub(crate) fn describe(&self) -> String {
        match self.used {
            Some(u) => format!("{}, {} in use then", self.source, crate::core::num(u)),
            None => self.source.to_string(),
        }
    }
}

/// Whether this account can deploy a SKU in a region (`catalog refresh`).
#[derive(Debug, Clone)]
pub struct Availability {
    pub zones: Vec<String>,
    /// Why the SKU cannot be deployed in the region (e.g. `NotAvailableForSubscription`,
    /// `not offered`), or `None` when it can.
    pub restriction: Option<String>,
    pub source: Arc<str>,
}

pub mod columns;

/// Quota buckets compare case-insensitively, ignoring spaces, `-` and `_`: Azure usages spell
/// `standardNCADSA100v4Family` where resource SKUs spell `StandardNCADSA100v4Family`.
pub(crate) fn quota_key(family: &str) -> String {
    family
        .chars()
        .filter(|c| !matches!(c, ' ' | '-' | '_'))
        .collect::<String>()
        .to_lowercase()
}

crate::core::named_enum! {
    /// What a catalog data file holds, as `sources.toml` names it.
    pub enum DataKind {
        Gpus => "gpus",
        Skus => "skus",
        Prices => "prices",
        SpotBands => "spot-bands",
        Assumptions => "assumptions",
        Quota => "quota",
        Availability => "availability",
        Shapes => "shapes",
    }
}

/// Where a data file came from and how old it is.
#[derive(Debug, Clone)]
pub struct DataSource {
    pub file: String,
    pub kind: DataKind,
    pub provider: Option<Provider>,
    pub as_of: crate::core::Date,
    /// The source records no date for its figures: `as_of` is the day they were taken into
    /// gpuplan, and every figure from the file is undated.
    pub undated: bool,
    pub source: String,
}

/// Everything gpuplan knows about one provider.
#[derive(Debug, Default, Clone)]
pub struct ProviderCatalog {
    pub skus: IndexMap<String, Sku>,
    pub regions: Vec<String>,
    /// (sku, region) -> prices
    pub prices: IndexMap<(String, String), RegionPrices>,
    /// (sku, region) -> band
    pub spot_bands: IndexMap<(String, String), SpotBand>,
    /// (region, `quota_key(family)`) -> limit; only from a refresh (quota is per account).
    pub quotas: IndexMap<(String, String), QuotaLimit>,
    /// (sku, region) -> availability; only from a refresh.
    pub availability: IndexMap<(String, String), Availability>,
    /// (GPU model, region) -> AWS spot placement score 1-10 and its source; only from a refresh.
    pub spot_placement: IndexMap<(String, String), (u8, Arc<str>)>,
}

impl ProviderCatalog {
    pub fn price(&self, sku: &str, region: &str) -> Option<&RegionPrices> {
        self.prices.get(&(sku.to_owned(), region.to_owned()))
    }
    pub fn band(&self, sku: &str, region: &str) -> Option<&SpotBand> {
        self.spot_bands.get(&(sku.to_owned(), region.to_owned()))
    }
    pub fn offered(&self, sku: &str, region: &str) -> bool {
        self.price(sku, region).is_some()
    }
    /// Why this account cannot deploy `sku` in `region`, when a refresh found a reason.
    pub fn restriction(&self, sku: &str, region: &str) -> Option<&str> {
        self.availability
            .get(&(sku.to_owned(), region.to_owned()))
            .and_then(|a| a.restriction.as_deref())
    }
    pub(crate) fn quota(&self, region: &str, family: &str) -> Option<&QuotaLimit> {
        self.quotas.get(&(region.to_owned(), quota_key(family)))
    }
}

/// A compute capability as written in the catalog: `8.9` is (8, 9).
pub(crate) fn parse_cc(text: &str) -> Option<(u32, u32)> {
    let (major, minor) = text.split_once('.')?;
    Some((major.parse().ok()?, minor.parse().ok()?))
}

impl GpuModel {
    /// Its compute capability, when the catalog gives one (NVIDIA GPUs).
    pub(crate) fn cc(&self) -> Option<(u32, u32)> {
        self.compute_capability.as_deref().and_then(parse_cc)
    }
}

/// The whole catalog.
#[derive(Debug, Clone)]
pub struct Catalog {
    pub gpus: IndexMap<String, GpuModel>,
    /// The GPU of each partitioned size (g6f, NVadsA10 v5, NVv4), by SKU name: its model
    /// with the memory of its share and no MIG, so every memory test sees the slice the VM
    /// gets, never the whole card.
    pub partitions: IndexMap<String, GpuModel>,
    pub providers: IndexMap<Provider, ProviderCatalog>,
    pub assumptions: Assumptions,
    pub sources: Vec<DataSource>,
}

impl Catalog {
    /// The catalog compiled into the binary, for the given providers.
    pub fn embedded(providers: &[Provider]) -> Result<Catalog, CatalogError> {
        load::load(&load::Files::Embedded, providers)
    }

    /// The same files read from a directory laid out like `providers/`.
    pub(crate) fn from_dir(dir: &Path, providers: &[Provider]) -> Result<Catalog, CatalogError> {
        load::load(&load::Files::Dir(dir.to_owned()), providers)
    }

    /// The embedded catalog with the newer files of a refresh cache (`catalog refresh`) in
    /// place of the embedded ones.
    pub(crate) fn layered(cache: &Path, providers: &[Provider]) -> Result<Catalog, CatalogError> {
        load::load(&load::Files::Layered(cache.to_owned()), providers)
    }

    /// A GPU model by name or alias, case-insensitively.
    pub fn gpu(&self, name: &str) -> Option<&GpuModel> {
        self.gpus.get(name).or_else(|| {
            self.gpus.values().find(|g| {
                g.name.eq_ignore_ascii_case(name)
                    || g.aliases.iter().any(|a| a.eq_ignore_ascii_case(name))
            })
        })
    }

    /// The GPU model a product name as a cluster reports it stands for (GPU feature
    /// discovery's `Tesla-T4`, dcgm-exporter's `NVIDIA A100-SXM4-80GB` or `NVIDIA H100 NVL`):
    /// the model whose name or alias has the most words, all found among the product's
    /// words; none where two models tie or none fits.
    pub fn gpu_named(&self, product: &str) -> Option<&GpuModel> {
        if let Some(g) = self.gpu(product) {
            return Some(g);
        }
        let words = |s: &str| -> Vec<String> {
            s.split(|c: char| !c.is_ascii_alphanumeric())
                .filter(|w| !w.is_empty())
                .map(str::to_ascii_uppercase)
                .collect()
        };
        let have = words(product);
        let fits = |name: &str| {
            let need = words(name);
            (!need.is_empty() && need.iter().all(|w| have.contains(w))).then_some(need.len())
        };
        let mut best: Option<(usize, &GpuModel)> = None;
        let mut tied = false;
        for g in self.gpus.values() {
            let Some(n) = std::iter::once(&g.name)
                .chain(&g.aliases)
                .filter_map(|a| fits(a))
                .max()
            else {
                continue;
            };
            match best {
                Some((b, _)) if b > n => {}
                Some((b, _)) if b == n => tied = true,
                _ => {
                    best = Some((n, g));
                    tied = false;
                }
            }
        }
        best.filter(|_| !tied).map(|(_, g)| g)
    }

    pub fn provider(&self, p: Provider) -> Option<&ProviderCatalog> {
        self.providers.get(&p)
    }

    /// Every figure the catalog sells a SKU for in a region (with the spot zones'): the one
    /// look-up each price starts from.
    pub fn prices(&self, p: Provider, sku: &str, region: &str) -> Option<&RegionPrices> {
        self.providers.get(&p)?.price(sku, region)
    }

    /// The catalog's own figure for a capacity type ([`RegionPrices::listed`]), with no
    /// stand-in: `None` when it has none (a reservation price offline, a Capacity Block
    /// price before a refresh). `engine::cost` turns it into what a node-hour costs.
    pub fn listed(
        &self,
        p: Provider,
        sku: &str,
        region: &str,
        capacity: crate::core::Capacity,
    ) -> Option<&Price> {
        self.prices(p, sku, region)?.listed(capacity)
    }

    pub(crate) fn sku(&self, p: Provider, name: &str) -> Option<&Sku> {
        self.providers.get(&p)?.skus.get(name)
    }

    /// Whether the host, not the guest, sets the MIG of a SKU's GPUs (an SR-IOV vGPU size of
    /// a MIG-capable GPU): each of the VM's GPUs is then the one MIG instance its share of the
    /// card makes, and neither AKS nor the GPU Operator may partition it.
    pub fn host_mig(&self, sku: &Sku) -> bool {
        sku.vgpu && self.gpu(&sku.gpu_model).is_some_and(|g| g.mig.is_some())
    }

    /// GPU model of a SKU.
    pub fn sku_gpu(&self, sku: &Sku) -> Option<&GpuModel> {
        if sku.gpu_partition < 1.0 {
            return self.partitions.get(&sku.name);
        }
        self.gpu(&sku.gpu_model)
    }

    /// The monthly interruption probability assumed for a band.
    pub(crate) fn band_interruption(&self, index: u8) -> Option<f64> {
        self.assumptions
            .band_monthly_interruption
            .iter()
            .find(|b| b.0 == index)
            .map(|b| b.3)
    }

    /// The limit a refresh read from the provider for a quota bucket, and where it came from.
    pub(crate) fn provider_quota(
        &self,
        provider: Provider,
        region: &str,
        family: &str,
    ) -> Option<(f64, String)> {
        self.providers
            .get(&provider)?
            .quota(region, family)
            .map(|q| (q.limit, q.describe()))
    }

    /// Allocatable vCPUs and RAM of a node of `sku`: its vCPUs less the kubelet's
    /// reservation (the provider's published schedule) and DaemonSets, and its memory's
    /// allocatable share.
    pub(crate) fn allocatable(&self, sku: &Sku) -> (f64, f64) {
        let a = &self.assumptions;
        let vcpus = f64::from(sku.vcpus);
        (
            (vcpus - a.kube_reserved_cpu(sku.provider, vcpus) - a.daemonset_cpu).max(0.0),
            sku.memory_gib * a.allocatable_memory_share,
        )
    }
    /// Default per-instance memory cap for an engine (`vllm` → 0.92).
    pub(crate) fn server_default_cap(&self, engine: &str) -> Option<f64> {
        self.assumptions
            .server_defaults
            .get(&engine.to_ascii_lowercase())
            .copied()
    }

    /// Oldest data the catalog holds per kind, for staleness checks and "data as of" lines.
    pub(crate) fn sources_for(&self, p: Provider) -> impl Iterator<Item = &DataSource> {
        self.sources
            .iter()
            .filter(move |s| s.provider.is_none_or(|sp| sp == p))
    }
}

/// A catalog file that failed to load is reported like a plan error: file, line, column.
/// A name from catalog data (a GPU model, an alias, a SKU, a region, a zone, a MIG profile, a
/// quota family) gpuplan will carry into a finding, a Terraform file or a README: letters,
/// digits, `.`, `_`, `+`, `-`, parentheses and single inner spaces, up to 128 characters. Like a plan's
/// names, it is checked on load, so no file, cache or `--catalog` directory can make one a
/// line of code.
pub(crate) fn name_ok(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 128
        && s.starts_with(|c: char| c.is_ascii_alphanumeric())
        && !s.ends_with(' ')
        && !s.contains("  ")
        && s.chars().all(|c| {
            c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '+' | '-' | ' ' | '(' | ')')
        })
}

pub(crate) fn catalog_diag(
    file: &Arc<SourceFile>,
    span: std::ops::Range<usize>,
    msg: String,
) -> Diag {
    Diag::error(CatalogCode::Invalid, file, span, msg)
        .label("here")
        .help("fix the catalog file, or run without `--catalog` to use the embedded data")
}

#[cfg(test)]
mod tests;
