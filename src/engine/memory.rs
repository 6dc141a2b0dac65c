//! How much GPU memory one replica has, and how much it needs.

use crate::catalog::{Catalog, GpuModel};
use crate::core::Sharing;
use crate::plan::{Pool, Workload};

/// The memory a replica can use, in GiB, and what holds it (`report::why` words it for the
/// fit rules' messages).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Container {
    pub gib: f64,
    pub what: Holder,
}

/// What holds a replica's memory.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Holder {
    /// A MIG slice of `profile`, `gib` GiB.
    Slice { profile: String, gib: f64 },
    /// `count` whole GPUs of `gpu`, `gib` GiB each.
    Gpus { count: f64, gpu: String, gib: f64 },
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

/// The share of one GPU a replica asks for: its `gpu_fraction`; for a replica of one GPU that
/// time-shares, its stated use (or the default share), or under a shared server its stated
/// use (a server is sized by memory too: `server_share`); else its whole GPUs.
pub(crate) fn replica_share(w: &Workload, catalog: &Catalog) -> f64 {
    let gpus = u32::try_from(w.gpus().max(0)).unwrap_or(0);
    match (&w.gpu_fraction, w.sharing()) {
        (Some(f), _) => *f.get(),
        // A whole-GPU replica that agrees to time-share lends what it does not use; one that
        // states no use gets the stated default share (time-slicing and MPS only: a shared
        // server is sized by memory).
        (None, Sharing::TimeSlicing | Sharing::Mps) if gpus <= 1 => w
            .utilization()
            .unwrap_or(catalog.assumptions.time_slicing_default_share)
            .clamp(0.01, 1.0),
        (None, Sharing::SharedServer) if gpus <= 1 => {
            w.utilization().unwrap_or(1.0).clamp(0.01, 1.0)
        }
        // Whole GPUs: a dedicated or MIG replica, or one of several GPUs whatever its mode.
        (
            None,
            Sharing::Dedicated
            | Sharing::Mig
            | Sharing::TimeSlicing
            | Sharing::Mps
            | Sharing::SharedServer,
        ) => f64::from(gpus.max(1)),
    }
}

/// The share of one GPU a replica hosted in a shared inference server takes: its `share`, or
/// more where its memory needs more of what the server's cap (`usable`) leaves of the card.
/// `None` where the memory does not fit one card at all. The recommender's fit and GP034's
/// count both read it.
pub(crate) fn server_share(
    share: f64,
    memory_need: Option<f64>,
    usable: f64,
    gpu: &crate::catalog::GpuModel,
) -> Option<f64> {
    let offered = gpu.memory_gib * usable;
    match memory_need {
        Some(m) if m > offered + 1e-9 => None,
        need => Some(share.min(1.0).max(need.map_or(0.0, |m| m / offered))),
    }
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

/// Equal time-sliced shares per GPU that keep each replica's compute `share` and its
/// `memory` (GiB, where it needs any) on a `card_gib` card: the most whose rounded
/// per-instance cap still holds it, never so many that a cap rounds to 0 (no server starts
/// with that); 1 where the card cannot be shared. The one rule for `recommend`'s fit and the
/// review's right-size advice.
pub(crate) fn time_slice_replicas(
    share: f64,
    memory: Option<f64>,
    card_gib: f64,
    headroom: f64,
) -> u32 {
    let most = ((1.0 - headroom) * 100.0 + 1e-9).floor().max(1.0);
    let by_compute = (1.0 / share.max(1e-6) + 1e-9).floor().clamp(1.0, most) as u32;
    let Some(m) = memory else {
        return by_compute;
    };
    let mut n = by_compute;
    while n > 1 && time_sliced_cap(n, headroom) * card_gib + 1e-9 < m {
        n -= 1;
    }
    n
}

/// A weight precision a GPU does not compute in: the workload's model precision, the compute
/// capability it needs (`[precision]` in providers/assumptions.toml) and the GPU's.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct PrecisionGap {
    pub precision: &'static str,
    pub needs: (u32, u32),
    pub has: (u32, u32),
}

