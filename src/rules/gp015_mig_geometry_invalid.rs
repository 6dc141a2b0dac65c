use indexmap::IndexMap;

use super::{Cx, Rule};
use crate::core::Sp;
use crate::mig;
use crate::plan::Pool;

declare_rule! {
    /// # GP015 mig-geometry-invalid
    ///
    /// ## What it does
    /// Flags a pool `mig_profile` the pool's GPU does not have, a `mig_layout` (or any of
    /// `mig_layouts`, which must not lay out more GPUs than the pool has) that cannot
    /// be placed on one GPU: an unknown profile, more instances than the profile allows, more
    /// compute slices than the GPU has, or no placement at the allowed start indices without
    /// overlapping memory slices (checked exactly, not as a sum of slices). Under
    /// `mig_manager = "aks"` (the default on Azure) it also refuses a profile AKS cannot
    /// create: AKS's `gpu_instance` takes MIG1g, MIG2g, MIG3g, MIG4g or MIG7g, which on an
    /// A100 80GB are 1g.10gb, 2g.20gb, 3g.40gb, 4g.40gb and 7g.80gb (never 1g.20gb or a `+me`
    /// variant); the finding names the profiles AKS creates on that GPU. On a size whose
    /// host sets MIG (Azure's NC RTX PRO 6000 BSE v6, SR-IOV vGPU) it refuses any geometry:
    /// the guest cannot partition those GPUs, and the partial sizes are the host's slices.
    ///
    /// ## Why is this bad?
    /// mig-parted or AKS refuses the geometry and the node never advertises the slices, or
    /// the profile name is one of another GPU's (`3g.20gb` is an A100-40GB profile; the 80 GB
    /// cards call it `3g.40gb`). Geometry is fixed when the pool is created; changing it means
    /// reprovisioning.
    ///
    /// ## Example
    /// ```toml
    /// sku = "Standard_NC24ads_A100_v4"          # A100 80GB
    /// mig_layout = { "3g.40gb" = 2, "1g.10gb" = 1 }   # 7 compute slices, but no memory left
    /// ```
    /// Use instead: `{ "4g.40gb" = 1, "3g.40gb" = 1 }` or `{ "3g.40gb" = 1, "2g.20gb" = 2 }`;
    /// `gpuplan catalog --gpu A100-80GB` lists profiles and placements.
    ///
    /// ## Source
    /// NVIDIA MIG User Guide: profiles and `nvidia-smi mig -lgipp` placements (reference §1).
    pub(crate) struct MigGeometryInvalid { id: GP015, name: "mig-geometry-invalid", severity: Error }
}

