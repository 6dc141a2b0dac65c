use super::{Cx, Rule};
use crate::core::MigManager;

declare_rule! {
    /// # GP016 aks-mig-mixed-profiles
    ///
    /// ## What it does
    /// On Azure, for a pool whose MIG AKS manages (its own `mig_manager`, else
    /// `cluster.mig_manager`, else AKS, the default there), flags a `mig_layout` that holds
    /// more than one MIG profile, or names a profile other than its `mig_profile`.
    ///
    /// ## Why is this bad?
    /// AKS sets one `gpu_instance` (MIG1g ... MIG7g) per node pool: every GPU in the pool gets
    /// the same uniform geometry. A mixed layout needs the GPU Operator's mig-manager with the
    /// mixed strategy; on AKS-managed MIG it simply cannot be expressed.
    ///
    /// ## Example
    /// ```toml
    /// [cluster]
    /// mig_manager = "aks"
    /// [[pool]]
    /// mig_layout = { "3g.40gb" = 1, "2g.20gb" = 2 }
    /// ```
    /// Use instead: one pool per profile (`mig_profile = "3g.40gb"`), or
    /// `mig_manager = "gpu-operator"` with mig-parted layouts.
    ///
    /// ## Source
    /// azurerm `kubernetes_cluster_node_pool.gpu_instance`; AKS MIG docs (reference §5).
    pub(crate) struct AksMigMixedProfiles { id: GP016, name: "aks-mig-mixed-profiles", severity: Error }
}

impl Rule for AksMigMixedProfiles {
    fn check(&self, cx: &mut Cx<'_>) {
        for pool in cx.plan.pools() {
            // The pool's own manager, else the cluster's, else AKS's on Azure (what recommend
            // and render assume there).
            let aks = crate::cloud::profile(cx.plan.provider()).managed_mig
                && cx.plan.pool_mig_manager(pool) == MigManager::Aks;
            if !aks {
                continue;
            }
            let layouts = pool.layouts();
            let Some((layout, _)) = layouts.first() else {
                continue;
            };
            let mut names: Vec<&str> = layouts
                .iter()
                .flat_map(|(l, _)| l.keys().map(String::as_str))
                .collect();
            if let Some(p) = &pool.mig_profile {
                names.push(p.get());
            }
            names.sort_unstable();
            names.dedup();
            if names.len() > 1 {
                cx.push(
                    cx.finding(layout.span(), format!("pool `{}` mixes MIG profiles {} but AKS manages MIG with one `gpu_instance` per node pool", pool.name.get(), names.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ")))
                        .label("several profiles")
                        .help("split into one pool per profile, or set `mig_manager = \"gpu-operator\"` on the pool (or the cluster)")
                        .pool(pool.name.get()),
                );
            }
        }
    }
}
