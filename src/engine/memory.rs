//! How much GPU memory one replica has, and how much it needs.

use crate::catalog::{Catalog, GpuModel};
use crate::plan::raw::{Pool, Sharing, Workload};

/// The memory a replica can use, in GiB, and what it is (for messages).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Container {
    pub gib: f64,
    pub what: String,
}

/// GPU memory one replica needs inside its server's instance, GiB: the declared
/// `gpu_memory_gib`, else the weights plus `kv_cache_gib`; a served model that names no KV
/// cache keeps `check.min_kv_cache_share` of the instance free for it (GP002). The one figure
/// the recommender sizes with and the fit rules check.
pub(crate) fn need_in_instance(w: &Workload, catalog: &Catalog) -> Option<f64> {
    let need = w.memory_need_gib()?;
    if w.gpu_memory_gib.is_none() && w.kv_cache_gib().is_none() && server_cap(w, catalog).is_some()
    {
        let share = catalog.assumptions.min_kv_cache_share.clamp(0.0, 0.9);
        return Some(need / (1.0 - share));
    }
    Some(need)
}

/// The share of the memory it sees that a replica's server may take: its cap (explicit or the
/// engine default), 1 without a server.
pub(crate) fn usable_share(w: &Workload, catalog: &Catalog) -> f64 {
    server_cap(w, catalog).map_or(1.0, |(c, _)| c)
}

/// The memory cap each server on a GPU time-sliced `replicas` ways gets: the card less the
/// headroom, split evenly, rounded down to a hundredth (what `recommend` writes and GP001
/// checks).
pub(crate) fn time_sliced_cap(replicas: u32, headroom: f64) -> f64 {
    ((1.0 - headroom) / f64::from(replicas.max(1)) * 100.0 + 1e-9).floor() / 100.0
}

/// The per-instance memory cap an inference server applies, explicit or the engine default.
pub(crate) fn server_cap(w: &Workload, catalog: &Catalog) -> Option<(f64, bool)> {
    let s = w.server.as_ref()?;
    match &s.gpu_memory_utilization {
        Some(u) => Some((*u.get(), true)),
        None => catalog
            .server_default_cap(s.engine.get())
            .map(|c| (c, false)),
    }
}

/// Whether MIG profile `p` holds a replica: its memory, times the share `usable` of it the
/// replica's server may take, covers `need_gib`; and its compute slices cover
/// `compute_slices`. The one test the recommender (profile choice, the exact AKS
/// assignment), render (the resource a pod asks for) and the fit rules apply.
pub(crate) fn profile_holds(
    p: &crate::catalog::MigProfile,
    need_gib: Option<f64>,
    usable: f64,
    compute_slices: f64,
) -> bool {
    need_gib.is_none_or(|m| p.memory_gib * usable + 1e-9 >= m)
        && f64::from(p.compute) + 1e-9 >= compute_slices
}

/// Compute slices a replica needs of a GPU with `slices` of them: all for a replica of whole
/// GPUs, else its `share` of the GPU.
pub(crate) fn compute_slices_needed(slices: u8, share: f64, whole: bool) -> f64 {
    if whole {
        f64::from(slices)
    } else {
        share * f64::from(slices)
    }
}

/// Memory visible to one replica of `w` on `pool` (GPU model `gpu`): a MIG slice, a whole GPU
/// (times GPUs per replica), shared with other time-sliced instances. `usable` is the share
/// of it the replica's server may take (its cap, 1 without one).
pub(crate) fn container(
    w: &Workload,
    pool: &Pool,
    gpu: &GpuModel,
    usable: f64,
) -> Option<Container> {
    match pool.sharing() {
        Sharing::Mig => {
            let mig = gpu.mig.as_ref()?;
            let profile = pool
                .mig_profile
                .as_ref()
                .map(|p| p.get().clone())
                .or_else(|| {
                    // Mixed layouts (the GPU Operator's mixed strategy): a replica asks for
                    // one profile's resource, so it gets the smallest profile of the pool that
                    // holds it, or the largest when none does.
                    let mut ps: Vec<_> = pool
                        .layouts()
                        .into_iter()
                        .flat_map(|(l, _)| l.keys())
                        .filter_map(|k| mig.profile(k))
                        .collect();
                    ps.sort_by(|a, b| a.memory_gib.total_cmp(&b.memory_gib));
                    let need = w.memory_need_gib();
                    // Memory decides here: GP021 compares it, and a slice too small in
                    // compute is still the one the replica would be given.
                    ps.iter()
                        .find(|p| profile_holds(p, need, usable, 0.0))
                        .or(ps.last())
                        .map(|p| p.name.clone())
                })?;
            let p = mig.profile(&profile)?;
            Some(Container {
                gib: p.memory_gib,
                what: format!(
                    "a `{}` slice ({} GiB)",
                    p.name,
                    crate::core::num(p.memory_gib)
                ),
            })
        }
        _ => {
            let n = w.gpus().max(1) as f64;
            Some(Container {
                gib: gpu.memory_gib * n,
                what: if n > 1.0 {
                    format!(
                        "{n} x {} ({} GiB)",
                        gpu.name,
                        crate::core::num(gpu.memory_gib * n)
                    )
                } else {
                    format!(
                        "one {} ({} GiB)",
                        gpu.name,
                        crate::core::num(gpu.memory_gib)
                    )
                },
            })
        }
    }
}
