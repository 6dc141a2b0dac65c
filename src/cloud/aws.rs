//! AWS: EKS managed node groups, EC2 pricing and the Spot Instance Advisor's bands.

use super::{BandRow, Profile, Render, TerraformFloors};
use crate::core::{Capacity, MigManager, Provider};

pub(super) const PROFILE: Profile = Profile {
    provider: Provider::Aws,
    name: "AWS",
    kubernetes: "EKS",
    h100_example: ("p5.48xlarge", "us-east-1"),
    is_region,
    capacity_block: true,
    // DescribeCapacityBlockOfferings, `CapacityDurationHours`: 1-day steps up to 14 days,
    // 7-day steps up to 182 days.
    block_steps: &[(336, 24), (4368, 168)],
    capacity_reservation: "EC2 On-Demand Capacity Reservation",
    reservation: "Reserved Instance",
    // EC2's `InstancePlatform` and tenancy of the prices; a regional Reserved Instance
    // applies in any zone of its region and holds no capacity.
    purchase: super::Purchase {
        platform: "Linux/UNIX",
        tenancy: Some("default"),
        reservation_scope: "region (any zone; no capacity held)",
        reservation_payment: "the lowest of the standard purchase options (no, partial or all upfront)",
    },
    embedded_reservations: Some("the Price List snapshot's standard before convertible, no upfront first"),
    prices_api: "the AWS Price List API",
    bands_live_only: false,
    bands_api: "the Spot Instance Advisor",
    band_label,
    spot_quota_family: None,
    subscription: false,
    managed_mig: false,
    default_mig_manager: MigManager::GpuOperator,
    spot_labels: &[],
    // EKS marks spot nodes with a label only; gpuplan's own taint keeps other pods off.
    spot_taints: &["gpuplan.io/spot=true:NoSchedule"],
    starter_plan: include_str!("../../templates/init/aws.toml"),
    render: Render {
        terraform_template: "terraform/aws.tf.hbs",
        terraform_embedded: include_str!("../../templates/render/terraform/aws.tf.hbs"),
        // The release whose argument names the template is written for.
        terraform_floors: TerraformFloors {
            baseline: "5.80",
            newer: &[(
                "efa_maximum_interfaces",
                "5.84",
                "hashicorp/terraform-provider-aws CHANGELOG 5.84.0: `efa_maximum_interfaces` on data.aws_ec2_instance_type",
            )],
        },
        os_disk_floor_gib: 0.0,
        efa: true,
        spot_autoscaled: false,
        driver_in_image: true,
        driver_note: "the EKS AL2023 NVIDIA AMI (ami_type AL2023_x86_64_NVIDIA) ships the driver and the container toolkit, so the operator installs neither",
        karpenter_template: "karpenter/aws.yaml.hbs",
        karpenter_embedded: include_str!("../../templates/render/karpenter/aws.yaml.hbs"),
        karpenter_node_class: "EC2NodeClass",
        karpenter_disk_gib: None,
        capacity_label: Some(eks_capacity_type),
    },
};

/// AWS region names are `area-direction-n`, or with a fourth part (`us-gov-west-1`); the
/// price lists also carry Local Zones and Wavelength locations.
fn is_region(r: &str) -> bool {
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

fn band_label(b: &BandRow) -> &str {
    &b.1
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