impl Rule for MigGeometryInvalid {
    fn check(&self, cx: &mut Cx<'_>) {
        for pool in cx.plan.pools() {
            if let (Some(sku), Some(span)) = (cx.pool_sku(pool), pool.mig_span()) {
                if cx.catalog.host_mig(sku) {
                    cx.push(
                        cx.finding(
                            span,
                            format!(
                                "pool `{}` declares a MIG geometry on `{}`, whose host sets MIG (SR-IOV vGPU): the guest cannot create, destroy or reconfigure MIG instances",
                                pool.name.get(),
                                sku.name
                            ),
                        )
                        .label("the host's MIG, not the guest's")
                        .help("drop the geometry and put the pool on the partial size whose share is the slice (a quarter of an RTX PRO 6000 is its 1g.24gb, a half its 2g.48gb)")
                        .pool(pool.name.get()),
                    );
                    continue;
                }
            }
            let Some(gpu) = cx.pool_gpu(pool) else {
                continue;
            };
            let Some(spec) = &gpu.mig else { continue }; // no MIG at all: GP004
            let profiles = || {
                spec.profiles
                    .iter()
                    .map(|p| format!("`{}`", p.name))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            // AKS creates only its `gpu_instance` profiles (MIG1g ... MIG7g), one per pool.
            if cx.plan.pool_mig_manager(pool) == crate::core::MigManager::Aks
                && crate::cloud::profile(cx.plan.provider()).managed_mig
            {
                for d in aks_findings(cx, pool, gpu, spec) {
                    cx.push(d);
                }
            }
            if let (Some(ls), Some(sku)) = (&pool.mig_layouts, cx.sku(pool.sku.get())) {
                let declared: i64 = ls.get().iter().map(|e| *e.gpus.get()).sum();
                let has = pool.nodes().max() * i64::from(sku.gpu_count);
                if declared > has {
                    cx.push(
                        cx.finding(
                            ls.span(),
                            format!(
                                "`mig_layouts` of pool `{}` lay out {declared} GPUs, but {} node(s) of `{}` have {has}",
                                pool.name.get(),
                                pool.nodes().max(),
                                sku.name
                            ),
                        )
                        .label("more GPUs than the pool has")
                        .help("lower the `gpus` of the layouts or raise the pool's maximum nodes")
                        .pool(pool.name.get()),
                    );
                }
            }
            if let Some(p) = &pool.mig_profile {
                if spec.profile(p.get()).is_none() {
                    cx.push(
                        cx.finding(
                            p.span(),
                            format!("`{}` has no MIG profile `{}`", gpu.name, p.get()),
                        )
                        .label("unknown profile for this GPU")
                        .help(format!("{} profiles: {}", gpu.name, profiles()))
                        .pool(pool.name.get()),
                    );
                }
            }
            for (layout, _) in pool.layouts() {
                let l: IndexMap<String, u32> = layout
                    .iter()
                    .map(|(k, v)| (k.clone(), u32::try_from(*v.get()).unwrap_or(0)))
                    .collect();
                if let Err(e) = mig::check(spec, &l) {
                    let help = match e {
                        mig::LayoutError::UnknownProfile(_) => format!("{} profiles: {}", gpu.name, profiles()),
                        _ => "run `gpuplan catalog --gpu NAME` for the profiles and their placements, or let `gpuplan recommend` choose the layout".into(),
                    };
                    cx.push(
                        cx.finding(
                            layout.span(),
                            format!(
                                "MIG layout of pool `{}` cannot be placed on one {}: {e}",
                                pool.name.get(),
                                gpu.name
                            ),
                        )
                        .label("invalid layout")
                        .help(help)
                        .pool(pool.name.get()),
                    );
                }
            }
        }
    }
}

/// Profiles a pool names that AKS cannot create (`mig_manager = aks`).
fn aks_findings(
    cx: &Cx<'_>,
    pool: &Sp<Pool>,
    gpu: &crate::catalog::GpuModel,
    spec: &crate::catalog::MigSpec,
) -> Vec<crate::diag::Diag> {
    let mut out = Vec::new();
    let named: Vec<(&str, std::ops::Range<usize>)> = pool
        .mig_profile
        .iter()
        .map(|p| (p.get().as_str(), p.span()))
        .chain(
            pool.layouts()
                .into_iter()
                .flat_map(|(l, _)| l.keys().map(move |k| (k.as_str(), l.span()))),
        )
        .collect();
    for (name, span) in named {
        if spec.profile(name).is_some() && !spec.aks_creates(name) {
            let allowed = if spec.aks_profiles.is_empty() {
                format!("AKS creates no MIG instances on {}", gpu.name)
            } else {
                format!(
                    "on {} AKS creates {}",
                    gpu.name,
                    spec.aks_profiles
                        .iter()
                        .map(|p| format!(
                            "`{p}` ({})",
                            spec.aks_gpu_instance(p).unwrap_or_default()
                        ))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            };
            out.push(
                cx.finding(
                    span,
                    format!(
                        "pool `{}` asks for MIG profile `{name}`, which AKS cannot create (mig_manager = aks): {allowed}",
                        pool.name.get()
                    ),
                )
                .label("not an AKS `gpu_instance` profile")
                .help("use one of the profiles AKS creates (a larger one holds the replica), or set `cluster.mig_manager = \"gpu-operator\"`")
                .pool(pool.name.get()),
            );
        }
    }
    out
}
