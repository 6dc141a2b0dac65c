//! One profile per cloud: every fact in which gpuplan's clouds differ, as data, so the code
//! that acts on a fact reads it here rather than asking which cloud it is. A cloud's profile
//! names its Terraform template and `gpuplan init`'s starter plan too. A third cloud is a file
//! in this folder and a line in [`profile`], which a new `Provider` variant makes a compile
//! error until it is written.
//!
//! What is behaviour rather than fact per cloud lives in its own file within the stage it
//! belongs to, picked by one exhaustive match there (the same compile error points at it):
//! the catalog's readers (`catalog/load/{azure,aws}.rs`, picked in `catalog::load`) and the
//! live clients and refresh planners (`live/{azure,aws}/`, picked in `live::refresh`). The
//! stages sit on layers (`tests/all/layers.rs`): this file is below the catalog, which is
//! below the live clients, so a cloud's readers cannot sit here beside its facts.

mod aws;
mod azure;

use crate::core::{Capacity, MigManager, Provider};

/// The profile of `provider`.
pub fn profile(provider: Provider) -> &'static Profile {
    match provider {
        Provider::Azure => &azure::PROFILE,
        Provider::Aws => &aws::PROFILE,
    }
}

/// One row of the spot eviction bands (`providers/assumptions.toml`): its index, the AWS
/// Spot Instance Advisor's label, Azure's eviction-rate label, and the monthly interruption.
pub type BandRow = (u8, String, String, f64);

/// One cloud's facts.
#[derive(Debug)]
pub struct Profile {
    pub provider: Provider,
    /// How the cloud is named in text.
    pub name: &'static str,
    /// Its managed Kubernetes service, as text names it.
    pub kubernetes: &'static str,
    /// Its 8 x H100 size and a region that sells it, quoted with today's prices where
    /// `explain recommend` states the spot break-even.
    pub h100_example: (&'static str, &'static str),
    /// Whether a name is one of the cloud's region names (`eastus`, `us-east-1`): the price
    /// lists also carry locations that are not regions node pools run in.
    pub is_region: fn(&str) -> bool,
    /// The cloud sells Capacity Blocks for ML (`capacity = "capacity-block"`): GPU nodes
    /// bought for a block of days at a block price.
    pub capacity_block: bool,
    /// The lengths a Capacity Block is sold in, shortest first: `(up to hours, step hours)`
    /// segments, each continuing where the one before ended.
    pub block_steps: &'static [(u32, u32)],
    /// The product a capacity reservation is (it holds nodes for a pool).
    pub capacity_reservation: &'static str,
    /// The product a reserved price buys.
    pub reservation: &'static str,
    /// How a purchase of it is filed (the purchase list): the operating system its prices
    /// are for, its tenancy, a reservation's scope, and how a reservation is paid where the
    /// offering does not say.
    pub purchase: Purchase,
    /// How the embedded reservation rates were chosen among a type's offerings; `None`: none
    /// are embedded, they come only from a live refresh (Azure's Retail Prices API), so a
    /// missing one is unknown rather than not sold.
    pub embedded_reservations: Option<&'static str>,
    /// Where a live refresh reads prices, reservation prices among them.
    pub prices_api: &'static str,
    /// Spot eviction bands come only from a live refresh; a missing one is unknown.
    pub bands_live_only: bool,
    /// Where a live refresh reads eviction bands.
    pub bands_api: &'static str,
    /// The band's label in the cloud's own words.
    pub band_label: fn(&BandRow) -> &str,
    /// The quota family spot vCPUs draw on when a SKU names none of its own; `None`: the
    /// SKU's own family.
    pub spot_quota_family: Option<&'static str>,
    /// The plan may name the account (`[plan] subscription`); otherwise the credential
    /// chain picks it.
    pub subscription: bool,
    /// The provider partitions MIG GPUs itself (AKS `gpu_instance`), one profile per pool.
    pub managed_mig: bool,
    /// Who partitions MIG GPUs when the plan does not say.
    pub default_mig_manager: MigManager,
    /// Labels and taints the provider puts on every spot node; the pool must declare them
    /// too, or its Terraform shows a diff on every plan.
    pub spot_labels: &'static [(&'static str, &'static str)],
    pub spot_taints: &'static [&'static str],
    /// `gpuplan init`'s commented starter plan (`templates/init/`).
    pub starter_plan: &'static str,
    /// How render writes the cloud's pools.
    pub render: Render,
}