/// Whether `gpu` lacks the precision of `w`'s model: `None` when it has it, or when either
/// is unknown (no model, a GPU with no compute capability in the catalog).
pub(crate) fn precision_gap(
    w: &Workload,
    gpu: &GpuModel,
    catalog: &Catalog,
) -> Option<PrecisionGap> {
    let precision = w.model.as_ref()?.precision.get().as_str();
    let needs = *catalog.assumptions.precision_min_cc.get(precision)?;
    let has = gpu.cc()?;
    (has < needs).then_some(PrecisionGap {
        precision,
        needs,
        has,
    })
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

/// What one replica of `w` using `share` of a GPU (1 or more: whole GPUs) needs of a MIG
/// instance on `spec`: the input of `mig::choose` wherever a workload is fitted to a slice
/// outside the recommender (render's resource request, the review's right-size).
pub(crate) fn slice_need(
    w: &Workload,
    catalog: &Catalog,
    spec: &crate::catalog::MigSpec,
    share: f64,
) -> crate::mig::SliceNeed {
    crate::mig::SliceNeed::new(
        spec,
        need_in_instance(w, catalog),
        usable_share(w, catalog),
        share.min(1.0),
        share >= 1.0,
    )
}

/// Memory visible to one replica of `w` on `pool` (GPU model `gpu`): a MIG slice, a whole GPU
/// (times GPUs per replica), shared with other time-sliced instances. On mixed MIG layouts
/// it is the slice render makes its pods ask for (`mig::requested`).
pub(crate) fn container(
    w: &Workload,
    pool: &Pool,
    gpu: &GpuModel,
    catalog: &Catalog,
) -> Option<Container> {
    match pool.sharing() {
        Sharing::Mig => {
            let mig = gpu.mig.as_ref()?;
            let profile = pool
                .mig_profile
                .as_ref()
                .map(|p| p.get().clone())
                .or_else(|| {
                    // Mixed layouts (the GPU Operator's mixed strategy): the profile its
                    // pods ask for, the one render requests.
                    let layouts = pool.layouts();
                    let ps = layouts
                        .iter()
                        .flat_map(|(l, _)| l.keys())
                        .filter_map(|k| mig.profile(k));
                    crate::mig::requested(ps, &slice_need(w, catalog, mig, w.gpu_share()))
                        .map(|p| p.name.clone())
                })?;
            let p = mig.profile(&profile)?;
            Some(Container {
                gib: p.memory_gib,
                what: Holder::Slice {
                    profile: p.name.clone(),
                    gib: p.memory_gib,
                },
            })
        }
        Sharing::Dedicated | Sharing::TimeSlicing | Sharing::Mps | Sharing::SharedServer => {
            let n = w.gpus().max(1) as f64;
            Some(Container {
                gib: gpu.memory_gib * n,
                what: Holder::Gpus {
                    count: n,
                    gpu: gpu.name.clone(),
                    gib: gpu.memory_gib,
                },
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{time_slice_replicas, time_sliced_cap};

    /// By hand, with the default 5% headroom: a replica using 0.3 of a GPU gets 3 shares by
    /// compute; on a 16 GiB card a 3-way cap is 0.31 (4.96 GiB) and a 2-way one 0.47 (7.52 GiB),
    /// so a 7 GiB replica gets 2 and an 8 GiB one none; 0.6 of a GPU is no share at all (two
    /// replicas would each get half); a tiny share stops at 95 ways, where a cap is 0.01.
    #[test]
    fn time_slices_keep_compute_and_memory() {
        assert_eq!(time_sliced_cap(3, 0.05), 0.31);
        assert_eq!(time_slice_replicas(0.3, None, 16.0, 0.05), 3);
        assert_eq!(time_slice_replicas(0.3, Some(7.0), 16.0, 0.05), 2);
        assert_eq!(time_slice_replicas(0.3, Some(8.0), 16.0, 0.05), 1);
        assert_eq!(time_slice_replicas(0.6, None, 16.0, 0.05), 1);
        assert_eq!(time_slice_replicas(0.001, None, 16.0, 0.05), 95);
    }
}
