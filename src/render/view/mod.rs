//! The typed view model the templates see: everything already decided, named and escaped
//! where the target language needs it, so templates only lay text out.

use serde::Serialize;

use crate::catalog::Catalog;
use crate::core::Provider;
use crate::engine::recommend::Recommendation;
use crate::plan::Plan;

pub use super::mig::MigConfigView;
pub use super::model::{KeyValue, PoolView, TaintView};

mod pools;

#[derive(Debug, Serialize)]
pub struct View {
    pub plan: String,
    pub plan_file: String,
    pub provider: Provider,
    pub regions: Vec<RegionView>,
    pub data: Vec<DataView>,
    pub pools: Vec<PoolView>,
    pub capacity_reservations: Vec<ReservationView>,
    pub mig_strategy: &'static str,
    /// The device-plugin config AKS-managed MIG pools take in a mixed-strategy cluster.
    pub single_mig_config: Option<String>,
    /// The default device-plugin config's `migStrategy`: the cluster's where any pool has MIG,
    /// `none` (the plugin's default) where none has.
    pub plugin_mig_strategy: &'static str,
    pub mig_configs: Vec<MigConfigView>,
    pub sharing_configs: Vec<SharingView>,
    /// Kueue's objects, one set per cluster (region): no ClusterQueue spans clusters.
    pub kueue: Vec<super::kueue::ClusterView>,
    /// Kueue's manager configuration (`kueue/values.yaml`) when the plan has gangs.
    pub kueue_config: Option<super::kueue::ConfigView>,
    /// The reservations the prices assume (`purchases.json`, the README's list).
    pub purchases: crate::engine::purchases::Purchases,
    /// `kueue.x-k8s.io/v1beta2` or `kueue.x-k8s.io/v1beta1`.
    pub kueue_api: &'static str,
    /// Every taint gpuplan puts on a GPU node, tolerated by the operator's operands and NFD's
    /// worker beside the chart's defaults (`render::operator`).
    pub operand_tolerations: Vec<TaintView>,
    /// Whether the GPU Operator's MIG manager runs, and why (`render::operator::mig_manager`).
    pub mig_manager_enabled: bool,
    pub mig_manager_note: &'static str,
    /// Whether the GPU Operator installs the driver and container toolkit, and why.
    pub driver_enabled: bool,
    /// The driver version the operator installs (`[render.pins]`).
    pub driver_version: String,
    /// The EKS AMI release (`[render.pins]`): Karpenter's alias, and the node groups' release
    /// version per Kubernetes minor.
    pub eks_ami_release: String,
    pub eks_release_versions: Vec<ReleaseView>,
    pub driver_note: &'static str,
    /// What multi-node training needs beyond the node pools (EFA device plugin, InfiniBand
    /// and RDMA), one sentence each.
    pub network_notes: Vec<String>,
    /// The images' share of the node disk, GiB (stated in the README).
    pub disk_images_gib: String,
    /// Pools of several node sizes (one `gpuplan.io/pool` label), for the README.
    pub node_size_pools: Vec<SizesView>,
    /// `render --karpenter`: one NodePool and node class per rendered pool (one per pool of
    /// several node sizes).
    pub karpenter: Vec<super::karpenter::KarpenterView>,
    /// Pools Karpenter cannot create (AKS-managed MIG), for the README.
    pub karpenter_skipped: Vec<super::karpenter::SkippedView>,
    /// The cluster the Karpenter selectors name, and the node role (EKS).
    pub cluster: String,
    pub node_role: String,
    /// `render --karpenter` was asked for (the file is written even when no pool qualifies).
    pub karpenter_enabled: bool,
    /// Karpenter's node class, as the rendered README names it.
    pub karpenter_node_class: &'static str,
    pub serving: Vec<super::workloads::ServingView>,
    /// Every placed workload's scheduling settings (`workloads/values.yaml`).
    pub workloads: Vec<super::workloads::WorkloadView>,
    pub total_monthly_cost: String,
    /// kube-state-metrics `--metric-labels-allowlist` entries for the labels the review reads
    /// (`monitoring/values.yaml`): `pods=[…]`, `nodes=[…]`.
    pub monitoring_allowlist: Vec<String>,
}

