use super::{Cx, Rule};

declare_rule! {
    /// # GP035 workload-without-pool
    ///
    /// ## What it does
    /// Flags a workload no declared pool serves, in a plan that declares pools. `recommend`
    /// still places it, but `render --declared`, `diff` and the declared cost leave it out.
    ///
    /// ## Why is this bad?
    /// The plan's own pools are what a pull request renders and prices: a workload none of
    /// them names has no nodes once the plan is applied, and the cost shown for the plan is
    /// low by exactly its share.
    ///
    /// ## Example
    /// ```toml
    /// [[workload]]
    /// name = "reranker"
    ///
    /// [[pool]]
    /// workloads = ["chat"]   # reranker in no pool
    /// ```
    /// Use instead: name it in a pool's `workloads`, or add a pool for it
    /// (`recommend --write-plan` writes one).
    ///
    /// ## Source
    /// The plan format: a pool's `workloads` is what it serves; `render --declared` renders
    /// only declared pools.
    pub(crate) struct WorkloadWithoutPool { id: GP035, name: "workload-without-pool", severity: Warning }
}

impl Rule for WorkloadWithoutPool {
    fn check(&self, cx: &mut Cx<'_>) {
        if cx.plan.pools().is_empty() {
            return;
        }
        for w in cx.plan.workloads() {
            if cx.plan.workload_pools(w.name.get()).next().is_some() {
                continue;
            }
            cx.push(
                cx.finding(
                    w.name.span(),
                    format!(
                        "workload `{}` is in no declared pool: `render --declared` gives it no nodes and the plan's declared cost leaves it out",
                        w.name.get()
                    ),
                )
                .label("no pool serves it")
                .help("name it in a pool's `workloads`, or add a pool for it")
                .workload(w.name.get()),
            );
        }
    }
}
