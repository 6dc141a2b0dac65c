//! One `[[workload]]`: its names, bounds and gang arithmetic, and the catalog names it uses.

use super::{limits, suggest, Ctx, Known, PlanCode};
use crate::diag::Diag;
use crate::plan::raw::{Count, Kind, Sp, Workload};

pub(super) fn workload(ctx: &mut Ctx<'_>, w: &Sp<Workload>, k: &Known<'_>) {
    bounds(ctx, w);
    catalog_names(ctx, w, k);
}

/// A workload's `hours_per_month` within the plan's month (`[plan] hours_per_month`, else
/// 730): every stage prices, checks and blocks the same hours, so a figure no month holds is
/// refused where it is written rather than cut by some stages and not others.
pub(super) fn within_the_month(
    ctx: &mut Ctx<'_>,
    w: &Sp<Workload>,
    raw: &crate::plan::raw::RawPlan,
) {
    let Some(h) = &w.hours_per_month else {
        return;
    };
    let (month, said) = raw
        .plan
        .hours_per_month
        .as_ref()
        .map_or((crate::core::HOURS_PER_MONTH, "the default month"), |m| {
            (*m.get(), "`[plan] hours_per_month`")
        });
    if *h.get() > month {
        ctx.err(
            PlanCode::InvalidValue,
            h.span(),
            format!(
                "`hours_per_month` = {} for `{}` is more than the plan's month of {} hours ({said})",
                h.get(),
                w.name.get(),
                month
            ),
            "more hours than the month has",
            format!(
                "set it to at most {month}, or raise `[plan] hours_per_month` if the month is longer"
            ),
        );
    }
}

/// Its names and every number's bounds.
fn bounds(ctx: &mut Ctx<'_>, w: &Sp<Workload>) {
    ctx.dns_label("workload name", &w.name);
    ctx.dns_label("team", &w.team);
    if let Some(r) = &w.replicas {
        ctx.count("replicas", r, limits::REPLICAS);
    }
    if let Some(n) = &w.nodes {
        ctx.range_i("nodes", n, limits::GANG_NODES);
    }
    if let Some(g) = &w.gangs {
        ctx.count("gangs", g, limits::GANGS);
    }
    if let Some(a) = &w.availability_floor {
        ctx.range_i("availability_floor", a, limits::AVAILABILITY_FLOOR);
    }
    gang_counts(ctx, w);
    if let Some(g) = &w.gpus {
        ctx.range_i("gpus", g, limits::GPUS);
    }
    if let Some(f) = &w.gpu_fraction {
        ctx.range_f("gpu_fraction", f, limits::GPU_FRACTION);
        if let Some(g) = &w.gpus {
            ctx.diags.push(
                Diag::error(
                    PlanCode::ConflictingKeys,
                    ctx.file,
                    f.span(),
                    "`gpus` and `gpu_fraction` are both set",
                )
                .label("a fraction of one GPU")
                .also(g.span(), "whole GPUs")
                .help("a replica takes whole GPUs or a fraction of one: keep one of the two"),
            );
        }
    }
    for (key, v, r) in [
        ("gpu_memory_gib", &w.gpu_memory_gib, limits::GPU_MEMORY_GIB),
        ("kv_cache_gib", &w.kv_cache_gib, limits::KV_CACHE_GIB),
        ("cpu", &w.cpu, limits::CPU),
        ("memory_gib", &w.memory_gib, limits::MEMORY_GIB),
        (
            "checkpoint_minutes",
            &w.checkpoint_minutes,
            limits::CHECKPOINT_MINUTES,
        ),
        (
            "tokens_per_second",
            &w.tokens_per_second,
            limits::TOKENS_PER_SECOND,
        ),
        (
            "ttft_p95_seconds",
            &w.ttft_p95_seconds,
            limits::TTFT_P95_SECONDS,
        ),
    ] {
        if let Some(v) = v {
            ctx.range_f(key, v, r);
        }
    }
    if let Some(v) = &w.restart_minutes {
        ctx.range_f("restart_minutes", v, limits::RESTART_MINUTES);
    }
    if let Some(v) = w
        .ttft_p95_seconds
        .as_ref()
        .filter(|_| w.kind() != Kind::Inference)
    {
        ctx.err(
            PlanCode::InvalidValue,
            v.span(),
            format!(
                "`ttft_p95_seconds` is a serving objective, and `{}` is not `kind = \"inference\"`",
                w.name.get()
            ),
            "time to first token of a non-inference workload",
            "drop `ttft_p95_seconds`, or set `kind = \"inference\"` if it serves requests".into(),
        );
    }
    if let Some(v) = &w.hours_per_month {
        ctx.range_f("hours_per_month", v, limits::HOURS_PER_MONTH);
    }
    typical(ctx, w);
    if let Some(v) = &w.utilization {
        ctx.range_f("utilization", v, limits::UTILIZATION);
    }
    if let Some(fd) = &w.fault_domain {
        ctx.dns_label("fault domain", fd);
    }
    if let Some(m) = &w.model {
        ctx.range_f(
            "model.params_billion",
            &m.params_billion,
            limits::PARAMS_BILLION,
        );
    }
    if let Some(s) = &w.server {
        if let Some(u) = &s.gpu_memory_utilization {
            ctx.range_f(
                "server.gpu_memory_utilization",
                u,
                limits::GPU_MEMORY_UTILIZATION,
            );
        }
        if let Some(tp) = &s.tensor_parallel_size {
            ctx.range_i("server.tensor_parallel_size", tp, limits::TENSOR_PARALLEL);
        }
        if let Some(n) = &s.max_num_seqs {
            ctx.range_i("server.max_num_seqs", n, limits::MAX_NUM_SEQS);
        }
    }
}

