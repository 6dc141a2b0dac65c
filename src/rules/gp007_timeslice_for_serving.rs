use super::{Cx, Rule};
use crate::core::Kind;

declare_rule! {
    /// # GP007 timeslice-for-serving
    ///
    /// ## What it does
    /// Flags time-slicing (the workload's `sharing`, or a time-sliced pool it lands on) for a
    /// user-facing workload or an inference workload.
    ///
    /// ## Why is this bad?
    /// Time-sliced replicas share one fault domain (one crash takes them all), get no memory
    /// isolation and no compute guarantee. That is defensible for experimentation where a
    /// crash costs somebody an afternoon; for serving, latency and availability become a
    /// function of the noisiest neighbour.
    ///
    /// ## Example
    /// ```toml
    /// kind = "inference"
    /// user_facing = true
    /// sharing = "time-slicing"
    /// ```
    /// Use instead: `sharing = "mig"` on A100/H100, or dedicated GPUs.
    ///
    /// ## Source
    /// NVIDIA device plugin docs (same fault domain); context article: "do not run
    /// time-slicing in production".
    pub(crate) struct TimesliceForServing { id: GP007, name: "timeslice-for-serving", severity: Warning }
}

impl Rule for TimesliceForServing {
    fn check(&self, cx: &mut Cx<'_>) {
        for w in cx.plan.workloads() {
            if !(w.user_facing() || w.kind() == Kind::Inference) {
                continue;
            }
            let pool = cx
                .pools_of(w)
                .into_iter()
                .find(|p| p.sharing().is_time_sliced());
            if !w.sharing().is_time_sliced() && pool.is_none() {
                continue;
            }
            let what = if w.user_facing() {
                "user-facing"
            } else {
                "inference"
            };
            let mut d = cx
                .finding(
                    w.sharing.as_ref().map_or(w.name.span(), |s| s.span()),
                    format!("{what} workload `{}` runs time-sliced: a shared fault domain, no memory isolation and no compute guarantee", w.name.get()),
                )
                .label("time-slicing")
                .help("serve from MIG slices (A100/H100) or dedicated GPUs")
                .workload(w.name.get());
            if let Some(p) = pool {
                d = d.pool(p.name.get()).also(p.name.span(), "time-sliced pool");
            }
            cx.push(d);
        }
    }
}
