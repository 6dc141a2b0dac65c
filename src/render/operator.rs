//! What the NVIDIA GPU Operator chart needs to run on the nodes gpuplan makes, read from the
//! chart and its controllers rather than from its values schema alone:
//!
//! - Its operand DaemonSets (driver, toolkit, device plugin, GFD, MIG manager, DCGM exporter,
//!   validator) take `daemonsets.tolerations`, and NFD's worker, which labels the nodes the
//!   operator then selects, takes `node-feature-discovery.worker.tolerations`. The chart's
//!   defaults tolerate only `nvidia.com/gpu` (values.yaml), and Helm replaces a list rather
//!   than merging it, so the rendered lists repeat the defaults and add every taint gpuplan
//!   puts on a GPU node, each by key, value and effect: other nodes' taints keep meaning.
//! - With `migManager.enabled`, `controllers/nodelabeling_controller.go` labels a MIG-capable
//!   node that has no `nvidia.com/mig.config` label with the default config (`all-disabled`),
//!   and the MIG manager then applies it: on AKS that tears down the instances `gpu_instance`
//!   created. Where every MIG pool is AKS-managed the manager is disabled; where AKS and
//!   operator MIG pools share a cluster, each AKS pool is labelled with a mig-parted config
//!   that is exactly its AKS geometry, so applying it changes nothing.

use super::mig::{MigConfigView, MigEntryView, ProfileCount};
use super::model::{PoolView, TaintView};

/// Every distinct taint of the rendered GPU node pools, in a stable order.
pub(crate) fn operand_tolerations(pools: &[PoolView]) -> Vec<TaintView> {
    let mut out: Vec<TaintView> = Vec::new();
    for t in pools.iter().flat_map(|p| &p.taints) {
        // The chart's own `nvidia.com/gpu` toleration (operator Exists) covers these already.
        if t.key == "nvidia.com/gpu" {
            continue;
        }
        if !out.iter().any(|o| o.spec == t.spec) {
            out.push(t.clone());
        }
    }
    out.sort_by(|a, b| a.spec.cmp(&b.spec));
    out
}

/// The mig-parted config that is exactly an AKS `gpu_instance` geometry: every GPU of the
/// node split into `count` instances of `profile`, as AKS creates them.
pub(crate) fn aks_geometry(profile: &str, count: u32) -> MigConfigView {
    MigConfigView {
        name: format!("gpuplan-aks-{profile}-x{count}"),
        entries: vec![MigEntryView {
            devices: "all".into(),
            devices_yaml: "all".into(),
            enabled: true,
            profiles: vec![ProfileCount {
                profile: profile.to_owned(),
                count,
            }],
        }],
    }
}

/// Whether the MIG manager runs, and the sentence the rendered files say about it.
pub(crate) fn mig_manager(any_aks_mig: bool, any_operator_mig: bool) -> (bool, &'static str) {
    match (any_aks_mig, any_operator_mig) {
        (true, false) => (
            false,
            "disabled (migManager.enabled: false): every MIG pool is AKS-managed (gpu_instance), and an enabled MIG manager labels a MIG node without nvidia.com/mig.config as all-disabled and resets the instances AKS created (gpu-operator controllers/nodelabeling_controller.go)",
        ),
        (true, true) => (
            true,
            "enabled for the GPU Operator MIG pools; each AKS-managed MIG pool is labelled with a mig-parted config that is exactly its AKS geometry (gpuplan-aks-PROFILE-xN), so the MIG manager keeps the instances AKS created",
        ),
        (false, true) => (
            true,
            "enabled: each GPU Operator MIG node pool is labelled with its own mig-parted config",
        ),
        (false, false) => (
            true,
            "enabled at the chart default; no pool uses MIG, so it leaves every GPU unpartitioned (all-disabled)",
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aks_only_mig_disables_the_manager_and_a_mix_keeps_aks_geometry() {
        assert!(!mig_manager(true, false).0);
        assert!(mig_manager(true, true).0);
        let c = aks_geometry("3g.40gb", 2);
        assert_eq!(c.name, "gpuplan-aks-3g.40gb-x2");
        assert_eq!(c.entries[0].profiles[0].count, 2);
        assert!(c.entries[0].enabled && c.entries[0].devices == "all");
    }
}
