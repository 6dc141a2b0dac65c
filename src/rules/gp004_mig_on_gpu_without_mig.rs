use super::{Cx, Rule};

declare_rule! {
    /// # GP004 mig-on-gpu-without-mig
    ///
    /// ## What it does
    /// Flags MIG asked of a GPU that has no MIG: a pool with `sharing = "mig"`, a
    /// `mig_profile` or a `mig_layout` on such a SKU, or a workload with `sharing = "mig"`
    /// whose allowed GPU models or SKUs all lack MIG.
    ///
    /// ## Why is this bad?
    /// MIG exists only on A100, A30, H100, H200, B200/GB200 and RTX PRO 6000 class parts. L4,
    /// L40S, T4, A10/A10G and V100 are exactly the cards a cost-conscious team reaches for,
    /// and none can be partitioned: the pool comes up without slices and the pods stay Pending.
    ///
    /// ## Example
    /// ```toml
    /// sku = "g6.xlarge"        # L4
    /// sharing = "mig"
    /// ```
    /// Use instead: an A100/H100 SKU for MIG, or time-slicing with a recorded decision.
    ///
    /// ## Source
    /// NVIDIA MIG User Guide, supported GPUs (reference §2).
    pub(crate) struct MigOnGpuWithoutMig { id: GP004, name: "mig-on-gpu-without-mig", severity: Error }
}

impl Rule for MigOnGpuWithoutMig {
    fn check(&self, cx: &mut Cx<'_>) {
        for pool in cx.plan.pools() {
            let wants = pool.sharing().is_partitioned()
                || pool.mig_profile.is_some()
                || !pool.layouts().is_empty();
            let Some(gpu) = cx.pool_gpu(pool) else {
                continue;
            };
            if wants && gpu.mig.is_none() {
                cx.push(
                    cx.finding(pool.sku.span(), format!("pool `{}` asks for MIG on `{}`, whose {} GPUs have no MIG", pool.name.get(), pool.sku.get(), gpu.name))
                        .label("no MIG on this GPU")
                        .help("use a MIG-capable SKU (A100, A30, H100, H200, B200) or another sharing mode")
                        .pool(pool.name.get()),
                );
            }
        }
        for w in cx.plan.workloads() {
            if !w.sharing().is_partitioned() {
                continue;
            }
            if let Some(models) = &w.gpu_models {
                let all_without = models
                    .iter()
                    .all(|m| cx.catalog.gpu(m.get()).is_some_and(|g| g.mig.is_none()));
                if !models.is_empty() && all_without {
                    cx.push(
                        cx.finding(models.span(), format!("`{}` wants MIG but none of its allowed GPU models has MIG", w.name.get()))
                            .label("no MIG-capable model here")
                            .help("allow a MIG-capable model (A100-80GB, H100-80GB, ...) or change `sharing`")
                            .workload(w.name.get()),
                    );
                }
            }
            if let Some(skus) = &w.skus {
                let all_without = skus.iter().all(|s| {
                    cx.sku(s.get())
                        .and_then(|s| cx.catalog.sku_gpu(s))
                        .is_some_and(|g| g.mig.is_none())
                });
                if !skus.is_empty() && all_without {
                    cx.push(
                        cx.finding(
                            skus.span(),
                            format!(
                                "`{}` wants MIG but none of its allowed SKUs has a MIG-capable GPU",
                                w.name.get()
                            ),
                        )
                        .label("no MIG-capable SKU here")
                        .help("allow a SKU with A100/H100-class GPUs or change `sharing`")
                        .workload(w.name.get()),
                    );
                }
            }
        }
    }
}
