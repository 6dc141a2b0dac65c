//! The catalog's assumptions: the defaults and figures every decision rests on, each with
//! its source in `providers/assumptions.toml`.

use indexmap::IndexMap;

use crate::core::Provider;

/// A kind of figure the catalog dates, each with its own age limit (GP022).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Figure {
    OnDemand,
    Reserved,
    Spot,
    SpotBand,
    CapacityBlock,
}

impl Figure {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Figure::OnDemand => "on-demand price",
            Figure::Reserved => "reserved price",
            Figure::Spot => "spot price",
            Figure::SpotBand => "spot eviction band",
            Figure::CapacityBlock => "Capacity Block price",
        }
    }

    /// The price figure a capacity type is paid at ([`super::RegionPrices::listed`]).
    pub(crate) fn of(capacity: crate::core::Capacity) -> Figure {
        use crate::core::Capacity;
        match capacity {
            Capacity::OnDemand | Capacity::CapacityReservation => Figure::OnDemand,
            Capacity::Spot => Figure::Spot,
            Capacity::Reserved1y | Capacity::Reserved3y => Figure::Reserved,
            Capacity::CapacityBlock => Figure::CapacityBlock,
        }
    }
}

/// Planning assumptions from `providers/assumptions.toml`.
#[derive(Debug, Clone)]
pub struct Assumptions {
    /// Monthly interruption probability per band index.
    pub band_monthly_interruption: Vec<(u8, String, String, f64)>,
    pub node_acquire_minutes: f64,
    pub image_pull_minutes: f64,
    pub weight_load_minutes: f64,
    pub server_defaults: IndexMap<String, f64>,
    /// Age limit of a data file (GP022) for what has no per-figure limit.
    pub stale_after_days: i64,
    /// Age limit per kind of figure: spot moves daily, list prices rarely.
    pub stale_limits: IndexMap<Figure, i64>,
    pub low_utilization: f64,
    pub min_kv_cache_share: f64,
    /// vCPUs the per-node system DaemonSets request.
    pub daemonset_cpu: f64,
    /// The kubelet's kube-reserved CPU per provider: (host vCPUs, millicores) points.
    pub kube_reserved_cpu: IndexMap<Provider, Vec<(f64, f64)>>,
    /// Share of a node's RAM that pods can request.
    pub allocatable_memory_share: f64,
    /// Memory left free on a time-sliced GPU when setting per-instance caps.
    pub time_slicing_memory_headroom: f64,
    /// Compute share of a declared time-sliced or MPS workload that states none.
    pub time_slicing_default_share: f64,
    /// Nodes a pool serving user-facing work keeps at least (a plan may lower it per
    /// workload: `availability_floor`).
    pub user_facing_min_nodes: u32,
    /// Node disk: what the OS and kubelet take, GiB.
    pub node_disk_os_gib: f64,
    /// Node disk: room for the container images, GiB.
    pub node_disk_images_gib: f64,
    /// The NVIDIA driver the GPU Operator installs where it installs one.
    pub gpu_driver_version: String,
    /// The EKS AMI release nodes run (`v20260714`), and its release version per Kubernetes
    /// minor.
    pub eks_ami_release: String,
    pub eks_release_versions: IndexMap<String, String>,
    /// `[review]`: covered days below which nothing is proposed, and below which no trend is
    /// fitted; headroom above the projected peak; busy share an idle replica is sized to.
    pub review_min_days: f64,
    pub review_min_trend_days: usize,
    pub review_headroom: f64,
    pub review_consolidation_target: f64,
    /// `[precision]`: the lowest compute capability (major, minor) that computes in each
    /// weight precision, by the plan's spelling (`bf16`, `fp8`).
    pub precision_min_cc: IndexMap<String, (u32, u32)>,
}

impl Assumptions {
    /// The node disk, GiB, for a pool running models of `weights` GiB each: the OS, the
    /// images, every model cached once and room for a new version of the largest, rounded up
    /// to 10 GiB; at least `floor` (a provider's default disk).
    pub(crate) fn node_disk_gib(&self, weights: &[f64], floor: f64) -> u32 {
        let sum: f64 = weights.iter().sum();
        let largest = weights.iter().copied().fold(0.0, f64::max);
        let gib = self.node_disk_os_gib + self.node_disk_images_gib + sum + largest;
        // Up to a tier (128, 256, 512 ... GiB, Azure's premium disk sizes): a model added to
        // the plan changes the disk, which replaces an EKS node group and rotates an AKS pool,
        // only when it crosses a tier, not on every few GiB.
        let need = gib.max(floor).max(1.0);
        let mut tier = 128.0_f64;
        while tier < need && tier < f64::from(u32::MAX) {
            tier *= 2.0;
        }
        // Bounded in the loader; a plan's weights are bounded by its own validation.
        tier.min(f64::from(u32::MAX)) as u32
    }
}

impl Assumptions {
    /// How many days old a figure of this kind may be before GP022 flags it.
    pub fn stale_limit(&self, f: Figure) -> i64 {
        self.stale_limits
            .get(&f)
            .copied()
            .unwrap_or(self.stale_after_days)
    }

    /// The kubelet's kube-reserved CPU, in vCPUs, on a host of `vcpus` of `provider`: linear
    /// between the published points, the last segment's slope beyond them.
    pub(crate) fn kube_reserved_cpu(&self, provider: Provider, vcpus: f64) -> f64 {
        let Some(pts) = self.kube_reserved_cpu.get(&provider) else {
            return 0.0;
        };
        let seg = pts
            .windows(2)
            .position(|w| vcpus <= w[1].0)
            .unwrap_or(pts.len().saturating_sub(2));
        let ((x0, y0), (x1, y1)) = (pts[seg], pts[seg + 1]);
        (y0 + (vcpus - x0) * (y1 - y0) / (x1 - x0)).max(0.0) / 1000.0
    }
}