impl Profile {
    /// Reservation prices come only from a live refresh: a missing one is unknown.
    pub fn reservations_live_only(&self) -> bool {
        self.embedded_reservations.is_none()
    }

    /// The shortest Capacity Block the cloud sells that covers `hours` of work, in hours
    /// (EC2: 24, 48, … 336, then 504, 672, … 4,368); `None` where it sells none that long.
    pub fn sold_block(&self, hours: f64) -> Option<f64> {
        let mut from = 0u32;
        for &(upto, step) in self.block_steps {
            let steps = ((hours - f64::from(from)) / f64::from(step) - 1e-9)
                .ceil()
                .max(1.0);
            let length = f64::from(from) + steps * f64::from(step);
            if length <= f64::from(upto) {
                return Some(length);
            }
            from = upto;
        }
        None
    }

    /// Whether `hours` is a length the cloud sells a Capacity Block for.
    pub fn sells_block(&self, hours: f64) -> bool {
        self.sold_block(hours) == Some(hours)
    }
}

/// What render writes differently per cloud. Every fact names the provider behaviour it
/// follows.
#[derive(Debug)]
pub struct Render {
    /// The Terraform template: its name under `templates/render/` (what `--templates`
    /// overrides) and its embedded text.
    pub terraform_template: &'static str,
    pub terraform_embedded: &'static str,
    /// The provider releases the rendered file's arguments need (`render::floors`).
    pub terraform_floors: TerraformFloors,
    /// The OS disk a node starts from (GiB): AKS's default is 128 GB; EKS's 20 GiB default
    /// is below the formula's own floor.
    pub os_disk_floor_gib: f64,
    /// Gangs on instance types with EFA get EFA interfaces (EKS launch templates).
    pub efa: bool,
    /// A spot pool is always autoscaled: AKS deletes an evicted node
    /// (`eviction_policy = "Delete"`) and only the cluster autoscaler brings it back.
    pub spot_autoscaled: bool,
    /// The node image ships the NVIDIA driver and container toolkit (EKS's AL2023 NVIDIA
    /// AMI), so the GPU Operator installs neither.
    pub driver_in_image: bool,
    pub driver_note: &'static str,
    /// Karpenter's NodePools with the cloud's node class: the template's name under
    /// `templates/render/` (what `--templates` overrides) and its embedded text, and the node
    /// class as the rendered README names it.
    pub karpenter_template: &'static str,
    pub karpenter_embedded: &'static str,
    pub karpenter_node_class: &'static str,
    /// The disk range of Karpenter's node class (AKSNodeClass takes 30-2048 GB).
    pub karpenter_disk_gib: Option<(u32, u32)>,
    /// The label the provider sets on a managed node for its capacity type, if any.
    pub capacity_label: Option<CapacityLabel>,
}

/// The facts of a cloud's purchases that a finance team files with each line.
#[derive(Debug)]
pub struct Purchase {
    /// The operating system the catalog's prices are for, as the purchase names it.
    pub platform: &'static str,
    /// The tenancy the prices are for; `None` where the cloud's purchase has none.
    pub tenancy: Option<&'static str>,
    /// Where a reservation applies, as gpuplan recommends buying it.
    pub reservation_scope: &'static str,
    /// How a reservation is paid where its offering names no upfront option.
    pub reservation_payment: &'static str,
}

/// A node label `(key, value)` for a capacity type.
pub type CapacityLabel = fn(Capacity) -> (&'static str, &'static str);

