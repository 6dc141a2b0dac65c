use super::{Cx, Rule};
use crate::core::num;
use crate::engine::memory::{container, server_cap};

declare_rule! {
    /// # GP021 replica-does-not-fit
    ///
    /// ## What it does
    /// Compares what one replica needs (its `gpu_memory_gib`, else model weights from
    /// `params_billion` x bytes of `precision` plus `kv_cache_gib`) with the memory it gets:
    /// the GPU (times `gpus`), the MIG slice, or the per-instance cap of its server. Checked
    /// on every pool the workload lands on; without pools, against the GPU models or SKUs it
    /// allows (it must fit at least one).
    ///
    /// ## Why is this bad?
    /// The server fails to load the model (CUDA out of memory) and restarts forever, or the
    /// scheduler places it on hardware that can never run it.
    ///
    /// ## Example
    /// ```toml
    /// model = { params_billion = 70, precision = "bf16" }   # 130 GiB of weights
    /// gpu_models = ["A100-80GB"]
    /// ```
    /// Use instead: `gpus = 2` (tensor parallel), `precision = "fp8"`, or a bigger GPU.
    ///
    /// A GPU gives what CUDA reports as its total (nvidia-smi's FB memory total), not its
    /// marketing figure: a T4 is 15,360 MiB (15 GiB), an L4 23,034 MiB, an H100 80GB 81,559
    /// MiB. That total is what vLLM's `gpu_memory_utilization` multiplies, so a replica on
    /// a T4 at 0.9 gets 13.5 GiB, not 14.4. `gpuplan catalog --gpu NAME` shows both figures
    /// and the source of the usable one.
    ///
    /// ## Source
    /// Weights = parameters x bytes per parameter (fp32 4, bf16/fp16 2, fp8/int8 1, int4 0.5).
    /// GPU totals: `usable_memory_mib` in providers/gpus.toml, each with its source.
    pub(crate) struct ReplicaDoesNotFit { id: GP021, name: "replica-does-not-fit", severity: Error }
}

impl Rule for ReplicaDoesNotFit {
    fn check(&self, cx: &mut Cx<'_>) {
        for w in cx.plan.workloads() {
            let Some(need) = w.memory_need_gib() else {
                continue;
            };
            let at = w
                .gpu_memory_gib
                .as_ref()
                .map(|m| m.span())
                .or_else(|| w.model.as_ref().map(|m| m.span()))
                .unwrap_or(w.name.span());
            let need_what = match (&w.gpu_memory_gib, w.weights_gib()) {
                (Some(_), _) => format!("{} GiB", num(need)),
                (None, Some(wt)) if w.kv_cache_gib().is_some() => format!(
                    "{} GiB ({} GiB of weights + {} GiB KV cache)",
                    num(need),
                    num(wt),
                    num(w.kv_cache_gib().unwrap_or(0.0))
                ),
                _ => format!("{} GiB of weights", num(need)),
            };
            let cap = server_cap(w, cx.catalog);
            let pools = cx.pools_of(w);
            for pool in &pools {
                let Some(gpu) = cx.pool_gpu(pool) else {
                    continue;
                };
                let Some(c) = container(w, pool, gpu, cx.catalog) else {
                    continue;
                };
                let (avail, how) = match cap {
                    Some((cap, _)) => (cap * c.gib, format!("{} x {}", num(cap), c.what)),
                    None => (c.gib, c.what.to_string()),
                };
                if need > avail + 1e-9 {
                    cx.push(
                        cx.finding(at.clone(), format!("a replica of `{}` needs {need_what} but gets {} GiB on pool `{}` ({how})", w.name.get(), num(avail), pool.name.get()))
                            .label("does not fit")
                            .help("use more GPUs per replica, a lower precision, a bigger slice or GPU, or a higher server cap")
                            .workload(w.name.get())
                            .pool(pool.name.get()),
                    );
                }
            }
            if !pools.is_empty() {
                continue;
            }
            let per_gpu = w.gpus().max(1) as f64;
            let mut candidates: Vec<(String, f64)> = Vec::new();
            if let Some(models) = &w.gpu_models {
                candidates.extend(
                    models
                        .iter()
                        .filter_map(|m| cx.catalog.gpu(m.get()))
                        .map(|g| (g.name.clone(), g.memory_gib)),
                );
            } else if let Some(skus) = &w.skus {
                candidates.extend(
                    skus.iter()
                        .filter_map(|s| cx.sku(s.get()))
                        .filter_map(|s| cx.catalog.sku_gpu(s))
                        .map(|g| (g.name.clone(), g.memory_gib)),
                );
            } else {
                candidates.extend(
                    cx.catalog
                        .gpus
                        .values()
                        .filter(|g| g.is_nvidia())
                        .map(|g| (g.name.clone(), g.memory_gib)),
                );
            }
            let cap_f = cap.map_or(1.0, |c| c.0);
            let best = candidates
                .iter()
                .map(|c| c.1 * per_gpu * cap_f)
                .fold(0.0, f64::max);
            if !candidates.is_empty() && need > best + 1e-9 {
                cx.push(
                    cx.finding(at, format!("a replica of `{}` needs {need_what}, more than any allowed GPU gives it (largest: {} GiB with {} GPU(s) per replica)", w.name.get(), num(best), num(per_gpu)))
                        .label("does not fit any allowed GPU")
                        .help("allow a bigger GPU, use more GPUs per replica, or lower the precision")
                        .workload(w.name.get()),
                );
            }
        }
    }
}
