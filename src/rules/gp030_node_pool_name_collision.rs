use super::{Cx, Rule};

declare_rule! {
    /// # GP030 node-pool-name-collision
    ///
    /// ## What it does
    /// Flags a declared pool whose name is also the name of a node pool render makes of
    /// another pool: the GPU Operator's MIG pools become one node pool per distinct node
    /// filling, named `pool-1`, `pool-2`, ..., so a pool named `embed-2` beside a pool
    /// `embed` filled two ways names two node groups, Kueue flavors and Terraform resources
    /// the same. (AKS agent pool names, at most 12 characters, are numbered by gpuplan's one
    /// name authority and never collide.)
    ///
    /// ## Why is this bad?
    /// Two node pools with one name are one to the provider and the cluster: Terraform
    /// refuses the duplicate resource or, worse, one pool's nodes take the other's labels,
    /// and Kueue admits a team's pods to a flavor whose nodes belong to another pool.
    ///
    /// ## Example
    /// ```toml
    /// [[pool]]
    /// name = "embed"
    /// sharing = "mig"
    /// mig_layouts = [{ layout = { "1g.10gb" = 7 }, gpus = 1 },
    ///                { layout = { "2g.20gb" = 1, "1g.10gb" = 5 }, gpus = 1 }]
    ///
    /// [[pool]]
    /// name = "embed-2"
    /// ```
    /// Use instead: a name no other pool's node pools take (`embed-batch`).
    ///
    /// ## Source
    /// azurerm and aws resource names must be unique in a module; Kubernetes object names
    /// are unique per kind (Kueue ResourceFlavor is cluster-scoped); render's node pool
    /// per mig-parted filling (README, `helm/gpu-operator-values.yaml`).
    pub(crate) struct NodePoolNameCollision { id: GP030, name: "node-pool-name-collision", severity: Error }
}

impl Rule for NodePoolNameCollision {
    fn check(&self, cx: &mut Cx<'_>) {
        if cx.plan.pools().is_empty() {
            return;
        }
        let declared = crate::engine::recommend::declared(cx.plan, cx.catalog);
        let (_, collisions) = crate::engine::names::node_pools(&declared.pools);
        for c in collisions {
            // Point at the pool that spells the name out, else at the later pool.
            let Some(pool) = cx.plan.pool(&c.name).or_else(|| cx.plan.pool(&c.second)) else {
                continue;
            };
            let message = format!(
                "two node pools would be named `{}`: one of pool `{}` and one of pool `{}` (render names the k-th node pool of a MIG pool the GPU Operator fills several ways `<pool>-k`)",
                c.name, c.first, c.second
            );
            cx.push(
                cx.finding(pool.name.span(), message)
                    .label("name taken")
                    .help("rename this pool so no node pool, Kueue flavor or Terraform resource shares its name")
                    .pool(pool.name.get()),
            );
        }
    }
}