#[derive(Debug, Serialize)]
pub struct RegionView {
    pub name: String,
    /// Terraform provider alias (AWS) / map key.
    pub alias: String,
    /// AWS: a Terraform launch template here has EFA interfaces, so the region gets the EFA
    /// security group (all traffic to and from itself) beside the cluster's.
    pub efa: bool,
}

/// One pinned EKS release version: the Kubernetes minor it is for.
#[derive(Debug, Serialize)]
pub struct ReleaseView {
    pub kubernetes: String,
    pub version: String,
}

#[derive(Debug, Serialize)]
pub struct DataView {
    pub file: String,
    pub as_of: String,
}

#[derive(Debug, Serialize)]
pub struct ReservationView {
    pub ident: String,
    pub name: String,
    pub region: String,
    pub region_alias: String,
    pub sku: String,
    pub count: u32,
    pub pool_ident: String,
    /// The pool's node pool name, as the README's tables name pools.
    pub pool: String,
    /// AWS: the pool is an EFA gang, whose one subnet the reservation follows.
    pub efa: bool,
}

#[derive(Debug, Serialize)]
pub struct SharingView {
    pub name: String,
    /// `timeSlicing` or `mps`.
    pub kind: &'static str,
    pub replicas: u32,
    pub rename_by_default: bool,
    pub fail_requests_greater_than_one: bool,
    /// `single` on a size whose host sets MIG (CUDA reaches such a GPU only by its MIG
    /// device), `none` elsewhere.
    pub mig_strategy: &'static str,
}

/// What gangs need beyond their node pools, for the README and the operator values.
fn network_notes(pools: &[PoolView]) -> Vec<String> {
    let names = |pick: fn(&PoolView) -> bool| {
        let mut n: Vec<String> = pools
            .iter()
            .filter(|p| pick(p))
            .map(|p| format!("`{}`", p.name))
            .collect();
        n.dedup();
        n.join(", ")
    };
    let mut out = Vec::new();
    let efa = names(|p| p.efa);
    if !efa.is_empty() {
        // Said as Terraform does it: a placement group only where one is rendered (a Capacity
        // Block's instances are placed together by EC2, and get none).
        let grouped = names(|p| p.efa && p.placement_group);
        let blocks = names(|p| p.efa && !p.placement_group);
        let mut placed = Vec::new();
        if !grouped.is_empty() {
            placed.push(format!(
                "the nodes of {grouped} join one cluster placement group per pool in one subnet"
            ));
        }
        if !blocks.is_empty() {
            placed.push(format!(
                "those of {blocks} run in their Capacity Block, whose instances EC2 places together, with no placement group"
            ));
        }
        out.push(format!(
            "EFA ({efa}): each node gets every EFA interface its type supports (terraform/); {}. Pods reach the interfaces through the EFA device plugin (`vpc.amazonaws.com/efa`), which the cluster must run; NCCL then uses them through the AMI's EFA driver and libfabric, so the GPU Operator's RDMA stays off.",
            placed.join("; ")
        ));
    }
    let ib = names(|p| p.infiniband);
    if !ib.is_empty() {
        out.push(format!(
            "InfiniBand ({ib}): NCCL reaches the SKU's InfiniBand through the NVIDIA Network Operator's OFED driver, which gpuplan does not render. The GPU Operator's `driver.rdma` stays disabled, its chart default: GPUDirect RDMA needs that OFED driver first; once the Network Operator runs, set `driver.rdma.enabled: true` (and `useHostMofed: true` where OFED is installed on the host)."
        ));
    }
    out
}

