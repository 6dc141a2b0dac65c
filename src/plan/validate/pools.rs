//! One `[[pool]]`: its names, region, capacity keys, MIG layouts and workloads; and the
//! pools of several node sizes (`pool_label`).

use indexmap::IndexMap;

use super::{fmt_num, limits, suggest, Ctx, Known, PlanCode};
use crate::plan::raw::{Pool, Sp};

pub(super) fn pool(
    ctx: &mut Ctx<'_>,
    p: &Sp<Pool>,
    k: &Known<'_>,
    workloads: &IndexMap<String, usize>,
    workload_names: &[String],
) {
    names(ctx, p, k);
    capacity_keys(ctx, p, k);
    sizes(ctx, p, workloads, workload_names);
}

/// Its name, label, SKU and region, and that the region sells the SKU.
fn names(ctx: &mut Ctx<'_>, p: &Sp<Pool>, k: &Known<'_>) {
    let pc = k.pc;
    ctx.dns_label("pool name", &p.name);
    if let Some(l) = &p.pool_label {
        ctx.dns_label("pool label", l);
    }
    k.check_sku(ctx, &p.sku);
    if ctx.member(
        PlanCode::UnknownRegion,
        &p.region,
        &k.plan_regions,
        format!(
            "pool region `{}` is not one of the plan's regions",
            p.region.get()
        ),
        "not in `plan.regions`",
        "plan regions",
    ) {
        if let Some(pc) = pc {
            if pc.skus.contains_key(p.sku.get()) && !pc.offered(p.sku.get(), p.region.get()) {
                ctx.err(
                    PlanCode::SkuNotOffered,
                    p.sku.span(),
                    format!(
                        "`{}` is not offered in `{}` according to the catalog",
                        p.sku.get(),
                        p.region.get()
                    ),
                    "not offered in this region",
                    "pick a region where the SKU is sold (`gpuplan catalog --sku NAME`)".into(),
                );
            }
        }
    }
}

/// Keys that hold only for some providers or capacities.
fn capacity_keys(ctx: &mut Ctx<'_>, p: &Sp<Pool>, k: &Known<'_>) {
    if let Some(c) = &p.capacity {
        if c.get().is_block() && !crate::cloud::profile(k.provider).capacity_block {
            ctx.err(
                PlanCode::CapacityBlockNotAws,
                c.span(),
                "`capacity-block` is an EC2 Capacity Block for ML, which only AWS sells".into(),
                "AWS only",
                "use `capacity-reservation` (an Azure capacity reservation group) instead".into(),
            );
        }
    }
    if let Some(m) = &p.mig_manager {
        if *m.get() == crate::plan::raw::MigManager::Aks
            && !crate::cloud::profile(k.provider).managed_mig
        {
            ctx.err(
                PlanCode::InvalidValue,
                m.span(),
                "`mig_manager = \"aks\"` is AKS's managed MIG (`gpu_instance`); EKS has none"
                    .into(),
                "Azure only",
                "use `gpu-operator` (the GPU Operator's mig-manager applies mig-parted layouts)"
                    .into(),
            );
        }
    }
    if let Some(h) = &p.block_hours {
        let x = *h.get();
        let sold = crate::cloud::profile(k.provider).sells_block(x);
        if !p.capacity().is_block() {
            ctx.err(
                PlanCode::ConflictingKeys,
                h.span(),
                "`block_hours` is the length of a Capacity Block, but this pool is not `capacity = \"capacity-block\"`".into(),
                "not a Capacity Block",
                "remove `block_hours`, or set `capacity = \"capacity-block\"`".into(),
            );
        } else if !sold {
            ctx.err(
                PlanCode::OutOfRange,
                h.span(),
                format!("`block_hours = {}` is not a Capacity Block length", fmt_num(x)),
                "not sold",
                "EC2 sells blocks of 24 to 336 hours in 24-hour steps, then up to 4368 hours (182 days) in 168-hour steps".into(),
            );
        }
    }
}

