use super::{Cx, Rule};
use crate::core::Kind;

declare_rule! {
    /// # GP011 training-and-inference-mixed
    ///
    /// ## What it does
    /// Flags a pool whose workloads include both training and inference.
    ///
    /// ## Why is this bad?
    /// They differ in interruption tolerance (training checkpoints and can live on spot;
    /// serving cannot), scaling shape (gradual and tightly coupled vs following traffic),
    /// SKU (NVLink A100/H100 vs L4/A10 at a fraction of the price) and sharing mode. One pool
    /// makes every one of those choices wrong for somebody.
    ///
    /// ## Example
    /// ```toml
    /// workloads = ["pretrain", "chat-api"]
    /// ```
    /// Use instead: separate pools with taints and tolerations.
    ///
    /// ## Source
    /// Context article "Separate training from inference".
    pub(crate) struct TrainingAndInferenceMixed { id: GP011, name: "training-and-inference-mixed", severity: Warning }
}

impl Rule for TrainingAndInferenceMixed {
    fn check(&self, cx: &mut Cx<'_>) {
        for pool in cx.plan.pools() {
            let training: Vec<&str> = cx
                .plan
                .pool_workloads(pool)
                .filter(|w| w.kind() == Kind::Training)
                .map(|w| w.name.get().as_str())
                .collect();
            let inference: Vec<&str> = cx
                .plan
                .pool_workloads(pool)
                .filter(|w| w.kind() == Kind::Inference)
                .map(|w| w.name.get().as_str())
                .collect();
            if training.is_empty() || inference.is_empty() {
                continue;
            }
            let at = pool.workloads.first().map_or(pool.name.span(), |w| {
                w.span().start..pool.workloads.last().map_or(0, |l| l.span().end)
            });
            cx.push(
                cx.finding(
                    at,
                    format!(
                        "pool `{}` mixes training ({}) and inference ({})",
                        pool.name.get(),
                        training.join(", "),
                        inference.join(", ")
                    ),
                )
                .label("training and inference together")
                .help("split them into separate pools with taints and tolerations")
                .pool(pool.name.get()),
            );
        }
    }
}
