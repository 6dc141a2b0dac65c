use super::{Cx, Rule};

declare_rule! {
    /// # GP029 pool-outside-allow-list
    ///
    /// ## What it does
    /// Flags a workload declared on a pool (`[[pool]] workloads`) whose GPU model its
    /// `gpu_models` excludes, or whose SKU its `skus` excludes.
    ///
    /// ## Why is this bad?
    /// A workload's allow-lists are a decision: a team limited its model to H100s because
    /// it needs their memory bandwidth, or its SKUs to the sizes it validated. A pool of
    /// another GPU breaks that decision quietly: the replicas land there (nothing in
    /// Kubernetes reads `gpu_models`), run slower or not at all, and the recommendation,
    /// which honours the lists, never agrees with the pools.
    ///
    /// ## Example
    /// ```toml
    /// [[workload]]
    /// name = "llm-serving"
    /// gpu_models = ["H100-80GB"]
    ///
    /// [[pool]]
    /// name = "a100"
    /// sku = "Standard_NC24ads_A100_v4"
    /// workloads = ["llm-serving"]
    /// ```
    /// Use instead: a pool of an allowed GPU (`gpuplan recommend` picks one), or widen the
    /// workload's list deliberately.
    ///
    /// ## Source
    /// The plan's own allow-lists (plan-format.md: `gpu_models`, `skus`); the catalog's GPU
    /// model of each SKU (providers/*/skus.toml).
    pub(crate) struct PoolOutsideAllowList { id: GP029, name: "pool-outside-allow-list", severity: Error }
}

impl Rule for PoolOutsideAllowList {
    fn check(&self, cx: &mut Cx<'_>) {
        for pool in cx.plan.pools() {
            let Some(sku) = cx.pool_sku(pool) else {
                continue;
            };
            let gpu = cx.pool_gpu(pool);
            for w in cx.plan.pool_workloads(pool) {
                // A pool whose GPU the catalog does not know fits no list of models.
                let model_ok = match gpu {
                    Some(g) => w.allows_gpu(cx.catalog, &g.name),
                    None => w.gpu_models.is_none(),
                };
                let sku_ok = w.allows_sku(&sku.name);
                if model_ok && sku_ok {
                    continue;
                }
                let (what, list) = if model_ok {
                    (format!("SKU `{}`", sku.name), w.skus.as_ref())
                } else {
                    (
                        format!("GPU {}", gpu.map_or("?", |g| g.name.as_str())),
                        w.gpu_models.as_ref(),
                    )
                };
                let allowed = list
                    .map(|l| {
                        l.iter()
                            .map(|s| format!("`{}`", s.get()))
                            .collect::<Vec<_>>()
                            .join(", ")
                    })
                    .unwrap_or_default();
                let at = pool
                    .workloads
                    .iter()
                    .find(|n| n.get() == w.name.get())
                    .map_or(pool.name.span(), |n| n.span());
                let mut d = cx
                    .finding(
                        at,
                        format!(
                            "`{}` is declared on pool `{}` ({what}), which its allow-list excludes (allowed: {allowed})",
                            w.name.get(),
                            pool.name.get()
                        ),
                    )
                    .label("outside the workload's allow-list")
                    .help("put it on a pool of an allowed GPU and SKU (`gpuplan recommend` picks one), or widen its list deliberately")
                    .pool(pool.name.get());
                if let Some(l) = list {
                    d = d.also(l.span(), "the workload's allow-list");
                }
                cx.push(d.workload(w.name.get()));
            }
        }
    }
}