/// Its node count, MIG layouts and the workloads it names.
fn sizes(
    ctx: &mut Ctx<'_>,
    p: &Sp<Pool>,
    workloads: &IndexMap<String, usize>,
    workload_names: &[String],
) {
    ctx.count("nodes", &p.nodes, limits::POOL_NODES);
    if let Some(layout) = &p.mig_layout {
        for (_, n) in layout.iter() {
            ctx.range_i("mig_layout count", n, limits::MIG_INSTANCES);
        }
    }
    if let Some(layouts) = &p.mig_layouts {
        for e in layouts.get() {
            for (_, n) in e.layout.iter() {
                ctx.range_i("mig_layouts count", n, limits::MIG_INSTANCES);
            }
            ctx.range_i("mig_layouts gpus", &e.gpus, limits::MIG_LAYOUT_GPUS);
        }
        if layouts.get().is_empty() {
            ctx.err(
                PlanCode::OutOfRange,
                layouts.span(),
                "`mig_layouts` is empty".into(),
                "no layout",
                "give at least one `{ layout = { PROFILE = COUNT }, gpus = N }`, or remove the key"
                    .into(),
            );
        }
    }
    for w in &p.workloads {
        if !workloads.contains_key(w.get()) {
            ctx.err(
                PlanCode::UnknownReference,
                w.span(),
                format!(
                    "pool `{}` names workload `{}`, which the plan does not define",
                    p.name.get(),
                    w.get()
                ),
                "no such workload",
                suggest(w.get(), workload_names, "workloads"),
            );
        }
    }
}

/// A pool that names another's `pool_label` is one node size of that pool: the label names
/// a pool of the plan that is its own first size, of the same region, GPU model, capacity
/// and sharing settings, in another size; never MIG (a layout is a size's own) or capacity
/// bought per instance type (Capacity Blocks, capacity reservations).
pub(super) fn pool_labels(
    ctx: &mut Ctx<'_>,
    pools: &[&crate::plan::raw::Pool],
    pc: Option<&crate::catalog::ProviderCatalog>,
) {
    use crate::plan::raw::{Capacity, Sharing};
    let names: Vec<String> = pools.iter().map(|p| p.name.get().clone()).collect();
    let gpu = |p: &crate::plan::raw::Pool| {
        pc.and_then(|c| c.skus.get(p.sku.get()))
            .map(|s| s.gpu_model.clone())
    };
    for &p in pools {
        let Some(label) = p.pool_label.as_ref().filter(|l| l.get() != p.name.get()) else {
            continue;
        };
        let Some(&first) = pools.iter().find(|q| q.name.get() == label.get()) else {
            ctx.err(
                PlanCode::UnknownReference,
                label.span(),
                format!(
                    "pool `{}` takes the label of pool `{}`, which the plan does not define",
                    p.name.get(),
                    label.get()
                ),
                "no such pool",
                suggest(label.get(), &names, "pools"),
            );
            continue;
        };
        let per_instance = Capacity::is_held_capacity;
        let mig = Sharing::is_partitioned;
        let replicas =
            |q: &crate::plan::raw::Pool| q.time_slicing_replicas.as_ref().map(|r| *r.get());
        let differs = if first
            .pool_label
            .as_ref()
            .is_some_and(|l| l.get() != first.name.get())
        {
            Some(format!(
                "`{}` is itself a size of another pool",
                label.get()
            ))
        } else if first.sku.get() == p.sku.get() {
            Some(format!(
                "both are `{}`: the sizes of one pool differ",
                p.sku.get()
            ))
        } else if first.region.get() != p.region.get() {
            Some("their regions differ".to_owned())
        } else if gpu(first) != gpu(p) {
            Some("their GPU models differ".to_owned())
        } else if first.capacity() != p.capacity() || per_instance(p.capacity()) {
            Some("their capacity differs, or is bought per instance type".to_owned())
        } else if first.sharing() != p.sharing()
            || mig(p.sharing())
            || replicas(first) != replicas(p)
        {
            Some("their sharing differs, or is MIG (a layout is a node size's own)".to_owned())
        } else {
            None
        };
        if let Some(why) = differs {
            ctx.err(
                PlanCode::ConflictingKeys,
                label.span(),
                format!(
                    "pool `{}` cannot be a node size of pool `{}`: {why}",
                    p.name.get(),
                    label.get()
                ),
                "not a size of that pool",
                "the sizes of one pool share region, GPU model, capacity and sharing (whole GPUs or time-sliced); remove `pool_label` to keep it a pool of its own".into(),
            );
        }
    }
}
