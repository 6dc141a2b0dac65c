//! How much GPU memory one replica has, and how much it needs.

use crate::catalog::{Catalog, GpuModel};
use crate::plan::raw::{Pool, Sharing, Workload};

/// The memory a replica can use, in GiB, and what it is (for messages).
#[derive(Debug, Clone, PartialEq)]
pub struct Container {
    pub gib: f64,
    pub what: String,
}

/// The per-instance memory cap an inference server applies, explicit or the engine default.
pub fn server_cap(w: &Workload, catalog: &Catalog) -> Option<(f64, bool)> {
    let s = w.server.as_ref()?;
    match &s.gpu_memory_utilization {
        Some(u) => Some((*u.get(), true)),
        None => catalog
            .server_default_cap(s.engine.get())
            .map(|c| (c, false)),
    }
}

/// Memory visible to one replica of `w` on `pool` (GPU model `gpu`): a MIG slice, a whole GPU
/// (times GPUs per replica), shared with other time-sliced instances.
pub fn container(w: &Workload, pool: &Pool, gpu: &GpuModel) -> Option<Container> {
    match pool.sharing() {
        Sharing::Mig => {
            let mig = gpu.mig.as_ref()?;
            let profile = pool
                .mig_profile
                .as_ref()
                .map(|p| p.get().clone())
                .or_else(|| {
                    // Mixed layout: the smallest slice is the one a replica might land on.
                    pool.mig_layout.as_ref().and_then(|l| {
                        l.keys()
                            .filter_map(|k| mig.profile(k))
                            .min_by(|a, b| a.memory_gib.total_cmp(&b.memory_gib))
                            .map(|p| p.name.clone())
                    })
                })?;
            let p = mig.profile(&profile)?;
            Some(Container {
                gib: p.memory_gib,
                what: format!("a `{}` slice ({} GiB)", p.name, p.memory_gib),
            })
        }
        _ => {
            let n = w.gpus().max(1) as f64;
            Some(Container {
                gib: gpu.memory_gib * n,
                what: if n > 1.0 {
                    format!("{n} x {} ({} GiB)", gpu.name, gpu.memory_gib * n)
                } else {
                    format!("one {} ({} GiB)", gpu.name, gpu.memory_gib)
                },
            })
        }
    }
}