pub(super) fn alias(region: &str) -> String {
    region.replace('-', "_")
}

/// Options the command line sets.
pub struct Options {
    pub capacity_reservations: bool,
    /// Also write Karpenter NodePools and node classes (`karpenter/`).
    pub karpenter: bool,
    /// `kueue.x-k8s.io/v1beta2` (the storage version), or `v1beta1` for older clusters.
    pub kueue_api: &'static str,
}

pub fn build(plan: &Plan, catalog: &Catalog, rec: &Recommendation, opts: &Options) -> View {
    let profile = super::provider::of(rec.provider);
    let stage = pools::pools(plan, catalog, rec, opts, profile);
    let kueue = super::kueue::clusters(
        plan,
        catalog,
        rec,
        &stage.pools,
        &stage.rendered,
        &stage.view_layouts,
        stage.flavors,
        opts.karpenter,
    );
    // The cluster's name, else the plan's (both DNS-1123 labels).
    let cluster = plan
        .cluster()
        .and_then(|c| c.name.as_ref())
        .map_or_else(|| plan.name().to_owned(), |n| n.get().clone());
    let (mig_manager_enabled, mig_manager_note) =
        super::operator::mig_manager(stage.any_aks_mig, stage.any_operator_mig);
    View {
        operand_tolerations: super::operator::operand_tolerations(&stage.pools),
        mig_manager_enabled,
        mig_manager_note,
        plan: rec.plan.clone(),
        plan_file: crate::render::escape::path_label(&plan.file.stable_name()),
        provider: rec.provider,
        regions: region_views(rec, profile, &stage.pools),
        data: rec
            .data
            .iter()
            .map(|d| DataView {
                file: d.file.clone(),
                as_of: d.dated(),
            })
            .collect(),
        network_notes: network_notes(&stage.pools),
        pools: stage.pools,
        capacity_reservations: stage.reservations,
        mig_strategy: if stage.any_operator_mig {
            "mixed"
        } else {
            "single"
        },
        plugin_mig_strategy: if stage.any_operator_mig {
            "mixed"
        } else if rec.pools.iter().any(|p| p.sharing.is_partitioned()) {
            "single"
        } else {
            "none"
        },
        single_mig_config: stage.single_mig_config,
        mig_configs: stage.mig_configs,
        sharing_configs: stage.sharing_configs,
        monitoring_allowlist: vec![
            format!("pods=[{}]", crate::core::labels::ALLOWLIST_PODS.join(",")),
            format!("nodes=[{}]", crate::core::labels::ALLOWLIST_NODES.join(",")),
        ],
        kueue,
        kueue_config: super::kueue::config(plan, catalog, rec, opts.kueue_api),
        purchases: crate::engine::purchases::purchases(rec, catalog),
        kueue_api: opts.kueue_api,
        // EKS's AL2023 NVIDIA AMI ships the driver and the container toolkit; AKS pools set
        // `gpu_driver = "None"` (except AKS-managed MIG, which AKS sets up with its own driver;
        // the operator finds that driver pre-installed and leaves it).
        driver_enabled: !profile.driver_in_image,
        driver_version: catalog.assumptions.gpu_driver_version.clone(),
        eks_ami_release: catalog.assumptions.eks_ami_release.clone(),
        eks_release_versions: catalog
            .assumptions
            .eks_release_versions
            .iter()
            .map(|(k, v)| ReleaseView {
                kubernetes: k.clone(),
                version: v.clone(),
            })
            .collect(),
        driver_note: profile.driver_note,
        disk_images_gib: crate::core::num(catalog.assumptions.node_disk_images_gib),
        node_size_pools: sizes_views(rec),
        karpenter: super::karpenter::join(stage.karpenter),
        karpenter_skipped: stage.karpenter_skipped,
        node_role: format!("KarpenterNodeRole-{cluster}"),
        karpenter_enabled: opts.karpenter,
        karpenter_node_class: crate::cloud::profile(rec.provider)
            .render
            .karpenter_node_class,
        cluster,
        serving: super::workloads::serving(plan, catalog, rec),
        workloads: super::workloads::workloads(plan, catalog, rec),
        total_monthly_cost: total_cost(catalog, rec),
    }
}

