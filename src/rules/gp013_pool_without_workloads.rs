use super::{Cx, Rule};
use crate::core::usd;
use crate::engine::cost::pool_month;

declare_rule! {
    /// # GP013 pool-without-workloads
    ///
    /// ## What it does
    /// Flags a declared pool that no workload needs (its `workloads` list is empty), with its
    /// monthly cost at its minimum and maximum size.
    ///
    /// ## Why is this bad?
    /// A GPU node pool costs money even when no GPU workload runs on it. Pools get created for
    /// a project, the project ends, and no alert fires for expensive idleness: an idle 8-GPU
    /// H100 node lists near $98/hour, about $72,000 a month.
    ///
    /// ## Example
    /// ```toml
    /// [[pool]]
    /// name = "old-experiment"
    /// nodes = 2
    /// workloads = []
    /// ```
    /// Use instead: delete the pool, or name the workloads it serves. In a capacity-
    /// constrained region check availability first: a pool you release may not come back.
    ///
    /// ## Source
    /// Microsoft AKS GPU docs ("you incur cost on a GPU node pool even when no GPU workload is
    /// running"); context article opening.
    pub(crate) struct PoolWithoutWorkloads { id: GP013, name: "pool-without-workloads", severity: Error }
}

impl Rule for PoolWithoutWorkloads {
    fn check(&self, cx: &mut Cx<'_>) {
        let hours = cx.hours(None);
        for pool in cx.plan.pools() {
            if !pool.workloads.is_empty() {
                continue;
            }
            let n = pool.nodes();
            let cost = |nodes| {
                pool_month(cx.catalog, cx.plan.provider(), pool, nodes, hours).map(|(c, _)| c)
            };
            let money = match (cost(n.min()), cost(n.max())) {
                (Some(lo), Some(_)) if n.min() == n.max() => format!("{} a month", usd(lo)),
                (Some(lo), Some(hi)) => format!(
                    "{} a month at its floor of {} nodes, up to {} at {}",
                    usd(lo),
                    n.min(),
                    usd(hi),
                    n.max()
                ),
                _ => "cost unknown (no price in the catalog)".to_owned(),
            };
            cx.push(
                cx.finding(pool.name.span(), format!("pool `{}` ({} x `{}`) serves no workload: {money}", pool.name.get(), n.max(), pool.sku.get()))
                    .label("no workloads")
                    .help("delete the pool or list the workloads it serves; check regional availability before releasing scarce SKUs")
                    .pool(pool.name.get()),
            );
        }
    }
}
