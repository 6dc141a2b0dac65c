use super::{Cx, Rule};

declare_rule! {
    /// # GP033 single-node-user-facing
    ///
    /// ## What it does
    /// Flags user-facing work that can run on fewer nodes than the availability floor (2 by
    /// default, `[recommend] user_facing_min_nodes` in providers/assumptions.toml): a
    /// workload whose `availability_floor` lowers it, or a declared pool serving user-facing
    /// work whose `nodes` maximum is below it (a pool of several node sizes, which share one
    /// `pool_label`, counts every size's nodes, and is reported once, on its first size).
    /// `recommend` keeps the floor on every pool of
    /// user-facing work (and prices it); this rule is where lowering it becomes a recorded
    /// decision: an `[[allow]]` of GP033 for the workload or pool, with its reason and
    /// approver.
    ///
    /// ## Why is this bad?
    /// On one node, a node failure, a kernel or driver upgrade's drain, or a host repair is an
    /// outage for the person waiting. Two nodes with the replicas spread one per node
    /// (render's topology spread) survive one.
    ///
    /// ## Example
    /// ```toml
    /// [[workload]]
    /// name = "chat"
    /// user_facing = true
    /// availability_floor = 1
    /// ```
    /// Use instead: drop `availability_floor` (two nodes), or record the decision:
    /// `[[allow]] rule = "GP033"`, `workload = "chat"`, with `reason` and `approved_by`.
    ///
    /// ## Source
    /// The source articles: user-facing work is what cannot wait; Kubernetes topology spread
    /// constraints and PodDisruptionBudgets keep replicas on separate nodes only where there
    /// are separate nodes.
    pub(crate) struct SingleNodeUserFacing { id: GP033, name: "single-node-user-facing", severity: Warning }
}

impl Rule for SingleNodeUserFacing {
    fn check(&self, cx: &mut Cx<'_>) {
        let floor = cx.catalog.assumptions.user_facing_min_nodes;
        for w in cx.plan.workloads() {
            let Some(a) = &w.availability_floor else {
                continue;
            };
            if !w.user_facing() || *a.get() >= i64::from(floor) {
                continue;
            }
            cx.push(
                cx.finding(
                    a.span(),
                    format!(
                        "user-facing `{}` keeps {} node(s), below the availability floor of {floor}: one node failure is an outage for the people waiting on it",
                        w.name.get(),
                        a.get()
                    ),
                )
                .label(format!("below {floor} nodes"))
                .help("drop `availability_floor`, or record the decision with an `[[allow]]` of GP033 for this workload")
                .workload(w.name.get()),
            );
        }
        for pool in cx.plan.pools() {
            // A pool of several node sizes keeps its floor as a whole: said once, on its
            // first size, with every size's nodes counted.
            let sizes = cx.plan.sizes_of(pool);
            if !sizes
                .first()
                .is_some_and(|first| std::ptr::eq(first.get(), pool.get()))
            {
                continue;
            }
            let max: i64 = sizes.iter().map(|p| p.nodes().max()).sum();
            // Each workload once, in plan order, however many sizes name it.
            let waits: Vec<String> = sizes
                .iter()
                .flat_map(|p| cx.plan.pool_workloads(p))
                .filter(|w| w.availability_nodes(floor) > 0)
                .filter(|w| i64::from(w.availability_nodes(floor)) > max)
                .map(|w| format!("`{}`", w.name.get()))
                .collect::<indexmap::IndexSet<String>>()
                .into_iter()
                .collect();
            if waits.is_empty() {
                continue;
            }
            cx.push(
                cx.finding(
                    pool.nodes.span(),
                    format!(
                        "pool `{}` serves user-facing {} on at most {max} node(s), below the availability floor of {floor}: one node failure is an outage",
                        pool.name.get(),
                        waits.join(", ")
                    ),
                )
                .label(format!("at most {max} node(s)"))
                .help("raise `nodes.max` to the floor, or record the decision with an `[[allow]]` of GP033 for this pool")
                .pool(pool.name.get()),
            );
        }
    }
}
