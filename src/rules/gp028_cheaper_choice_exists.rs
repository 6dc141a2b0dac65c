use super::{Cx, Rule};
use crate::core::num;
use crate::core::Kind;
use crate::core::{node_hours_usd, rate, usd};
use crate::engine::cost::node_hour;
use crate::engine::spot::assess;

declare_rule! {
    /// # GP028 cheaper-choice-exists
    ///
    /// ## What it does
    /// For each declared pool, looks for a cheaper choice that keeps every constraint: the
    /// same SKU in another of the plan's regions, or spot capacity when every workload on the
    /// pool is interruptible, checkpointed and not user-facing and the spot model says spot
    /// wins. States the monthly saving at the pool's maximum size. (A different SKU or MIG
    /// geometry is what `gpuplan recommend` decides.)
    ///
    /// ## Why is this bad?
    /// It is not bad, it is money: the same capacity can cost a different amount a few
    /// hundred kilometres away, and checkpointed batch work pays on-demand prices by habit.
    ///
    /// ## Example
    /// ```toml
    /// sku = "Standard_NC24ads_A100_v4"
    /// region = "westus"          # $4.775/h; eastus lists $3.673/h
    /// ```
    /// Use instead: the cheaper region, if data residency and latency allow.
    ///
    /// ## Source
    /// Catalog prices; the spot model of GP009.
    pub(crate) struct CheaperChoiceExists { id: GP028, name: "cheaper-choice-exists", severity: Note }
}

impl Rule for CheaperChoiceExists {
    fn check(&self, cx: &mut Cx<'_>) {
        let provider = cx.plan.provider();
        let hours = cx.hours(None);
        for pool in cx.plan.pools() {
            let nodes = pool.nodes().max() as f64;
            let cap = pool.capacity();
            let Some(here) =
                node_hour(cx.catalog, provider, pool.sku.get(), pool.region.get(), cap)
            else {
                continue;
            };
            if here.caveat.is_some() || nodes <= 0.0 {
                continue;
            }
            let cheapest = cx
                .plan
                .regions()
                .filter(|r| *r != pool.region.get())
                .filter_map(|r| {
                    node_hour(cx.catalog, provider, pool.sku.get(), r, cap)
                        .filter(|p| p.caveat.is_none())
                        .map(|p| (r, p.usd))
                })
                .min_by(|a, b| a.1.total_cmp(&b.1));
            if let Some((region, price)) = cheapest {
                let saving = node_hours_usd(here.usd - price, nodes, hours);
                if saving >= 1.0 {
                    cx.push(
                        cx.finding(pool.region.span(), format!("`{}` {cap} costs {}/h in `{region}` vs {}/h here: {} a month less at {} nodes", pool.sku.get(), rate(price), rate(here.usd), usd(saving), num(nodes), cap = cap.as_str()))
                            .label("a cheaper plan region exists")
                            .help(format!("move the pool to `{region}` if latency and data residency allow"))
                            .pool(pool.name.get()),
                    );
                }
            }
            if !cap.is_on_demand() {
                continue;
            }
            let members: Vec<_> = cx.plan.pool_workloads(pool).collect();
            let eligible = !members.is_empty()
                && members.iter().all(|w| {
                    w.interruptible()
                        && !w.user_facing()
                        && w.checkpoint_minutes.is_some()
                        && matches!(w.kind(), Kind::Training | Kind::Batch | Kind::Evaluation)
                });
            if !eligible {
                continue;
            }
            let worst = members
                .iter()
                .map(|w| assess(cx.catalog, provider, w, pool.sku.get(), pool.region.get()))
                .max_by(|a, b| {
                    let wa = a.economics.map_or(f64::INFINITY, |e| e.waste_factor);
                    let wb = b.economics.map_or(f64::INFINITY, |e| e.waste_factor);
                    wa.total_cmp(&wb)
                });
            let Some(a) = worst else { continue };
            let (Some(e), Some(spot), Some(be)) = (a.economics, a.spot, a.break_even) else {
                continue;
            };
            if e.waste_factor >= be {
                continue;
            }
            let saving = node_hours_usd(here.usd - spot * e.waste_factor, nodes, hours);
            if saving >= 1.0 {
                cx.push(
                    cx.finding(pool.capacity.as_ref().map_or(pool.name.span(), |c| c.span()), format!("every workload on `{}` is interruptible and checkpointed: spot at {}/h with an expected waste of {}x (break-even {}x) saves about {} a month", pool.name.get(), rate(spot), num(e.waste_factor), num(be), usd(saving)))
                        .label("on-demand")
                        .help("set `capacity = \"spot\"` for this pool")
                        .pool(pool.name.get()),
                );
            }
        }
    }
}
