use super::{Cx, Rule};
use crate::core::num;
use crate::engine::cost::gpus_per_node;

declare_rule! {
    /// # GP019 gang-exceeds-pool
    ///
    /// ## What it does
    /// Flags a gang (`nodes > 1`: that many replicas must start together, one per node) that
    /// needs more nodes or GPUs than its pool can ever hold, and a pool hosting several gangs
    /// that each fit but together exceed the pool, where partial admission can deadlock.
    /// Each of a gang workload's `replicas` is one gang.
    ///
    /// ## Why is this bad?
    /// A gang that cannot fit waits forever while its started members hold GPUs. Two large
    /// jobs each holding half the GPUs, neither able to start: everything allocated, nothing
    /// progressing. All-or-nothing admission (Kueue) fixes the deadlock; sizing fixes the
    /// first case.
    ///
    /// ## Example
    /// ```toml
    /// nodes = 16          # gang of 16 nodes
    /// # pool: nodes = { min = 0, max = 8 }
    /// ```
    /// Use instead: `nodes.max` at least the gang size (times concurrent gangs), and Kueue
    /// for all-or-nothing admission.
    ///
    /// ## Source
    /// Context article "Queueing"; Kueue gang admission.
    pub(crate) struct GangExceedsPool { id: GP019, name: "gang-exceeds-pool", severity: Warning }
}

impl Rule for GangExceedsPool {
    fn check(&self, cx: &mut Cx<'_>) {
        for pool in cx.plan.pools() {
            let Some(sku) = cx.pool_sku(pool) else {
                continue;
            };
            let per_node = gpus_per_node(sku);
            let max_nodes = pool.nodes().max();
            let mut gangs = Vec::new();
            for w in cx.plan.pool_workloads(pool) {
                let gang = w.gang();
                if gang <= 1 {
                    continue;
                }
                let gpus = w.gpu_share();
                if gpus > per_node + 1e-9 {
                    cx.push(
                        cx.finding(
                            w.gpus.as_ref().map_or(w.name.span(), |g| g.span()),
                            format!(
                                "each member of gang `{}` needs {} GPUs but a `{}` node has {}",
                                w.name.get(),
                                num(gpus),
                                sku.name,
                                num(per_node)
                            ),
                        )
                        .label("more GPUs than a node has")
                        .help("use a SKU with more GPUs per node, or split the replica")
                        .workload(w.name.get())
                        .pool(pool.name.get()),
                    );
                    continue;
                }
                if gang > max_nodes {
                    cx.push(
                        cx.finding(w.nodes.as_ref().map_or(w.name.span(), |n| n.span()), format!("gang `{}` needs {gang} nodes at once but pool `{}` holds at most {max_nodes}: it can never start", w.name.get(), pool.name.get()))
                            .label(format!("gang of {gang}"))
                            .also(pool.nodes.span(), "pool size")
                            .help(format!("raise the pool's `nodes.max` to at least {gang}"))
                            .workload(w.name.get())
                            .pool(pool.name.get()),
                    );
                    continue;
                }
                // (workload, nodes per gang, concurrent gangs)
                gangs.push((w.name.get().as_str(), gang, w.replicas().max().max(1)));
            }
            let count: i64 = gangs.iter().map(|g| g.2).sum();
            let total: i64 = gangs.iter().map(|g| g.1 * g.2).sum();
            if count >= 2 && total > max_nodes {
                let names: Vec<&str> = gangs.iter().map(|g| g.0).collect();
                cx.push(
                    cx.finding(pool.nodes.span(), format!("pool `{}` holds {max_nodes} nodes but its {} gangs ({}) need {total} together: partially admitted gangs can hold nodes and deadlock", pool.name.get(), count, names.join(", ")))
                        .label("pool size")
                        .help("admit gangs all-or-nothing with Kueue, and size the pool for the gangs that must run at once")
                        .pool(pool.name.get()),
                );
            }
        }
    }
}