/// The expected cost a month, naming the pools it leaves out for want of a price.
fn total_cost(catalog: &Catalog, rec: &Recommendation) -> String {
    let unknown: Vec<String> = rec
        .pools
        .iter()
        .filter(|p| {
            crate::engine::cost::price_unknown(catalog, p.provider, &p.sku, &p.region, p.capacity)
        })
        .map(|p| format!("`{}`", p.name))
        .collect();
    let total = format!("{} a month", crate::core::usd(rec.total_monthly_cost_usd));
    match unknown.first() {
        None => total,
        Some(_) => format!(
            "{total}, not counting {}: {}",
            unknown.join(", "),
            crate::engine::cost::block_price_unknown_said(rec.provider)
        ),
    }
}

/// The regions the pools are in, sorted, each with whether it needs the EFA security group.
fn region_views(
    rec: &Recommendation,
    profile: &super::provider::Profile,
    pools: &[PoolView],
) -> Vec<RegionView> {
    let mut names: Vec<String> = rec.pools.iter().map(|p| p.region.clone()).collect();
    names.sort();
    names.dedup();
    names
        .into_iter()
        .map(|r| RegionView {
            alias: alias(&r),
            efa: profile.efa
                && pools
                    .iter()
                    .any(|p| p.region == r && p.efa && p.terraform && p.launch_template),
            name: r,
        })
        .collect()
}

/// A pool of several node sizes: its label, and each size's recommended pool.
#[derive(Debug, Serialize)]
pub struct SizesView {
    pub label: String,
    pub sizes: Vec<SizeView>,
    pub monthly_usd: f64,
}

#[derive(Debug, Serialize)]
pub struct SizeView {
    pub name: String,
    pub sku: String,
    pub min: u32,
    pub max: u32,
    pub monthly_usd: f64,
}

/// The recommendation's pools grouped by label, where a label spans several node sizes.
fn sizes_views(rec: &Recommendation) -> Vec<SizesView> {
    let mut out: Vec<SizesView> = Vec::new();
    for p in &rec.pools {
        let size = SizeView {
            name: p.name.clone(),
            sku: p.sku.clone(),
            min: p.nodes.min,
            max: p.nodes.max,
            monthly_usd: p.monthly_cost_usd,
        };
        match out.iter_mut().find(|f| f.label == p.pool_label) {
            Some(f) => {
                f.monthly_usd = crate::core::cents(f.monthly_usd + p.monthly_cost_usd);
                f.sizes.push(size);
            }
            None => out.push(SizesView {
                label: p.pool_label.clone(),
                monthly_usd: p.monthly_cost_usd,
                sizes: vec![size],
            }),
        }
    }
    out.retain(|f| f.sizes.len() > 1);
    out
}

/// One cluster's Kueue file, from the view it is rendered in.
impl<'v> super::kueue::KueueFile<'v> {
    pub fn of(v: &'v View, c: &'v super::kueue::ClusterView) -> super::kueue::KueueFile<'v> {
        super::kueue::KueueFile {
            plan: &v.plan,
            provider: v.provider.as_str(),
            plan_file: &v.plan_file,
            kueue_api: v.kueue_api,
            cohort_field: if v.kueue_api.ends_with("v1beta1") {
                "cohort"
            } else {
                "cohortName"
            },
            region: &c.region,
            cohort: &c.cohort,
            flavors: &c.flavors,
            teams: &c.teams,
            priorities: &c.priorities,
            provisioning: c.provisioning.as_ref(),
            karpenter: v.karpenter_enabled,
        }
    }
}
