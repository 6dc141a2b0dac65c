use super::{Cx, Rule};
use crate::core::num;

declare_rule! {
    /// # GP025 slice-underused
    ///
    /// ## What it does
    /// Flags a workload that holds a dedicated GPU or a MIG slice but expects to use less
    /// than 25% of it (`utilization`), suggesting a smaller slice or sharing. The quarterly
    /// review applies the same test to measured usage.
    ///
    /// ## Why is this bad?
    /// The gap between requested and used GPU is the waste: in the Alibaba PAI trace the
    /// median task requested half a GPU and used 0.042 of one. A card busy a tenth of the
    /// time is paid for in full.
    ///
    /// ## Example
    /// ```toml
    /// gpus = 1
    /// utilization = 0.1
    /// ```
    /// Use instead: a MIG slice (`sharing = "mig"`, `gpu_fraction = 0.14`), or share the GPU
    /// with a recorded decision.
    ///
    /// ## Configuration
    /// `providers/assumptions.toml`: `check.low_utilization` (0.25).
    ///
    /// ## Source
    /// Alibaba PAI trace (NSDI '22) as cited in the context article.
    pub(crate) struct SliceUnderused { id: GP025, name: "slice-underused", severity: Warning }
}

impl Rule for SliceUnderused {
    fn check(&self, cx: &mut Cx<'_>) {
        let threshold = cx.catalog.assumptions.low_utilization;
        for w in cx.plan.workloads() {
            let Some(u) = &w.utilization else { continue };
            if *u.get() >= threshold || !w.sharing().is_exclusive() {
                continue;
            }
            let holds = if w.sharing().is_partitioned() {
                "a MIG slice".to_owned()
            } else {
                format!("{} dedicated GPU(s)", num(w.gpu_share()))
            };
            let busy = w.gpu_share() * u.get();
            cx.push(
                cx.finding(u.span(), format!("`{}` holds {holds} per replica but expects to use {}% of it ({} GPU busy)", w.name.get(), num(u.get() * 100.0), num(busy)))
                    .label(format!("below {}%", num(threshold * 100.0)))
                    .help("right-size to a smaller MIG profile, or share the GPU (time-slicing or a shared server) with a recorded decision")
                    .workload(w.name.get()),
            );
        }
    }
}
