use super::{Cx, Rule};
use crate::core::Kind;

declare_rule! {
    /// # GP010 spot-without-restart-safety
    ///
    /// ## What it does
    /// Flags an interruptible training or batch workload with no `checkpoint_minutes`, and
    /// spot capacity for a workload that is not `interruptible`.
    ///
    /// ## Why is this bad?
    /// Spot fits work that can be checkpointed or restarted cleanly: shutdown within thirty
    /// seconds, checkpoints written off the spot VM, idempotent jobs, pre-baked images.
    /// Without a checkpoint every eviction restarts the job from zero; a workload nobody
    /// declared interruptible was never built to survive one.
    ///
    /// ## Example
    /// ```toml
    /// kind = "training"
    /// interruptible = true      # but no checkpoint_minutes
    /// ```
    /// Use instead: `checkpoint_minutes = 30` (checkpoints written outside the node), and
    /// `interruptible = true` only for work that survives an eviction.
    ///
    /// ## Source
    /// Azure Spot VM guidance as quoted in the context article.
    pub(crate) struct SpotWithoutRestartSafety { id: GP010, name: "spot-without-restart-safety", severity: Error }
}

impl Rule for SpotWithoutRestartSafety {
    fn check(&self, cx: &mut Cx<'_>) {
        for w in cx.plan.workloads() {
            let Some(flag) = &w.interruptible else {
                continue;
            };
            if *flag.get()
                && matches!(w.kind(), Kind::Training | Kind::Batch)
                && w.checkpoint_minutes.is_none()
            {
                cx.push(
                    cx.finding(flag.span(), format!("`{}` is interruptible but has no `checkpoint_minutes`: an eviction restarts it from zero", w.name.get()))
                        .label("interruptible without checkpoints")
                        .help("checkpoint off the node and set `checkpoint_minutes`, or set `interruptible = false`")
                        .workload(w.name.get()),
                );
            }
        }
        for pool in cx.plan.pools() {
            if !pool.capacity().is_evictable() {
                continue;
            }
            for w in cx.plan.pool_workloads(pool) {
                if !w.interruptible() {
                    cx.push(
                        cx.finding(pool.capacity.as_ref().map_or(pool.name.span(), |c| c.span()), format!("`{}` is on spot pool `{}` but is not `interruptible`", w.name.get(), pool.name.get()))
                            .label("spot capacity")
                            .also(w.name.span(), "not interruptible")
                            .help("move it to on-demand capacity, or make it restart-safe and set `interruptible = true`")
                            .workload(w.name.get())
                            .pool(pool.name.get()),
                    );
                }
            }
        }
    }
}
