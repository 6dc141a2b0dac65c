use super::{Cx, Rule};
use crate::core::num;
use crate::core::{node_hours_usd, usd};
use crate::core::{Capacity, Sp};
use crate::engine::cost::{
    block_price_unknown, block_window, burst_profile, gpus_per_node, pool_hour, reserve,
    BurstMember, BusyNode,
};
use crate::plan::Pool;

declare_rule! {
    /// # GP023 reservation-exceeds-steady-demand
    ///
    /// ## What it does
    /// For a pool on committed capacity (`reserved-1y`, `reserved-3y`,
    /// `capacity-reservation`), compares the reserved nodes (the pool's minimum) with the
    /// steady demand of its workloads (minimum replicas x GPUs per replica x gang size, in
    /// nodes; workloads that may scale to zero contribute nothing), plus the nodes above it
    /// whose work runs past the break-even utilisation (reserved rate / on-demand rate: a
    /// reservation is paid all 730 hours), and flags the excess with its idle cost.
    ///
    /// A Capacity Block (`capacity-block`) is paid for its whole length (`block_hours`, else
    /// the shortest block EC2 sells for its workloads' longest `hours_per_month`), used or
    /// not: it is judged over the hours its work runs inside it. It is flagged when it buys
    /// more nodes than its work needs at its peak, or a longer block than the shortest EC2
    /// sells for the work's hours (1-day steps up to 14 days, 7-day steps up to 182); the
    /// idle cost is every node-hour the block buys and its work does not use, at the block
    /// price (unknown offline, and then said). A 312-hour block for 300 hours of work is the
    /// shortest sold: its 12 idle hours are not flagged.
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
    /// Use instead: reserve the steady floor and the nodes that run past the break-even
    /// (a `g6.xlarge` at $0.5239/h reserved against $0.8048/h breaks even at 65%, 475 of 730
    /// hours), and cover the rest with on-demand or spot.
    ///
    /// ## Source
    /// Context article (steady use vs reserved price); OpenCost/Infracost practice.
    pub(crate) struct ReservationExceedsSteadyDemand { id: GP023, name: "reservation-exceeds-steady-demand", severity: Warning }
}

impl Rule for ReservationExceedsSteadyDemand {
    fn check(&self, cx: &mut Cx<'_>) {
        for pool in cx.plan.pools() {
            if let Some(d) = finding(cx, pool) {
                cx.push(d);
            }
        }
    }
}

/// A committed pool that reserves more nodes than its steady demand and the nodes worth
/// reserving above it.
fn finding(cx: &Cx<'_>, pool: &Sp<Pool>) -> Option<crate::diag::Diag> {
    if !pool.capacity().is_committed() {
        return None;
    }
    let sku = cx.pool_sku(pool)?;
    let per_node = gpus_per_node(sku);
    if per_node <= 0.0 {
        return None;
    }
    if pool.capacity().is_block() {
        return block_finding(cx, pool, per_node);
    }
    let plan_hours = cx.hours(None);
    let steady_gpus: f64 = cx
        .plan
        .pool_workloads(pool)
        // Steady as the recommender reads it: minimum replicas of work that runs every hour
        // of the month and does not scale to zero.
        .filter(|w| steady(cx, w, plan_hours))
        .map(|w| w.replicas().min() as f64 * w.gpu_share() * w.gang() as f64)
        .sum();
    let steady_nodes = (steady_gpus / per_node - 1e-9).ceil().max(0.0) as i64;
    let (worth, break_even) = worth_reserving(cx, pool, plan_hours, steady_nodes);
    let reserved = pool.nodes().min();
    if reserved <= worth {
        return None;
    }
    let excess = reserved - worth;
    let beyond = match break_even {
        Some(b) if worth > steady_nodes => format!(
            ", and {} more node(s) run past the break-even utilisation of {:.0}%",
            worth - steady_nodes,
            b * 100.0
        ),
        _ => String::new(),
    };
    let price = pool_hour(cx.catalog, cx.plan.provider(), pool);
    let idle = price.as_ref().map_or("unknown (no price)".to_owned(), |p| {
        format!(
            "{} a month",
            usd(node_hours_usd(p.usd, excess as f64, plan_hours))
        )
    });
    let caveat = price
        .and_then(|p| p.caveat)
        .map(|c| format!(" ({c})"))
        .unwrap_or_default();
    Some(
        cx.finding(pool.nodes.span(), format!("pool `{}` reserves {reserved} nodes but its steady demand is {} GPUs = {steady_nodes} nodes{beyond}: {excess} reserved nodes idle, {idle}{caveat}", pool.name.get(), num(steady_gpus)))
            .label("reserved nodes")
            .help(format!("reserve {worth} nodes and cover peaks with on-demand or spot"))
            .pool(pool.name.get()),
    )
}

