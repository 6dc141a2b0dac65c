//! Which plan pool a node is of, by the names render gave its node pools (`engine::names`).

use std::collections::BTreeMap;

use crate::catalog::Catalog;
use crate::engine::names::AKS_NAME_MAX;
use crate::plan::Plan;

/// Node labels that name a node's pool, in the `label_` form kube-state-metrics exports:
/// gpuplan's own first (render puts `gpuplan.io/pool` on every node it creates).
pub(crate) const POOL_LABELS: [&str; 5] = [
    "label_gpuplan_io_pool",
    "label_kubernetes_azure_com_agentpool",
    "label_agentpool",
    "label_eks_amazonaws_com_nodegroup",
    "label_karpenter_sh_nodepool",
];

/// A node pool label against a plan pool name: equal ignoring case and anything but letters
/// and digits, or the pool's first [`AKS_NAME_MAX`] of those (a pool named by hand in AKS's
/// length).
pub(crate) fn pool_matches(label: &str, pool: &str) -> bool {
    let norm = |s: &str| {
        s.chars()
            .filter(char::is_ascii_alphanumeric)
            .map(|c| c.to_ascii_lowercase())
            .collect::<String>()
    };
    let (l, p) = (norm(label), norm(pool));
    !l.is_empty() && (l == p || (l.len() == AKS_NAME_MAX && p.starts_with(&l)))
}

/// The plan pool a node pool label names.
pub(crate) fn plan_pool<'p>(plan: &'p Plan, label: Option<&str>) -> Option<&'p crate::plan::Pool> {
    let l = label?;
    plan.pools()
        .iter()
        .map(|p| p.get())
        .find(|p| pool_matches(l, p.name.get()))
}

/// Which plan pool a node's pool labels name, as render named what it created
/// (`engine::names`): `gpuplan.io/pool` itself, else the AKS agent pool, EKS node group or
/// Karpenter NodePool name render gives each declared pool (what `render --declared`
/// creates), else a label that reads as a pool's name.
pub(crate) struct PoolNames {
    by_name: BTreeMap<String, String>,
}

impl PoolNames {
    pub(crate) fn new(plan: &Plan, catalog: &Catalog) -> PoolNames {
        let mut by_name = BTreeMap::new();
        if !plan.pools().is_empty() {
            let declared = crate::engine::recommend::declared(plan, catalog);
            for (node_pool, pool) in crate::engine::names::node_pool_names(&declared.pools) {
                by_name.entry(node_pool).or_insert(pool);
            }
        }
        PoolNames { by_name }
    }

    pub(crate) fn pool<'p>(
        &self,
        plan: &'p Plan,
        labels: &BTreeMap<String, String>,
    ) -> Option<&'p crate::plan::Pool> {
        // A node is never of a pool of another size: the sizes of a pool of several share its
        // `gpuplan.io/pool` label, and the node group or agent pool label then tells them apart.
        let size = labels
            .get("label_node_kubernetes_io_instance_type")
            .filter(|v| !v.is_empty());
        let fits = |p: &crate::plan::Pool| size.is_none_or(|s| p.sku.get().eq_ignore_ascii_case(s));
        for k in POOL_LABELS {
            let Some(v) = labels.get(k).filter(|v| !v.is_empty()) else {
                continue;
            };
            let named = self.by_name.get(v).map(String::as_str).unwrap_or(v);
            if let Some(p) = plan.pool(named).filter(|p| fits(p.get())) {
                return Some(p.get());
            }
        }
        POOL_LABELS
            .iter()
            .find_map(|k| labels.get(*k))
            .and_then(|l| plan_pool(plan, Some(l)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_pool_labels_match_plan_pools_as_aks_shortens_them() {
        assert!(pool_matches("notebooks", "notebooks"));
        assert!(pool_matches("servemig", "serve-mig"));
        // AKS keeps 12 lowercase letters and digits
        assert!(pool_matches("inferencea10", "inference-a100-spot"));
        assert!(!pool_matches("inference", "inference-a100-spot"));
        assert!(!pool_matches("", "x"));
        assert!(!pool_matches("gpu", "cpu"));
    }
}
