//! Sizes whose host, not the guest, sets MIG: Azure's NC RTX PRO 6000 BSE v6 reach their
//! GPU through SR-IOV vGPU with MIG on at the host. The guest cannot create, destroy or
//! reconfigure an instance (`nvidia-smi mig -lgi` answers "Insufficient Permissions"), so
//! neither AKS's `gpu_instance` nor the GPU Operator's mig-manager can partition these GPUs;
//! the partial sizes are the host's slices (a quarter is 24 GB, a half 48 GB).

use super::{mig_profile, reject, Constraint, Detail, Fit, Rejection};
use crate::catalog::{Catalog, GpuModel, Sku};
use crate::core::MigManager;
use crate::engine::recommend::demand::Demand;

/// Whether the size's partition test is this module's: a MIG replica on a size whose host
/// sets MIG.
pub(super) fn applies(catalog: &Catalog, d: &Demand<'_>, sku: &Sku) -> bool {
    d.sharing.is_partitioned() && catalog.host_mig(sku)
}

/// How a MIG replica takes a size whose host sets MIG: a partial size whose share of the
/// card is at least the slice the replica's profile takes, holding it as the VM's one GPU;
/// never a whole card, which the guest cannot partition. `None` for every other replica or
/// size.
pub(super) fn fit(
    catalog: &Catalog,
    d: &Demand<'_>,
    sku: &Sku,
    gpu: &GpuModel,
) -> Option<Result<Fit, Rejection>> {
    if !applies(catalog, d, sku) {
        return None;
    }
    if sku.gpu_partition >= 1.0 {
        return Some(Err(reject(
            Constraint::Mig,
            Detail::HostMig {
                sku: sku.name.clone(),
                gpu: sku.gpu_model.clone(),
            },
        )));
    }
    let card = catalog.gpu(&sku.gpu_model)?;
    let spec = card.mig.as_ref()?;
    // The slice the replica would take of a whole card: the share of the card it needs.
    let Some(profile) = mig_profile(card, d, MigManager::GpuOperator) else {
        return Some(Err(reject(
            Constraint::GpuMemory,
            Detail::NoMigProfile {
                gpu: card.name.clone(),
                need: d.memory_need.unwrap_or(0.0),
            },
        )));
    };
    let need = (f64::from(profile.memory_slices) / f64::from(spec.memory_slices))
        .max(f64::from(profile.compute) / f64::from(spec.compute_slices));
    if need > sku.gpu_partition + 1e-9 {
        return Some(Err(reject(
            Constraint::GpusPerNode,
            Detail::GpuShare {
                need,
                sku: sku.name.clone(),
                share: sku.gpu_partition,
            },
        )));
    }
    Some(super::memory_offered(d, gpu, 1).map(|_| Fit::Whole { gpus: 1 }))
}
