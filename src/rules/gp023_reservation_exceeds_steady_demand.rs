use super::{Cx, Rule};
use crate::core::num;
use crate::core::usd;
use crate::engine::cost::{gpus_per_node, pool_hour};

declare_rule! {
    /// # GP023 reservation-exceeds-steady-demand
    ///
    /// ## What it does
    /// For a pool on committed capacity (`reserved-1y`, `reserved-3y`,
    /// `capacity-reservation`), compares the reserved nodes (the pool's minimum) with the
    /// steady demand of its workloads (minimum replicas x GPUs per replica x gang size, in
    /// nodes; workloads that may scale to zero contribute nothing) and flags the excess with
    /// its idle cost.
    ///
    /// ## Why is this bad?
    /// Reserved capacity is paid whether used or not. A reservation above the steady floor
    /// does not remove waste, it moves it from scheduling to procurement, where nobody sees
    /// it until the quarterly review.
    ///
    /// ## Example
    /// ```toml
    /// capacity = "reserved-1y"
    /// nodes = 8            # steady demand: 3 nodes
    /// ```
    /// Use instead: reserve the steady floor, and cover peaks with on-demand or spot.
    ///
    /// ## Source
    /// Context article (steady use vs reserved price); OpenCost/Infracost practice.
    pub(crate) struct ReservationExceedsSteadyDemand { id: "GP023", name: "reservation-exceeds-steady-demand", severity: Warning }
}

impl Rule for ReservationExceedsSteadyDemand {
    fn check(&self, cx: &mut Cx<'_>) {
        for pool in cx.plan.pools() {
            if !pool.capacity().is_committed() {
                continue;
            }
            let Some(sku) = cx.pool_sku(pool) else {
                continue;
            };
            let per_node = gpus_per_node(sku);
            if per_node <= 0.0 {
                continue;
            }
            let steady_gpus: f64 = cx
                .plan
                .pool_workloads(pool)
                // Steady as the recommender reads it: minimum replicas of work that runs
                // every hour of the month and does not scale to zero.
                .filter(|w| !w.scale_to_zero() && cx.hours(Some(w)) >= cx.hours(None))
                .map(|w| w.replicas().min() as f64 * w.gpu_share() * w.gang() as f64)
                .sum();
            let steady_nodes = (steady_gpus / per_node - 1e-9).ceil().max(0.0) as i64;
            let reserved = pool.nodes().min();
            if reserved <= steady_nodes {
                continue;
            }
            let excess = reserved - steady_nodes;
            let price = pool_hour(cx.catalog, cx.plan.provider(), pool);
            let idle = price.as_ref().map_or("unknown (no price)".to_owned(), |p| {
                format!("{} a month", usd(p.usd * excess as f64 * cx.hours(None)))
            });
            let caveat = price
                .and_then(|p| p.caveat)
                .map(|c| format!(" ({c})"))
                .unwrap_or_default();
            cx.push(
                cx.finding(pool.nodes.span(), format!("pool `{}` reserves {reserved} nodes but its steady demand is {} GPUs = {steady_nodes} nodes: {excess} reserved nodes idle, {idle}{caveat}", pool.name.get(), num(steady_gpus)))
                    .label("reserved nodes")
                    .help(format!("reserve {steady_nodes} nodes and cover peaks with on-demand or spot"))
                    .pool(pool.name.get()),
            );
        }
    }
}
