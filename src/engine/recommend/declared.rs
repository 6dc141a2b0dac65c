//! The plan's own `[[pool]]` entries in the recommendation's shape, so `render --declared`
//! writes today's (or a pull request's) pools through the same templates.

use indexmap::IndexMap;

use super::demand::Segment;
use super::{cents, Nodes, RecPool, Recommendation};
use crate::catalog::Catalog;
use crate::plan::Plan;

pub fn declared(plan: &Plan, catalog: &Catalog) -> Recommendation {
    let headroom = catalog.assumptions.time_slicing_memory_headroom;
    let mut pools = Vec::new();
    for sp in plan.pools() {
        let p = sp.get();
        let sku = catalog.sku(plan.provider(), p.sku.get());
        let segment = plan
            .pool_workloads(p)
            .map(|w| Segment::of(w))
            .min()
            .unwrap_or(Segment::Batch);
        let (min, max) = (
            u32::try_from(p.nodes().min().max(0)).unwrap_or(0),
            u32::try_from(p.nodes().max().max(0)).unwrap_or(0),
        );
        // A block without a price of its own is not costed at the on-demand stand-in
        // `declared_pool` falls back to: `check` and `diff` leave it out, and render says so.
        let (cost, at_max, price) = if crate::engine::cost::block_price_unknown(plan, catalog, p) {
            (0.0, 0.0, 0.0)
        } else {
            crate::engine::cost::declared_pool(plan, catalog, p)
                .map_or((0.0, 0.0, 0.0), |c| (c.expected, c.at_max, c.price.usd))
        };
        let gpus_per_node = sku.map_or(0, |s| s.gpu_count);
        // Several declared layouts become the named configs the recommender gives a mixed pool.
        let mig_configs: Vec<super::MigConfig> = p
            .mig_layouts
            .iter()
            .flat_map(|ls| ls.get().iter())
            .enumerate()
            .map(|(i, e)| super::MigConfig {
                name: format!("gpuplan-{}-{}", p.name.get(), i + 1),
                layout: e
                    .layout
                    .iter()
                    .map(|(k, v)| (k.clone(), u32::try_from(*v.get()).unwrap_or(0)))
                    .collect(),
                gpus: u32::try_from(*e.gpus.get()).unwrap_or(0),
            })
            .collect();
        let mig_layout: Option<IndexMap<String, u32>> = match (&p.mig_profile, &p.mig_layout) {
            (_, Some(l)) => Some(
                l.iter()
                    .map(|(k, v)| (k.clone(), u32::try_from(*v.get()).unwrap_or(0)))
                    .collect(),
            ),
            (Some(profile), None) => {
                let per_gpu = sku
                    .and_then(|s| catalog.sku_gpu(s))
                    .and_then(|g| g.mig.as_ref())
                    .map_or(1, |spec| crate::mig::per_gpu(spec, profile.get()).max(1));
                Some(IndexMap::from([(profile.get().clone(), per_gpu)]))
            }
            (None, None) => None,
        };
        let ts = p
            .time_slicing_replicas
            .as_ref()
            .map(|r| u32::try_from(*r.get()).unwrap_or(2))
            .filter(|_| p.sharing().is_replicated());
        let (labels, taints) =
            super::marks::labels_and_taints(plan.provider(), segment, p.capacity());
        pools.push(RecPool {
            mig_node_sets: 1,
            name: p.name.get().clone(),
            provider: plan.provider(),
            region: p.region.get().clone(),
            sku: p.sku.get().clone(),
            gpu_model: sku.map_or(String::new(), |s| s.gpu_model.clone()),
            gpus_per_node,
            nodes: Nodes { min, max },
            capacity: p.capacity(),
            sharing: p.sharing(),
            segment,
            mig_layout,
            mig_configs,
            time_slicing_replicas: ts,
            mig_manager: plan.pool_mig_manager(p),
            gpu_memory_utilization: ts.map(|n| crate::engine::memory::time_sliced_cap(n, headroom)),
            workloads: p.workloads.iter().map(|w| w.get().clone()).collect(),
            parts: Vec::new(),
            monthly_cost_usd: cents(cost),
            monthly_cost_at_max_usd: cents(at_max),
            usd_per_node_hour: price,
            spot_waste_factor: None,
            gpus: Nodes {
                min: min * gpus_per_node,
                max: max * gpus_per_node,
            },
            stranded: None,
            labels,
            taints,
            why: super::reason::Why(vec![super::reason::Reason::Declared]),
            considered: Vec::new(),
            capacity_options: Vec::new(),
            // A declared reserved pool's floor is what it holds reserved.
            reserved_nodes: if p.capacity().is_reserved() { min } else { 0 },
            block_hours: crate::engine::cost::block_window(plan, p).map(|(h, _)| h),
            // One node size of a pool of several carries that pool's label.
            pool_label: p.pool_label.as_ref().unwrap_or(&p.name).get().clone(),
        });
    }
    Recommendation::of(plan, catalog, pools)
}
