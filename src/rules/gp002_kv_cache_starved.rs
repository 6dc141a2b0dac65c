use super::{Cx, Rule};
use crate::core::num;
use crate::engine::memory::{container, server_cap};

declare_rule! {
    /// # GP002 kv-cache-starved
    ///
    /// ## What it does
    /// For an inference workload with a model and a server cap, computes the per-instance
    /// memory (cap x GPU, slice or share memory) minus the model weights (parameters x bytes
    /// of the precision) and flags what is left when it is below the KV cache the workload
    /// needs (`kv_cache_gib`), or below 10% of the instance's memory when no need is given.
    ///
    /// ## Why is this bad?
    /// Getting the caps to add up is half the footgun: "nearly right" produces a KV cache too
    /// small to serve the batch size. The server starts, then queues or rejects requests at
    /// load, and the GPU you pay for serves a fraction of its throughput.
    ///
    /// ## Example
    /// ```toml
    /// model = { params_billion = 8, precision = "bf16" }   # 14.9 GiB of weights
    /// server = { engine = "vllm", gpu_memory_utilization = 0.22 }  # of 80 GiB = 17.6 GiB
    /// kv_cache_gib = 8
    /// ```
    /// Use instead: fewer instances per GPU with a larger cap, a bigger MIG slice, or a
    /// smaller precision (`fp8`).
    ///
    /// ## Source
    /// Context article "The LLM traps"; vLLM gpu_memory_utilization semantics.
    pub(crate) struct KvCacheStarved { id: GP002, name: "kv-cache-starved", severity: Warning }
}

impl Rule for KvCacheStarved {
    fn check(&self, cx: &mut Cx<'_>) {
        let share = cx.catalog.assumptions.min_kv_cache_share;
        for w in cx.plan.workloads() {
            let (Some(weights), Some((cap, _))) = (w.weights_gib(), server_cap(w, cx.catalog))
            else {
                continue;
            };
            for pool in cx.pools_of(w) {
                let Some(gpu) = cx.pool_gpu(pool) else {
                    continue;
                };
                let Some(c) = container(w, pool, gpu, cx.catalog) else {
                    continue;
                };
                let instance = cap * c.gib;
                let free = instance - weights;
                if free < 0.0 {
                    continue; // the replica does not fit at all: GP021
                }
                let (need, need_what) = match w.kv_cache_gib() {
                    Some(k) => (k, format!("the {} GiB it needs (`kv_cache_gib`)", num(k))),
                    None => (
                        share * instance,
                        format!(
                            "{}% of the instance ({} GiB)",
                            num(share * 100.0),
                            num(share * instance)
                        ),
                    ),
                };
                if free + 1e-9 >= need {
                    continue;
                }
                let at = w.server.as_ref().map_or(w.name.span(), |s| s.span());
                cx.push(
                    cx.finding(
                        at,
                        format!(
                            "`{}` on pool `{}`: {} x {} = {} GiB per instance minus {} GiB of weights leaves {} GiB of KV cache, below {need_what}",
                            w.name.get(), pool.name.get(), num(cap), c.what, num(instance), num(weights), num(free)
                        ),
                    )
                    .label("server settings")
                    .help("raise the per-instance cap (fewer instances per GPU), use a bigger slice, or quantize the weights")
                    .workload(w.name.get())
                    .pool(pool.name.get()),
                );
            }
        }
    }
}
