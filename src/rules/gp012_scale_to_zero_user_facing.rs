use super::{Cx, Rule};

declare_rule! {
    /// # GP012 scale-to-zero-user-facing
    ///
    /// ## What it does
    /// Flags a user-facing workload that may scale to zero (`scale_to_zero = true` or
    /// `replicas = { min = 0, ... }`), and a pool that can drop to zero nodes while it hosts
    /// one.
    ///
    /// ## Why is this bad?
    /// Cold start is minutes, not seconds: serving images are typically 30-100 GB and the
    /// pull alone can take tens of minutes, plus node provisioning when the pool is at zero,
    /// weight loading and CUDA graph capture. For an interactive surface a warm replica is
    /// cheaper than the abandoned session.
    ///
    /// ## Example
    /// ```toml
    /// user_facing = true
    /// scale_to_zero = true
    /// ```
    /// Use instead: one or two warm replicas in business hours (`replicas = { min = 1, ... }`);
    /// scale-to-zero for batch, evaluation and internal tools.
    ///
    /// ## Source
    /// AKS AI toolchain operator troubleshooting (image sizes); context article
    /// "Scale-to-zero costs minutes, not seconds".
    pub(crate) struct ScaleToZeroUserFacing { id: GP012, name: "scale-to-zero-user-facing", severity: Warning }
}

impl Rule for ScaleToZeroUserFacing {
    fn check(&self, cx: &mut Cx<'_>) {
        for w in cx.plan.workloads() {
            if !w.user_facing() {
                continue;
            }
            let at = match (&w.scale_to_zero, &w.replicas) {
                (Some(s), _) if *s.get() => Some(s.span()),
                (_, Some(r)) if r.get().min() == 0 => Some(r.span()),
                _ => None,
            };
            if let Some(at) = at.clone() {
                cx.push(
                    cx.finding(at, format!("user-facing `{}` may scale to zero: the next person waits minutes for node, image pull (30-100 GB) and weight loading", w.name.get()))
                        .label("scales to zero")
                        .help("keep at least one warm replica (`replicas = { min = 1, ... }`) while people use it")
                        .workload(w.name.get()),
                );
            }
            for pool in cx.pools_of(w) {
                // Another size of the same pool that keeps nodes keeps the service warm.
                let warm: i64 = cx.plan.sizes_of(pool).iter().map(|p| p.nodes().min()).sum();
                if warm == 0 && at.is_none() {
                    cx.push(
                        cx.finding(
                            pool.nodes.span(),
                            format!(
                                "pool `{}` can drop to zero nodes while it hosts user-facing `{}`",
                                pool.name.get(),
                                w.name.get()
                            ),
                        )
                        .label("min 0 nodes")
                        .help("keep `nodes.min` at the warm floor of the user-facing replicas")
                        .workload(w.name.get())
                        .pool(pool.name.get()),
                    );
                }
            }
        }
    }
}