/// The GPU models and SKUs it names are the catalog's.
fn catalog_names(ctx: &mut Ctx<'_>, w: &Sp<Workload>, k: &Known<'_>) {
    if let Some(models) = &w.gpu_models {
        for m in models.iter() {
            if k.catalog.gpu(m.get()).is_none() {
                ctx.err(
                    PlanCode::UnknownGpuModel,
                    m.span(),
                    format!("GPU model `{}` is not in the catalog", m.get()),
                    "unknown GPU model",
                    suggest(m.get(), &k.gpu_names, "GPU models"),
                );
            }
        }
    }
    if let Some(skus) = &w.skus {
        for s in skus.iter() {
            k.check_sku(ctx, s);
        }
    }
}

/// `replicas` of a gang workload counts members: a multiple of `nodes`, and `gangs x nodes`
/// when `gangs` is given too; `gangs` means nothing without a gang.
fn gang_counts(ctx: &mut Ctx<'_>, w: &Sp<Workload>) {
    let nodes = w.nodes.as_ref().map_or(1, |n| *n.get());
    let ends = |c: Count| match c {
        Count::Fixed(n) => (n, n),
        Count::Range { min, max } => (min, max),
    };
    if let (Some(g), true) = (&w.gangs, nodes <= 1) {
        ctx.err(
            PlanCode::ConflictingKeys,
            g.span(),
            "`gangs` counts gangs of `nodes`, but this workload has no gang (`nodes` is 1)".into(),
            "no gang",
            "set `nodes` to the members that start together, or use `replicas`".into(),
        );
        return;
    }
    let Some(r) = &w.replicas else { return };
    if nodes <= 1 {
        return;
    }
    let (lo, hi) = ends(*r.get());
    if lo % nodes != 0 || hi % nodes != 0 {
        ctx.err(
            PlanCode::InvalidValue,
            r.span(),
            format!(
                "`replicas` counts every member of the gangs of `nodes = {nodes}`, so it must be a multiple of {nodes}"
            ),
            "not a multiple of `nodes`",
            format!(
                "for {lo} gang(s) of {nodes} write `gangs = {lo}` (or `replicas = {}`); for one gang of {nodes}, drop `replicas`",
                lo * nodes
            ),
        );
        return;
    }
    if let Some(g) = &w.gangs {
        let (glo, ghi) = ends(*g.get());
        if (glo * nodes, ghi * nodes) != (lo, hi) {
            ctx.err(
                PlanCode::ConflictingKeys,
                g.span(),
                format!(
                    "`gangs` and `replicas` disagree: {glo} gang(s) of {nodes} is {} members, `replicas` says {lo}",
                    glo * nodes
                ),
                "disagrees with `replicas`",
                "keep one of the two: `gangs` counts gangs, `replicas` counts their members".into(),
            );
        }
    }
}

/// `typical_replicas` lies between the replicas' `min` and `max`.
fn typical(ctx: &mut Ctx<'_>, w: &Sp<Workload>) {
    let Some(t) = &w.typical_replicas else {
        return;
    };
    let (min, max) = match w.replicas.as_ref().or(w.gangs.as_ref()).map(|r| *r.get()) {
        Some(crate::plan::raw::Count::Range { min, max }) => (min as f64, max as f64),
        Some(crate::plan::raw::Count::Fixed(n)) => (n as f64, n as f64),
        None => (1.0, 1.0),
    };
    let v = *t.get();
    if !v.is_finite() || v < min || v > max {
        ctx.err(
            PlanCode::OutOfRange,
            t.span(),
            format!(
                "`typical_replicas = {}` is outside the replicas' range {}..={}",
                crate::core::num(v),
                crate::core::num(min),
                crate::core::num(max)
            ),
            "outside min..=max",
            "give what the workload runs on average, between `replicas.min` and `replicas.max`"
                .into(),
        );
    }
}
