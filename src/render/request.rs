//! What a pod of a workload asks for on a pool: a MIG profile's resource, or whole or shared
//! GPUs; and whether AKS partitions the pool's GPUs itself.

use crate::catalog::Catalog;
use crate::engine::recommend::{RecPool, Recommendation};
use crate::plan::Plan;

use super::model::gpus_of;

/// Whether AKS partitions the pool's GPUs itself (`gpu_instance`, the single strategy): the
/// GPU Operator's MIG manager must leave them be.
pub(crate) fn aks_mig(rec: &Recommendation, p: &RecPool) -> bool {
    p.mig_partitioner() == Some(crate::core::MigManager::Aks)
        && crate::cloud::profile(rec.provider).managed_mig
}

/// The extended resource a pod of `w` asks for on pool `p`, and how many: whole GPUs, one
/// time-sliced GPU, one MIG instance under AKS (single strategy: `nvidia.com/gpu`), or the
/// smallest profile of the pool's layouts that holds it (GPU Operator, mixed strategy).
pub(crate) fn gpu_request(
    plan: &Plan,
    catalog: &Catalog,
    p: &RecPool,
    w: &crate::plan::Workload,
    spec: Option<&crate::catalog::MigSpec>,
    aks_mig: bool,
) -> (String, f64) {
    if p.sharing.is_partitioned() && !aks_mig {
        if let Some(spec) = spec {
            let mut names: Vec<&String> = p
                .mig_layout
                .iter()
                .flat_map(|l| l.keys())
                .chain(p.mig_configs.iter().flat_map(|c| c.layout.keys()))
                .collect();
            names.sort();
            names.dedup();
            let profiles = names.iter().filter_map(|n| spec.profile(n));
            let need = crate::engine::memory::slice_need(w, catalog, spec, w.gpu_share());
            let chosen = crate::mig::requested(profiles, &need);
            if let Some(q) = chosen {
                return (format!("nvidia.com/mig-{}", q.name), 1.0);
            }
        }
    }
    let per = if p.sharing.is_partitioned() || p.time_slicing_replicas.is_some() {
        1.0
    } else {
        f64::from(gpus_of(plan, w.name.get()))
    };
    ("nvidia.com/gpu".to_owned(), per)
}
