//! `gpus.toml`: GPU models, their memory and MIG geometry.

use std::sync::Arc;

use indexmap::IndexMap;
use serde::Deserialize;

use super::sources::Meta;
use super::{invalid, invalid_at_name, names_ok, toml_file, CatalogError};
use crate::catalog::{GpuModel, MigProfile, MigSpec};
use crate::source::SourceFile;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct GpusFile {
    #[allow(dead_code)]
    meta: Meta,
    gpu: Vec<GpuEntry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct GpuEntry {
    name: String,
    vendor: String,
    memory_gib: f64,
    usable_memory_mib: f64,
    usable_memory_source: String,
    architecture: String,
    compute_capability: Option<String>,
    #[serde(default)]
    aliases: Vec<String>,
    mig: Option<MigEntry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct MigEntry {
    compute_slices: u8,
    memory_slices: u8,
    pci_device_ids: Vec<String>,
    placement_source: String,
    driver_memory_source: String,
    #[serde(default)]
    aks_profiles: Vec<String>,
    profiles: Vec<ProfileEntry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ProfileEntry {
    name: String,
    compute: u8,
    memory_slices: u8,
    memory_gib: f64,
    /// What the driver gives the instance; `memory_gib` is the figure in the name.
    driver_gib: f64,
    starts: Vec<u8>,
    max_count: u8,
}

pub(super) fn load_gpus(
    file: &Arc<SourceFile>,
) -> Result<IndexMap<String, GpuModel>, CatalogError> {
    let parsed: GpusFile = toml_file(file)?;
    let mut out = IndexMap::new();
    for g in parsed.gpu {
        let model = gpu(file, g)?;
        if out.contains_key(&model.name) {
            return Err(invalid(
                file,
                0..0,
                format!("GPU `{}` is listed twice", model.name),
            ));
        }
        out.insert(model.name.clone(), model);
    }
    Ok(out)
}

/// One GPU of the file, its names, memory and MIG geometry checked.
fn gpu(file: &Arc<SourceFile>, g: GpuEntry) -> Result<GpuModel, CatalogError> {
    check_names(file, &g)?;
    check_memory(file, &g)?;
    let usable_gib = g.usable_memory_mib / 1024.0;
    if let Some(m) = &g.mig {
        check_driver_memory(file, &g.name, m)?;
    }
    let mig = g.mig.map(|m| mig_spec(m, usable_gib));
    if let Some(m) = &mig {
        check_mig(file, &g.name, m)?;
    }
    Ok(GpuModel {
        name: g.name,
        vendor: g.vendor,
        memory_gib: usable_gib,
        nominal_memory_gib: g.memory_gib,
        usable_memory_source: g.usable_memory_source,
        architecture: g.architecture,
        compute_capability: g.compute_capability,
        aliases: g.aliases,
        mig,
    })
}

/// Every name the GPU brings (its own, aliases, MIG and AKS profiles) is a catalog name.
fn check_names(file: &Arc<SourceFile>, g: &GpuEntry) -> Result<(), CatalogError> {
    let names = std::iter::once(&g.name)
        .chain(&g.aliases)
        .chain(
            g.mig
                .iter()
                .flat_map(|m| m.profiles.iter().map(|p| &p.name)),
        )
        .chain(g.mig.iter().flat_map(|m| &m.aks_profiles));
    names_ok(file, names)
}

fn check_memory(file: &Arc<SourceFile>, g: &GpuEntry) -> Result<(), CatalogError> {
    // What CUDA reports is what a server's memory fraction multiplies; a total above the
    // nominal figure, or none at all, is a typo the fit rules would trust.
    if !(g.usable_memory_mib > 0.0 && g.usable_memory_mib <= g.memory_gib * 1024.0 + 1e-9)
        || g.usable_memory_source.trim().is_empty()
    {
        return Err(invalid_at_name(
            file,
            &g.name,
            format!(
                "`{}`: usable_memory_mib must be above 0 and at most the nominal {} GiB, with its source",
                g.name, g.memory_gib
            ),
        ));
    }
    Ok(())
}

fn check_driver_memory(
    file: &Arc<SourceFile>,
    gpu: &str,
    m: &MigEntry,
) -> Result<(), CatalogError> {
    // The driver's figure is below the name's; above it, or missing its source, it is a
    // typo every memory rule would trust.
    let bad = m
        .profiles
        .iter()
        .find(|p| !(p.driver_gib > 0.0 && p.driver_gib <= p.memory_gib));
    if let Some(p) = bad {
        return Err(invalid_at_name(
            file,
            &p.name,
            format!(
                "MIG profile `{}` of `{}`: driver_gib must be above 0 and at most the {} GiB in its name",
                p.name, gpu, p.memory_gib
            ),
        ));
    }
    if m.driver_memory_source.trim().is_empty() {
        return Err(invalid_at_name(
            file,
            gpu,
            format!("`{gpu}`: driver_memory_source is empty"),
        ));
    }
    Ok(())
}

fn mig_spec(m: MigEntry, usable_gib: f64) -> MigSpec {
    MigSpec {
        compute_slices: m.compute_slices,
        memory_slices: m.memory_slices,
        pci_device_ids: m.pci_device_ids,
        placement_source: m.placement_source,
        driver_memory_source: m.driver_memory_source,
        aks_profiles: m.aks_profiles,
        profiles: m
            .profiles
            .into_iter()
            .map(|p| MigProfile {
                name: p.name,
                compute: p.compute,
                memory_slices: p.memory_slices,
                // A slice is never larger than its whole GPU as CUDA reports it.
                memory_gib: p.driver_gib.min(usable_gib),
                starts: p.starts,
                max_count: p.max_count,
            })
            .collect(),
    }
}

/// The MIG geometry holds together: slices within a u32 mask, AKS profiles among the
/// profiles, every placement inside the GPU.
fn check_mig(file: &Arc<SourceFile>, gpu: &str, m: &MigSpec) -> Result<(), CatalogError> {
    // Placements are bit masks over memory slices (mig.rs): keep them within a u32.
    if m.memory_slices == 0 || m.memory_slices > 31 || m.compute_slices == 0 {
        return Err(invalid_at_name(
            file,
            gpu,
            format!("`{gpu}`: MIG needs 1-31 memory slices and at least one compute slice"),
        ));
    }
    if let Some(bad) = m.aks_profiles.iter().find(|a| m.profile(a).is_none()) {
        return Err(invalid_at_name(
            file,
            gpu,
            format!("`{gpu}`: AKS profile `{bad}` is not one of its MIG profiles"),
        ));
    }
    // A placement must fit inside the GPU; otherwise every layout check below is wrong.
    for p in &m.profiles {
        if p.starts
            .iter()
            .any(|s| u16::from(*s) + u16::from(p.memory_slices) > u16::from(m.memory_slices))
            || p.compute > m.compute_slices
            || p.compute == 0
            || p.memory_slices == 0
        {
            return Err(invalid_at_name(
                file,
                &p.name,
                format!(
                    "MIG profile `{}` of `{}` does not fit the GPU's slices",
                    p.name, gpu
                ),
            ));
        }
    }
    Ok(())
}