/// The oldest Terraform provider release a rendered file works with: `baseline`, the release
/// whose argument names the template is written for, raised by each newer argument the
/// rendered file uses, so `terraform init` never picks a provider that rejects the file.
#[derive(Debug)]
pub struct TerraformFloors {
    pub baseline: &'static str,
    /// `(argument as the file spells it, first release with it, source)`.
    pub newer: &'static [(&'static str, &'static str, &'static str)],
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A cloud gpuplan does not know yet is one more profile: every fact in which clouds
    /// differ is a field of it, so one written for GKE compiles and answers what render, the
    /// catalog and the reports ask, without touching any stage. (`Provider::Aws` stands in
    /// for the variant the registry line would add; its templates are the folder's new files.)
    #[test]
    fn a_new_cloud_is_one_profile() {
        fn is_region(r: &str) -> bool {
            r.split('-').count() == 2
        }
        fn band_label(b: &BandRow) -> &str {
            &b.1
        }
        static GKE: Profile = Profile {
            provider: Provider::Aws,
            name: "GCP",
            kubernetes: "GKE",
            h100_example: ("a3-highgpu-8g", "us-central1"),
            is_region,
            capacity_block: false,
            block_steps: &[],
            capacity_reservation: "Compute Engine reservation",
            reservation: "committed use discount",
            purchase: Purchase {
                platform: "Linux",
                tenancy: None,
                reservation_scope: "project",
                reservation_payment: "monthly",
            },
            embedded_reservations: None,
            prices_api: "the Cloud Billing Catalog API",
            bands_live_only: true,
            bands_api: "none",
            band_label,
            spot_quota_family: Some("PREEMPTIBLE_NVIDIA_H100_GPUS"),
            subscription: true,
            managed_mig: true,
            default_mig_manager: MigManager::Aks,
            spot_labels: &[("cloud.google.com/gke-spot", "true")],
            spot_taints: &[],
            starter_plan: "version = 1\n",
            render: Render {
                terraform_template: "terraform/gcp.tf.hbs",
                terraform_embedded: "",
                terraform_floors: TerraformFloors {
                    baseline: "6.0",
                    newer: &[],
                },
                os_disk_floor_gib: 100.0,
                efa: false,
                spot_autoscaled: true,
                driver_in_image: false,
                driver_note: "",
                karpenter_template: "karpenter/gcp.yaml.hbs",
                karpenter_embedded: "",
                karpenter_node_class: "none",
                karpenter_disk_gib: None,
                capacity_label: None,
            },
        };
        assert!(GKE.reservations_live_only());
        assert!((GKE.is_region)("us-central1") && !(GKE.is_region)("us-central1-a"));
        assert_eq!(GKE.sold_block(24.0), None);
    }

    #[test]
    fn every_cloud_has_its_own_profile() {
        for p in Provider::ALL {
            assert_eq!(profile(p).provider, p);
        }
    }

    /// Region names, not the Local Zones and Wavelength zones the price lists carry beside
    /// them (AWS `us-east-1-atl-1`), nor display names (Azure's `East US`).
    #[test]
    fn region_names_are_told_from_zones_and_display_names() {
        let aws = profile(Provider::Aws).is_region;
        assert!(aws("us-east-1") && aws("us-gov-west-1") && aws("ap-southeast-2"));
        assert!(!aws("us-east-1-atl-1") && !aws("us-east-1-wl1-bos-wlz-1") && !aws("eastus"));
        let azure = profile(Provider::Azure).is_region;
        assert!(azure("eastus") && azure("westus3"));
        assert!(!azure("East US") && !azure("") && !azure("us-east-1"));
    }

    /// DescribeCapacityBlockOfferings, `CapacityDurationHours`: 1-day steps up to 14 days,
    /// 7-day steps up to 182 days.
    #[test]
    fn capacity_blocks_come_in_the_lengths_ec2_sells() {
        let aws = profile(Provider::Aws);
        for (work, block) in [
            (1.0, Some(24.0)),
            (24.0, Some(24.0)),
            (300.0, Some(312.0)),
            (336.0, Some(336.0)),
            (336.5, Some(504.0)),
            (400.0, Some(504.0)),
            (730.0, Some(840.0)),
            (4368.0, Some(4368.0)),
            (4369.0, None),
        ] {
            assert_eq!(aws.sold_block(work), block, "{work} h");
        }
        assert!(aws.sells_block(312.0) && !aws.sells_block(300.0) && !aws.sells_block(400.0));
        assert_eq!(profile(Provider::Azure).sold_block(24.0), None);
    }
}
