//! Azure: AKS node pools, the Retail Prices API, Resource Graph's spot eviction rates.

use super::{BandRow, Profile, Render, TerraformFloors};
use crate::core::{MigManager, Provider};

pub(super) const PROFILE: Profile = Profile {
    provider: Provider::Azure,
    name: "Azure",
    kubernetes: "AKS",
    h100_example: ("Standard_ND96isr_H100_v5", "eastus"),
    is_region,
    capacity_block: false,
    block_steps: &[],
    capacity_reservation: "Azure capacity reservation group",
    reservation: "Azure reservation",
    // Azure reservations have no tenancy; the shared scope applies the discount to every
    // subscription of the billing scope, and a term costs the same paid upfront or monthly.
    purchase: super::Purchase {
        platform: "Linux",
        tenancy: None,
        reservation_scope: "shared (every subscription of the billing scope)",
        reservation_payment: "upfront or monthly, the same total (the hourly rate is the term's price spread over its hours)",
    },
    embedded_reservations: None,
    prices_api: "the Retail Prices API",
    bands_live_only: true,
    bands_api: "SpotResources",
    band_label,
    // One regional pool for all Spot/Low-priority vCPUs.
    spot_quota_family: Some("lowPriorityCores"),
    subscription: true,
    managed_mig: true,
    default_mig_manager: MigManager::Aks,
    // AKS puts this label and taint on every spot node.
    spot_labels: &[("kubernetes.azure.com/scalesetpriority", "spot")],
    spot_taints: &["kubernetes.azure.com/scalesetpriority=spot:NoSchedule"],
    starter_plan: include_str!("../../templates/init/azure.toml"),
    render: Render {
        terraform_template: "terraform/azure.tf.hbs",
        terraform_embedded: include_str!("../../templates/render/terraform/azure.tf.hbs"),
        // 4.0 has the 4.x names (`auto_scaling_enabled`).
        terraform_floors: TerraformFloors {
            baseline: "4.0",
            newer: &[(
                "gpu_driver",
                "4.40",
                "hashicorp/terraform-provider-azurerm CHANGELOG 4.40.0: `gpu_driver` on azurerm_kubernetes_cluster_node_pool",
            )],
        },
        os_disk_floor_gib: 128.0,
        efa: false,
        spot_autoscaled: true,
        driver_in_image: false,
        driver_note: "AKS pools set gpu_driver = \"None\" and the operator installs the driver and toolkit; pools with AKS-managed MIG (gpu_instance) keep AKS's driver, and SR-IOV vGPU pools (NVadsA10 v5, NC RTX PRO 6000 BSE v6, NC A10 v4) set gpu_driver = \"Install\" for AKS's GRID guest driver (the operator's data-centre driver does not run in a vGPU guest); the operator detects either as pre-installed",
        karpenter_template: "karpenter/azure.yaml.hbs",
        karpenter_embedded: include_str!("../../templates/render/karpenter/azure.yaml.hbs"),
        karpenter_node_class: "AKSNodeClass (node auto-provisioning)",
        karpenter_disk_gib: Some((30, 2048)),
        capacity_label: None,
    },
};

/// Azure region names are lowercase letters and digits (`eastus`, `westus3`).
fn is_region(r: &str) -> bool {
    !r.is_empty()
        && r.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
}

fn band_label(b: &BandRow) -> &str {
    &b.2
}
