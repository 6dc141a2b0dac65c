use super::{Cx, Rule};
use crate::diag::Severity;

declare_rule! {
    /// # GP003 timeslice-multi-gpu-request
    ///
    /// ## What it does
    /// Flags a workload that asks for more than one GPU (`gpus > 1`) where GPUs are
    /// time-sliced (its own `sharing` or the pool it lands on). A warning while the device
    /// plugin runs with `failRequestsGreaterThanOne = false` (its default), an error when the
    /// cluster sets it to true.
    ///
    /// ## Why is this bad?
    /// With the default, a pod asking for `nvidia.com/gpu: 2` is admitted, runs and receives
    /// no proportional share: it pays for two and gets one time slice. With the flag set,
    /// the kubelet rejects it with `UnexpectedAdmissionError`; the pod lands in `Failed` and
    /// never heals by itself, because the extended resource still exists on the node.
    ///
    /// ## Example
    /// ```toml
    /// gpus = 2
    /// sharing = "time-slicing"
    /// ```
    /// Use instead: `gpus = 1` on a time-sliced pool, or dedicated GPUs for multi-GPU work.
    ///
    /// ## Source
    /// NVIDIA k8s-device-plugin README (time-slicing, failRequestsGreaterThanOne).
    pub(crate) struct TimesliceMultiGpuRequest { id: GP003, name: "timeslice-multi-gpu-request", severity: Warning }
}

impl Rule for TimesliceMultiGpuRequest {
    fn check(&self, cx: &mut Cx<'_>) {
        let strict = cx.plan.fail_requests_greater_than_one();
        for w in cx.plan.workloads() {
            let Some(g) = &w.gpus else { continue };
            if *g.get() <= 1 {
                continue;
            }
            let on_pool = cx
                .pools_of(w)
                .into_iter()
                .find(|p| p.sharing().is_time_sliced());
            if !w.sharing().is_time_sliced() && on_pool.is_none() {
                continue;
            }
            let mut d = if strict {
                cx.finding(
                    g.span(),
                    format!("`{}` requests {} time-sliced GPUs and the device plugin fails requests greater than one: the pod is rejected with UnexpectedAdmissionError and stays Failed", w.name.get(), g.get()),
                )
            } else {
                cx.finding(
                    g.span(),
                    format!("`{}` requests {} time-sliced GPUs: the pod runs but gets no proportional share of compute", w.name.get(), g.get()),
                )
            }
            .label("more than one shared GPU")
            .help("request one time-sliced GPU, or move the workload to dedicated GPUs")
            .workload(w.name.get());
            if strict {
                d.severity = Severity::Error;
            }
            if let Some(p) = on_pool {
                d = d.pool(p.name.get());
            }
            cx.push(d);
        }
    }
}
