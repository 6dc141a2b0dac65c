use super::{Cx, Rule};
use crate::engine::memory::precision_gap;

declare_rule! {
    /// # GP031 precision-unsupported
    ///
    /// ## What it does
    /// Flags a workload whose model precision its pool's GPU does not compute in: `bf16`
    /// before compute capability 8.0 (a T4 is 7.5, a V100 7.0), `fp8` before 8.9 (an A100
    /// is 8.0). The minimum per precision is data (`[precision]` in
    /// providers/assumptions.toml), and `recommend` never places such a workload there.
    ///
    /// ## Why is this bad?
    /// The server either refuses the model or runs it in another precision: a bf16 model on
    /// a T4 is served as fp16 (numerics the model was not trained for, overflow in some
    /// layers), an fp8 model on an A100 through a slower weight-only kernel. The plan's
    /// memory and throughput figures then describe a deployment that does not exist.
    ///
    /// ## Example
    /// ```toml
    /// [[workload]]
    /// name = "chat"
    /// model = { params_billion = 3, precision = "bf16" }
    ///
    /// [[pool]]
    /// sku = "Standard_NC4as_T4_v3"
    /// workloads = ["chat"]
    /// ```
    /// Use instead: a GPU of compute capability 8.0 or more (A10, L4, A100, H100), or a
    /// model in a precision the GPU has (`fp16`).
    ///
    /// ## Source
    /// NVIDIA CUDA C++ Programming Guide (bf16 arithmetic from sm_80); PyTorch
    /// `torch.cuda.is_bf16_supported()`; vLLM quantization docs (FP8 W8A8 needs compute
    /// capability 8.9); compute capabilities from NVIDIA's CUDA GPUs list (providers/gpus.toml).
    pub(crate) struct PrecisionUnsupported { id: GP031, name: "precision-unsupported", severity: Error }
}

impl Rule for PrecisionUnsupported {
    fn check(&self, cx: &mut Cx<'_>) {
        for pool in cx.plan.pools() {
            let Some(gpu) = cx.pool_gpu(pool) else {
                continue;
            };
            for w in cx.plan.pool_workloads(pool) {
                let Some(gap) = precision_gap(w, gpu, cx.catalog) else {
                    continue;
                };
                let Some(model) = &w.model else {
                    continue;
                };
                cx.push(
                    cx.finding(
                        model.span(),
                        format!(
                            "`{}` serves a {} model on pool `{}`, whose {} (compute capability {}.{}) does not compute in {} (it needs {}.{})",
                            w.name.get(),
                            gap.precision,
                            pool.name.get(),
                            gpu.name,
                            gap.has.0,
                            gap.has.1,
                            gap.precision,
                            gap.needs.0,
                            gap.needs.1
                        ),
                    )
                    .label(format!("{} needs compute capability {}.{}", gap.precision, gap.needs.0, gap.needs.1))
                    .help("choose a GPU that computes in this precision, or a model in one the GPU has")
                    .pool(pool.name.get())
                    .workload(w.name.get()),
                );
            }
        }
    }
}
