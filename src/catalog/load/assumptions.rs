//! `assumptions.toml`: the planning assumptions every figure rests on (spot bands, restart
//! times, server defaults, staleness limits, node overheads, render defaults).

use std::sync::Arc;

use indexmap::IndexMap;
use serde::Deserialize;

use super::sources::Meta;
use super::{invalid, toml_file, CatalogError};
use crate::catalog::Assumptions;
use crate::core::Provider;
use crate::source::SourceFile;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct AssumptionsFile {
    #[allow(dead_code)]
    meta: Meta,
    spot_band: Vec<BandEntry>,
    restart: RestartEntry,
    server_default: Vec<ServerDefault>,
    check: CheckEntry,
    recommend: RecommendEntry,
    render: RenderEntry,
    review: ReviewEntry,
    /// Minimum compute capability per weight precision (absent in an older catalog: no check).
    #[serde(default)]
    precision: IndexMap<String, String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ReviewEntry {
    min_days: f64,
    min_trend_days: usize,
    headroom: f64,
    consolidation_target: f64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RenderEntry {
    node_disk_os_gib: f64,
    node_disk_images_gib: f64,
    pins: PinsEntry,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct PinsEntry {
    gpu_driver_version: String,
    eks_ami_release: String,
    eks_release_versions: IndexMap<String, String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RecommendEntry {
    daemonset_cpu: f64,
    allocatable_memory_share: f64,
    time_slicing_memory_headroom: f64,
    time_slicing_default_share: f64,
    user_facing_min_nodes: u32,
    kube_reserved_cpu: Vec<KubeReservedEntry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct KubeReservedEntry {
    provider: Provider,
    vcpus: Vec<f64>,
    millicores: Vec<f64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct BandEntry {
    index: u8,
    aws_label: String,
    azure_label: String,
    monthly_interruption: f64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RestartEntry {
    node_acquire_minutes: f64,
    image_pull_minutes: f64,
    weight_load_minutes: f64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ServerDefault {
    engine: String,
    gpu_memory_utilization: f64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct CheckEntry {
    stale_after_days: i64,
    stale_after_days_by_figure: StaleEntry,
    low_utilization: f64,
    min_kv_cache_share: f64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct StaleEntry {
    on_demand: i64,
    reserved: i64,
    spot_price: i64,
    spot_band: i64,
    capacity_block: i64,
}

pub(super) fn load_assumptions(file: &Arc<SourceFile>) -> Result<Assumptions, CatalogError> {
    let a: AssumptionsFile = toml_file(file)?;
    check_review(file, &a)?;
    let kube_reserved_cpu = kube_reserved(file, &a)?;
    check_disks(file, &a)?;
    check_pins(file, &a)?;
    let precision_min_cc = precision(file, &a)?;
    if !(a.recommend.daemonset_cpu.is_finite() && a.recommend.daemonset_cpu >= 0.0) {
        return Err(invalid(
            file,
            0..0,
            "daemonset_cpu must be 0 or more".into(),
        ));
    }
    Ok(assumptions(a, kube_reserved_cpu, precision_min_cc))
}

/// The review's minimum days, trend days, headroom and consolidation target.
fn check_review(file: &Arc<SourceFile>, a: &AssumptionsFile) -> Result<(), CatalogError> {
    let r = &a.review;
    if !(r.min_days >= 1.0
        && r.min_trend_days >= 3
        && (0.0..=1.0).contains(&r.headroom)
        && r.consolidation_target > 0.0
        && r.consolidation_target <= 1.0)
    {
        return Err(invalid(
            file,
            0..0,
            "[review]: min_days >= 1, min_trend_days >= 3, headroom in 0..1 and consolidation_target in (0, 1] are required".to_owned(),
        ));
    }
    Ok(())
}

/// kube-reserved CPU per provider: a rising curve of (vCPUs, millicores) points.
fn kube_reserved(
    file: &Arc<SourceFile>,
    a: &AssumptionsFile,
) -> Result<IndexMap<Provider, Vec<(f64, f64)>>, CatalogError> {
    let mut kube_reserved_cpu = IndexMap::new();
    for k in &a.recommend.kube_reserved_cpu {
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
        let pts = k
            .vcpus
            .iter()
            .copied()
            .zip(k.millicores.iter().copied())
            .collect();
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
    Ok(kube_reserved_cpu)
}

/// The node disk's OS and images shares, in GiB.
fn check_disks(file: &Arc<SourceFile>, a: &AssumptionsFile) -> Result<(), CatalogError> {
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
    Ok(())
}

/// Pins reach rendered files: a driver version is digits and dots; an EKS AMI release is `v`
/// and a date, and each release version `<minor>.<patch>-<date>` of it.
fn check_pins(file: &Arc<SourceFile>, a: &AssumptionsFile) -> Result<(), CatalogError> {
    // Pins reach rendered files: a driver version is digits and dots; the EKS parameter is one
    // of AWS's public EKS AMI paths with the cluster's version as its one placeholder.
    let pins = &a.render.pins;
    let at = |name: &str| file.text.find(name).map_or(0..0, |i| i..i + name.len());
    let driver = &pins.gpu_driver_version;
    if driver.is_empty()
        || driver.len() > 32
        || !driver.chars().all(|c| c.is_ascii_digit() || c == '.')
    {
        return Err(invalid(
            file,
            at("gpu_driver_version"),
            "gpu_driver_version must be a driver version such as 595.91.07".into(),
        ));
    }
    // An AMI release is `v` and a date; a release version `<minor>.<patch>-<date>` of that
    // release, keyed by its Kubernetes minor.
    let date = |s: &str| s.len() == 8 && s.chars().all(|c| c.is_ascii_digit());
    let release = pins.eks_ami_release.strip_prefix('v').unwrap_or("");
    if !date(release) {
        return Err(invalid(
            file,
            at("eks_ami_release"),
            "eks_ami_release must be an AMI release such as v20260714".into(),
        ));
    }
    for (minor, version) in &pins.eks_release_versions {
        let ok = version.split_once('-').is_some_and(|(v, d)| {
            d == release
                && v.starts_with(&format!("{minor}."))
                && v.split('.').count() == 3
                && v.split('.')
                    .all(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()))
        });
        if !ok {
            return Err(invalid(
                file,
                at(version),
                format!("eks_release_versions: `{minor}` must map to a {minor}.<patch>-{release} release version"),
            ));
        }
    }
    Ok(())
}

/// The least compute capability each precision computes in.
fn precision(
    file: &Arc<SourceFile>,
    a: &AssumptionsFile,
) -> Result<IndexMap<String, (u32, u32)>, CatalogError> {
    let at = |name: &str| file.text.find(name).map_or(0..0, |i| i..i + name.len());
    let mut precision_min_cc = IndexMap::new();
    for (precision, cc) in &a.precision {
        let Some(v) = crate::catalog::parse_cc(cc) else {
            return Err(invalid(
                file,
                at(cc),
                format!("[precision] {precision}: `{cc}` is no compute capability (major.minor, e.g. 8.9)"),
            ));
        };
        precision_min_cc.insert(precision.clone(), v);
    }
    Ok(precision_min_cc)
}

fn assumptions(
    a: AssumptionsFile,
    kube_reserved_cpu: IndexMap<Provider, Vec<(f64, f64)>>,
    precision_min_cc: IndexMap<String, (u32, u32)>,
) -> Assumptions {
    Assumptions {
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
                (crate::catalog::Figure::OnDemand, s.on_demand),
                (crate::catalog::Figure::Reserved, s.reserved),
                (crate::catalog::Figure::Spot, s.spot_price),
                (crate::catalog::Figure::SpotBand, s.spot_band),
                (crate::catalog::Figure::CapacityBlock, s.capacity_block),
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
        user_facing_min_nodes: a.recommend.user_facing_min_nodes.max(1),
        node_disk_os_gib: a.render.node_disk_os_gib,
        node_disk_images_gib: a.render.node_disk_images_gib,
        gpu_driver_version: a.render.pins.gpu_driver_version,
        eks_ami_release: a.render.pins.eks_ami_release,
        eks_release_versions: a.render.pins.eks_release_versions,
        review_min_days: a.review.min_days,
        review_min_trend_days: a.review.min_trend_days,
        review_headroom: a.review.headroom,
        review_consolidation_target: a.review.consolidation_target,
        precision_min_cc,
    }
}
