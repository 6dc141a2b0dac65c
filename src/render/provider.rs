//! What render writes differently per cloud, decided once per provider by an exhaustive
//! match: a third cloud is a compile error here, where before it silently got Azure's
//! Terraform. Every fact names the provider behaviour it follows.

use crate::core::{Capacity, Provider};

/// A node label `(key, value)` for a capacity type.
pub(crate) type CapacityLabel = fn(Capacity) -> (&'static str, &'static str);

/// One cloud's rendering facts.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Profile {
    pub provider: Provider,
    /// The Terraform template (`terraform/main.tf`).
    pub terraform: &'static super::Output_,
    /// The Terraform provider the template uses, whose version floor `floors` computes.
    pub terraform_provider: &'static str,
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
    /// The provider partitions MIG GPUs itself (AKS `gpu_instance`).
    pub managed_mig: bool,
    /// The disk range of Karpenter's node class (AKSNodeClass takes 30-2048 GB).
    pub karpenter_disk_gib: Option<(u32, u32)>,
    /// The label the provider sets on a managed node for its capacity type, if any.
    pub capacity_label: Option<CapacityLabel>,
}

impl Profile {
    /// The oldest Terraform provider release the rendered file works with: raised by
    /// `gpu_driver` where an AKS pool sets it, by `efa_maximum_interfaces` where an EKS pool
    /// attaches EFA.
    pub(crate) fn terraform_floor(&self, pools: &[super::model::PoolView]) -> String {
        let uses = |arg: &str| match self.provider {
            Provider::Azure => {
                arg == "gpu_driver" && pools.iter().any(|p| p.gpu_instance.is_none())
            }
            Provider::Aws => arg == "efa_maximum_interfaces" && pools.iter().any(|p| p.efa),
        };
        super::floors::floor(self.terraform_provider, uses)
    }

    /// The profile of `provider`.
    pub(crate) fn of(provider: Provider) -> Profile {
        match provider {
            Provider::Azure => Profile {
                provider,
                terraform: &super::AZURE,
                terraform_provider: "azurerm",
                os_disk_floor_gib: 128.0,
                efa: false,
                spot_autoscaled: true,
                driver_in_image: false,
                driver_note: "AKS pools set gpu_driver = \"None\" and the operator installs the driver and toolkit; pools with AKS-managed MIG (gpu_instance) keep AKS's driver, which the operator detects as pre-installed",
                managed_mig: true,
                karpenter_disk_gib: Some((30, 2048)),
                capacity_label: None,
            },
            Provider::Aws => Profile {
                provider,
                terraform: &super::AWS,
                terraform_provider: "aws",
                os_disk_floor_gib: 0.0,
                efa: true,
                spot_autoscaled: false,
                driver_in_image: true,
                driver_note: "the EKS AL2023 NVIDIA AMI (ami_type AL2023_x86_64_NVIDIA) ships the driver and the container toolkit, so the operator installs neither",
                managed_mig: false,
                karpenter_disk_gib: None,
                capacity_label: Some(eks_capacity_type),
            },
        }
    }
}

/// EKS labels every managed node `eks.amazonaws.com/capacityType`.
fn eks_capacity_type(c: Capacity) -> (&'static str, &'static str) {
    let value = match c {
        Capacity::Spot => "SPOT",
        Capacity::CapacityBlock => "CAPACITY_BLOCK",
        Capacity::OnDemand
        | Capacity::Reserved1y
        | Capacity::Reserved3y
        | Capacity::CapacityReservation => "ON_DEMAND",
    };
    ("eks.amazonaws.com/capacityType", value)
}

/// Karpenter's `karpenter.sh/capacity-type` for a capacity: reserved for capacity held for
/// the pool (an ODCR or a Capacity Block), on-demand for the billing-only reservations.
pub(crate) fn karpenter_capacity(c: Capacity) -> &'static str {
    match c {
        Capacity::Spot => "spot",
        Capacity::CapacityBlock | Capacity::CapacityReservation => "reserved",
        Capacity::OnDemand | Capacity::Reserved1y | Capacity::Reserved3y => "on-demand",
    }
}