/// Work that runs every hour of the window and does not scale to zero.
fn steady(cx: &Cx<'_>, w: &crate::plan::Workload, plan_hours: f64) -> bool {
    !w.scale_to_zero() && cx.hours(Some(w)) >= plan_hours - 1e-9
}

/// The nodes worth reserving, and the break-even utilisation they were judged by. Nodes above
/// the steady floor are worth reserving too when the work they carry runs past the break-even
/// utilisation: the rule `recommend` sizes reservations by (`cost::reserve`), over the same
/// stack of members' hours.
fn worth_reserving(
    cx: &Cx<'_>,
    pool: &Sp<Pool>,
    plan_hours: f64,
    steady_nodes: i64,
) -> (i64, Option<f64>) {
    let price = |c: Capacity| {
        cx.catalog
            .listed(cx.plan.provider(), pool.sku.get(), pool.region.get(), c)
    };
    let (Some(r), Some(od)) = (price(pool.capacity()), price(Capacity::OnDemand)) else {
        return (steady_nodes, None);
    };
    // A capacity reservation is billed at the on-demand rate: no break-even to weigh.
    if !pool.capacity().is_reserved() {
        return (steady_nodes, None);
    }
    let burst_nodes = (pool.nodes().max() - steady_nodes).max(0);
    // Each member's minimum replicas run its hours (steady); replicas above the minimum are
    // its peak, which no reservation covers.
    let members = cx.plan.pool_workloads(pool).flat_map(|w| {
        let count = |n: i64| u32::try_from(n.max(0)).unwrap_or(u32::MAX);
        let floor = if steady(cx, w, plan_hours) {
            count(w.replicas().min())
        } else {
            0
        };
        BurstMember::replicas(
            w.gpu_share() * w.gang() as f64,
            floor,
            w.kept_min(),
            count(w.replicas().max()),
            cx.hours(Some(w)).min(plan_hours),
            w.peak_duty(),
        )
    });
    let mut busy = vec![
        BusyNode {
            hours: plan_hours,
            steady: true
        };
        usize::try_from(steady_nodes).unwrap_or(0)
    ];
    busy.extend(burst_profile(
        members,
        u32::try_from(burst_nodes).unwrap_or(0),
    ));
    let r = reserve(&busy, r.usd_per_hour, od.usd_per_hour);
    (i64::from(r.nodes).max(steady_nodes), Some(r.break_even))
}

/// A Capacity Block against the work it was bought for: the nodes its work needs at its
/// peak and the shortest block sold for the work's hours, against the nodes and hours it
/// buys. Flags what could be bought smaller, costing every idle node-hour.
fn block_finding(cx: &Cx<'_>, pool: &Sp<Pool>, per_node: f64) -> Option<crate::diag::Diag> {
    let (window, _) = block_window(cx.plan, pool)?;
    let (mut gpus, mut gpu_hours, mut work_hours) = (0.0, 0.0, 0.0f64);
    for w in cx.plan.pool_workloads(pool) {
        let g = w.replicas().max().max(0) as f64 * w.gpu_share() * w.gang().max(1) as f64;
        let h = cx.hours(Some(w));
        gpus += g;
        gpu_hours += g * h.min(window);
        work_hours = work_hours.max(h);
    }
    let bought = pool.nodes().max().max(0);
    let needed = ((gpus / per_node - 1e-9).ceil().max(0.0) as i64).min(bought);
    let profile = crate::cloud::profile(cx.plan.provider());
    let shortest = profile
        .sold_block(work_hours)
        .map_or(window, |h| h.min(crate::core::HOURS_PER_MONTH));
    let longer = window > shortest + 1e-9;
    if bought <= needed && !longer {
        return None;
    }
    let idle_node_hours = (bought as f64 * window - gpu_hours / per_node).max(0.0);
    let idle = if block_price_unknown(cx.plan, cx.catalog, pool) {
        format!(
            "cost unknown: {}",
            crate::engine::cost::block_price_unknown_said(cx.plan.provider())
        )
    } else {
        match cx.catalog.listed(
            cx.plan.provider(),
            pool.sku.get(),
            pool.region.get(),
            Capacity::CapacityBlock,
        ) {
            Some(p) => format!(
                "{} at {}/h",
                usd(node_hours_usd(p.usd_per_hour, 1.0, idle_node_hours)),
                crate::core::rate(p.usd_per_hour)
            ),
            None => "cost unknown".to_owned(),
        }
    };
    Some(
        cx.finding(
            pool.nodes.span(),
            format!(
                "pool `{}` buys a Capacity Block of {bought} nodes x {} hours but its work runs {} hours on {needed} nodes: {} node-hours idle, {idle}",
                pool.name.get(),
                num(window),
                num(work_hours.min(window)),
                num(idle_node_hours)
            ),
        )
        .label("block nodes")
        .help(format!(
            "buy {needed} nodes for {} hours, the shortest block EC2 sells for {} hours of work",
            num(shortest),
            num(work_hours)
        ))
        .pool(pool.name.get()),
    )
}
