use super::{Cx, Rule};

declare_rule! {
    /// # GP008 user-facing-on-spot
    ///
    /// ## What it does
    /// Flags a user-facing workload placed on a spot pool.
    ///
    /// ## Why is this bad?
    /// A spot eviction gives 30 seconds' (Azure) to two minutes' (AWS) notice; a replacement
    /// replica needs minutes to get a node, pull a 30-100 GB image and load weights. For a
    /// person waiting on the answer, that is an outage. Microsoft's boundary is explicit:
    /// spot for work that checkpoints or restarts cleanly, never user-facing inference.
    ///
    /// ## Example
    /// ```toml
    /// [[pool]]
    /// capacity = "spot"
    /// workloads = ["chat-api"]    # user_facing = true
    /// ```
    /// Use instead: on-demand (or reserved for the steady floor) for user-facing serving.
    ///
    /// ## Source
    /// Azure Spot VM guidance; context article "Queueing, and the spot caveat".
    pub(crate) struct UserFacingOnSpot { id: GP008, name: "user-facing-on-spot", severity: Error }
}

impl Rule for UserFacingOnSpot {
    fn check(&self, cx: &mut Cx<'_>) {
        for pool in cx.plan.pools() {
            if !pool.capacity().is_evictable() {
                continue;
            }
            for w in cx.plan.pool_workloads(pool) {
                if !w.user_facing() {
                    continue;
                }
                let at = pool
                    .capacity
                    .as_ref()
                    .map_or(pool.name.span(), |c| c.span());
                cx.push(
                    cx.finding(at, format!("user-facing workload `{}` is on spot pool `{}`: an eviction is a customer-facing outage", w.name.get(), pool.name.get()))
                        .label("spot capacity")
                        .also(w.name.span(), "user-facing")
                        .help("move user-facing replicas to on-demand or reserved capacity")
                        .workload(w.name.get())
                        .pool(pool.name.get()),
                );
            }
        }
    }
}
