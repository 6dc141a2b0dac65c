//! Second pass: what the plan means. Collects every problem instead of stopping at the first.

use std::ops::Range;
use std::sync::Arc;

use indexmap::IndexMap;

use super::limits;
use super::load::did_you_mean;
use super::raw::{Count, Kind, RawPlan, Sp};
use super::{Date, Plan, PlanCode};
use crate::catalog::Catalog;
use crate::diag::Diag;
use crate::source::SourceFile;

struct Ctx<'a> {
    file: &'a Arc<SourceFile>,
    diags: Vec<Diag>,
}

impl Ctx<'_> {
    fn err(&mut self, code: PlanCode, span: Range<usize>, msg: String, label: &str, help: String) {
        self.diags.push(
            Diag::error(code, self.file, span, msg)
                .label(label)
                .help(help),
        );
    }

    /// Report `v` unless it is one of `known`, suggesting the closest; true when it is known.
    fn member(
        &mut self,
        code: PlanCode,
        v: &Sp<String>,
        known: &[String],
        msg: String,
        label: &str,
        what: &str,
    ) -> bool {
        match unknown_member(self.file, code, v, known, msg, label, what) {
            Some(d) => {
                self.diags.push(d);
                false
            }
            None => true,
        }
    }

    fn dns_label(&mut self, what: &str, v: &Sp<String>) {
        if let Some(why) = dns1123_problem(v.get()) {
            self.err(
                PlanCode::InvalidName,
                v.span(),
                format!(
                    "{what} `{}` is not a DNS-1123 label: {why}",
                    crate::core::excerpt(v.get(), 80)
                ),
                "not a DNS-1123 label",
                "use lowercase letters, digits and `-`, start and end with a letter or digit, at most 63 characters".into(),
            );
        }
    }

    fn range_f(&mut self, key: &str, v: &Sp<f64>, r: limits::Real) {
        let limits::Real {
            lo,
            lo_incl,
            hi,
            hi_incl,
        } = r;
        let x = *v.get();
        let ok = x.is_finite()
            && (if lo_incl { x >= lo } else { x > lo })
            && (if hi_incl { x <= hi } else { x < hi });
        if !ok {
            let lo_s = if lo_incl { "[" } else { "(" };
            let hi_s = if hi_incl { "]" } else { ")" };
            let hi_txt = if hi.is_infinite() {
                "∞".to_owned()
            } else {
                fmt_num(hi)
            };
            self.err(
                PlanCode::OutOfRange,
                v.span(),
                format!("`{key} = {}` is out of range", fmt_num(x)),
                "out of range",
                format!("`{key}` must be in {lo_s}{}, {hi_txt}{hi_s}", fmt_num(lo)),
            );
        }
    }

    fn range_i(&mut self, key: &str, v: &Sp<i64>, r: limits::Int) {
        let limits::Int { lo, hi } = r;
        let x = *v.get();
        if !(lo..=hi).contains(&x) {
            self.err(
                PlanCode::OutOfRange,
                v.span(),
                format!("`{key} = {x}` is out of range"),
                "out of range",
                format!("`{key}` must be an integer from {lo} to {hi}"),
            );
        }
    }

    /// `fixed_min` bounds a plain integer; `min_floor` the `min` of a range.
    fn count(&mut self, key: &str, v: &Sp<Count>, c: limits::Count) {
        let limits::Count {
            fixed_min,
            min_floor,
            max_cap,
        } = c;
        match *v.get() {
            Count::Fixed(n) if n < fixed_min || n > max_cap => self.err(
                PlanCode::OutOfRange,
                v.span(),
                format!("`{key} = {n}` is out of range"),
                "out of range",
                format!(
                    "`{key}` must be from {fixed_min} to {max_cap}, or `{{ min = .., max = .. }}`"
                ),
            ),
            Count::Range { min, max }
                if min < min_floor || max < 1 || max > max_cap || min > max =>
            {
                self.err(
                    PlanCode::OutOfRange,
                    v.span(),
                    format!("`{key} = {{ min = {min}, max = {max} }}` is not a valid range"),
                    "invalid range",
                    format!("need {min_floor} <= min <= max, 1 <= max <= {max_cap}"),
                )
            }
            _ => {}
        }
    }
}

/// `replicas` of a gang workload counts members: a multiple of `nodes`, and `gangs x nodes`
/// when `gangs` is given too; `gangs` means nothing without a gang.
fn gang_counts(ctx: &mut Ctx<'_>, w: &Sp<crate::plan::raw::Workload>) {
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

/// Why a name is not a DNS-1123 label, if it is not one.
pub(super) fn dns1123_problem(s: &str) -> Option<&'static str> {
    if s.is_empty() {
        return Some("it is empty");
    }
    if s.len() > 63 {
        return Some("it is longer than 63 characters");
    }
    if !s
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    {
        return Some("only lowercase letters, digits and `-` are allowed");
    }
    if s.starts_with('-') || s.ends_with('-') {
        return Some("it must start and end with a letter or digit");
    }
    None
}

fn fmt_num(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{x:.0}")
    } else {
        format!("{x}")
    }
}

fn date_of(ctx: &mut Ctx<'_>, key: &str, v: &Sp<super::raw::PlanDate>) -> Option<Date> {
    let dt = &v.get().0;
    match (&dt.date, &dt.time) {
        (Some(d), None) => Date::new(i32::from(d.year), d.month, d.day),
        _ => {
            ctx.err(
                PlanCode::InvalidValue,
                v.span(),
                format!("`{key}` must be a date like 2026-11-02, not `{dt}`"),
                "not a plain date",
                "write the date without a time, e.g. `2027-03-31`".into(),
            );
            None
        }
    }
}

fn unique<'a>(
    ctx: &mut Ctx<'_>,
    what: &str,
    names: impl Iterator<Item = &'a Sp<String>>,
) -> IndexMap<String, usize> {
    let mut seen: IndexMap<String, (usize, Range<usize>)> = IndexMap::new();
    for (i, n) in names.enumerate() {
        if let Some((_, first)) = seen.get(n.get()) {
            let first = first.clone();
            ctx.diags.push(
                Diag::error(
                    PlanCode::DuplicateName,
                    ctx.file,
                    n.span(),
                    format!("{what} `{}` is defined twice", n.get()),
                )
                .label("second definition")
                .also(first, "first defined here")
                .help(format!(
                    "{what} names must be unique; rename or merge one of them"
                )),
            );
        } else {
            seen.insert(n.get().clone(), (i, n.span()));
        }
    }
    seen.into_iter().map(|(k, (i, _))| (k, i)).collect()
}

/// An error at `v` unless it is one of `known`, suggesting the closest of them.
pub(crate) fn unknown_member(
    file: &Arc<SourceFile>,
    code: PlanCode,
    v: &Sp<String>,
    known: &[String],
    msg: String,
    label: &str,
    what: &str,
) -> Option<Diag> {
    if known.iter().any(|k| k == v.get()) {
        return None;
    }
    Some(
        Diag::error(code, file, v.span(), msg)
            .label(label)
            .help(suggest(v.get(), known, what)),
    )
}

fn suggest(word: &str, known: &[String], what: &str) -> String {
    match did_you_mean(word, known) {
        Some(b) => format!("did you mean `{b}`?"),
        // A plan that defines none: say so, rather than list nothing.
        None if known.is_empty() => format!("the plan defines no {what}"),
        None if known.len() <= 12 => format!(
            "known {what}: {}",
            known
                .iter()
                .map(|k| format!("`{k}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        None => format!("run `gpuplan catalog` to list the known {what}"),
    }
}

pub(super) fn validate(
    file: Arc<SourceFile>,
    raw: RawPlan,
    catalog: &Catalog,
) -> Result<Plan, Vec<Diag>> {
    let mut ctx = Ctx {
        file: &file,
        diags: Vec::new(),
    };
    if *raw.version.get() != 1 {
        ctx.err(
            PlanCode::UnsupportedVersion,
            raw.version.span(),
            format!(
                "plan format version `{}` is not supported",
                raw.version.get()
            ),
            "unsupported version",
            "this gpuplan reads `version = 1`".into(),
        );
    }
    let meta = raw.plan.get();
    ctx.dns_label("plan name", &meta.name);
    let provider = *meta.provider.get();
    let pc = catalog.provider(provider);
    let known_regions: Vec<String> = pc.map(|p| p.regions.clone()).unwrap_or_default();
    if meta.regions.is_empty() {
        ctx.err(
            PlanCode::OutOfRange,
            meta.regions.span(),
            "`regions` is empty".into(),
            "no regions",
            "list at least one candidate region, in order of preference".into(),
        );
    }
    unique(&mut ctx, "region", meta.regions.iter());
    for r in meta.regions.iter() {
        ctx.member(
            PlanCode::UnknownRegion,
            r,
            &known_regions,
            format!("region `{}` is not in the {provider} catalog", r.get()),
            "unknown region",
            "regions",
        );
    }
    if let Some(h) = &meta.hours_per_month {
        ctx.range_f("hours_per_month", h, limits::HOURS_PER_MONTH);
    }
    if let Some(b) = &meta.monthly_budget {
        ctx.range_f("monthly_budget", b, limits::MONTHLY_BUDGET);
    }
    if let Some(sub) = &meta.subscription {
        let guid = sub.get().split('-').map(str::len).collect::<Vec<_>>() == [8, 4, 4, 4, 12]
            && sub.get().chars().all(|c| c == '-' || c.is_ascii_hexdigit());
        if *meta.provider.get() != crate::plan::raw::Provider::Azure {
            ctx.err(
                PlanCode::SubscriptionNotAzure,
                sub.span(),
                "`subscription` is an Azure subscription ID; AWS accounts come from the credential chain".into(),
                "Azure only",
                "remove `subscription`; the AWS SDK's default chain picks the account".into(),
            );
        } else if !guid {
            ctx.err(
                PlanCode::InvalidSubscription,
                sub.span(),
                format!("subscription `{}` is not a subscription ID", sub.get()),
                "expected a GUID",
                "an Azure subscription ID looks like 00000000-0000-0000-0000-000000000000 (`az account show --query id`)".into(),
            );
        }
    }
    if let Some(c) = &raw.cluster {
        if let Some(n) = &c.name {
            ctx.dns_label("cluster name", n);
        }
        if let Some(v) = &c.daemonset_cpu {
            ctx.range_f("daemonset_cpu", v, limits::DAEMONSET_CPU);
        }
    }

    let plan_regions: Vec<String> = meta.regions.iter().map(|r| r.get().clone()).collect();
    let sku_names: Vec<String> = pc
        .map(|p| p.skus.keys().cloned().collect())
        .unwrap_or_default();
    let gpu_names: Vec<String> = catalog.gpus.keys().cloned().collect();
    let check_sku = |ctx: &mut Ctx<'_>, s: &Sp<String>| {
        if catalog.sku(provider, s.get()).is_none() {
            ctx.err(
                PlanCode::UnknownSku,
                s.span(),
                format!("SKU `{}` is not in the {provider} catalog", s.get()),
                "unknown SKU",
                suggest(s.get(), &sku_names, "SKUs"),
            );
        }
    };

    // Workloads
    let workloads = unique(&mut ctx, "workload", raw.workload.iter().map(|w| &w.name));
    for w in &raw.workload {
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
        gang_counts(&mut ctx, w);
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
        }
        if let Some(models) = &w.gpu_models {
            for m in models.iter() {
                if catalog.gpu(m.get()).is_none() {
                    ctx.err(
                        PlanCode::UnknownGpuModel,
                        m.span(),
                        format!("GPU model `{}` is not in the catalog", m.get()),
                        "unknown GPU model",
                        suggest(m.get(), &gpu_names, "GPU models"),
                    );
                }
            }
        }
        if let Some(skus) = &w.skus {
            for s in skus.iter() {
                check_sku(&mut ctx, s);
            }
        }
    }

    // Pools
    let pools = unique(&mut ctx, "pool", raw.pool.iter().map(|p| &p.name));
    let workload_names: Vec<String> = workloads.keys().cloned().collect();
    for p in &raw.pool {
        ctx.dns_label("pool name", &p.name);
        if let Some(l) = &p.pool_label {
            ctx.dns_label("pool label", l);
        }
        check_sku(&mut ctx, &p.sku);
        if ctx.member(
            PlanCode::UnknownRegion,
            &p.region,
            &plan_regions,
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
        if let Some(c) = &p.capacity {
            if *c.get() == crate::plan::raw::Capacity::CapacityBlock
                && *raw.plan.provider.get() != crate::plan::raw::Provider::Aws
            {
                ctx.err(
                    PlanCode::CapacityBlockNotAws,
                    c.span(),
                    "`capacity-block` is an EC2 Capacity Block for ML, which only AWS sells".into(),
                    "AWS only",
                    "use `capacity-reservation` (an Azure capacity reservation group) instead"
                        .into(),
                );
            }
        }
        if let Some(m) = &p.mig_manager {
            if *m.get() == crate::plan::raw::MigManager::Aks
                && *raw.plan.provider.get() != crate::plan::raw::Provider::Azure
            {
                ctx.err(
                    PlanCode::InvalidValue,
                    m.span(),
                    "`mig_manager = \"aks\"` is AKS's managed MIG (`gpu_instance`); EKS has none".into(),
                    "Azure only",
                    "use `gpu-operator` (the GPU Operator's mig-manager applies mig-parted layouts)"
                        .into(),
                );
            }
        }
        if let Some(h) = &p.block_hours {
            let x = *h.get();
            let sold = x.fract() == 0.0
                && ((24.0..=336.0).contains(&x) && x % 24.0 == 0.0
                    || (336.0..=4368.0).contains(&x) && x % 168.0 == 0.0);
            if p.capacity() != crate::plan::raw::Capacity::CapacityBlock {
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
                    "give at least one `{ layout = { PROFILE = COUNT }, gpus = N }`, or remove the key".into(),
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
                    suggest(w.get(), &workload_names, "workloads"),
                );
            }
        }
    }

    let pool_list: Vec<&crate::plan::raw::Pool> = raw.pool.iter().map(|p| p.get()).collect();
    pool_labels(&mut ctx, &pool_list, pc);

    // Quota: a family that no SKU of the catalog draws on would switch GP014 off without a
    // word, so it must be one of them (or one a refresh read from the provider).
    let mut families: Vec<String> = pc
        .map(|p| {
            p.skus
                .values()
                .flat_map(|s| [s.quota_family.clone(), s.spot_quota().to_owned()])
                .chain(p.quotas.values().map(|q| q.family.clone()))
                .collect()
        })
        .unwrap_or_default();
    families.sort();
    families.dedup();
    for q in &raw.quota {
        let key = crate::catalog::quota_key(q.family.get());
        if !families.iter().any(|f| crate::catalog::quota_key(f) == key) {
            let help = match did_you_mean(q.family.get(), &families) {
                Some(best) => format!("did you mean `{best}`? a plan's quota names the family the SKUs draw on (`gpuplan catalog --sku NAME` shows it)"),
                None => "a plan's quota names the family the SKUs draw on (`gpuplan catalog --sku NAME` shows it)".to_owned(),
            };
            ctx.err(
                PlanCode::UnknownQuotaFamily,
                q.family.span(),
                format!(
                    "quota family `{}` is not one any {provider} SKU in the catalog draws on",
                    q.family.get()
                ),
                "unknown quota family",
                help,
            );
        }
    }
    for q in &raw.quota {
        ctx.member(
            PlanCode::UnknownRegion,
            &q.region,
            &known_regions,
            format!(
                "quota region `{}` is not in the {provider} catalog",
                q.region.get()
            ),
            "unknown region",
            "regions",
        );
        ctx.range_f("vcpus", &q.vcpus, limits::QUOTA_VCPUS);
    }

    // Decisions
    let fault_domains: Vec<String> = raw
        .workload
        .iter()
        .filter_map(|w| w.fault_domain.as_ref().map(|f| f.get().clone()))
        .collect();
    let decisions = unique(
        &mut ctx,
        "decision for fault domain",
        raw.decision.iter().map(|d| &d.fault_domain),
    );
    for d in &raw.decision {
        date_of(&mut ctx, "date", &d.date);
        ctx.member(
            PlanCode::UnknownReference,
            &d.fault_domain,
            &fault_domains,
            format!(
                "decision for fault domain `{}`, which no workload names",
                d.fault_domain.get()
            ),
            "no workload has this `fault_domain`",
            "fault domains",
        );
        for (key, v) in [("decided_by", &d.decided_by), ("reason", &d.reason)] {
            if v.trim().is_empty() {
                ctx.err(
                    PlanCode::EmptyValue,
                    v.span(),
                    format!("`{key}` is empty"),
                    "empty",
                    format!("a decision needs `{key}`: accountability is the point"),
                );
            }
        }
    }

    // Allows (the rule registry checks the rule ids they name: `rules::validate_entries`)
    let pool_names: Vec<String> = pools.keys().cloned().collect();
    for a in &raw.allow {
        match (&a.workload, &a.pool) {
            (Some(w), None) if !workloads.contains_key(w.get()) => ctx.err(
                PlanCode::UnknownReference,
                w.span(),
                format!(
                    "allow names workload `{}`, which the plan does not define",
                    w.get()
                ),
                "no such workload",
                suggest(w.get(), &workload_names, "workloads"),
            ),
            (None, Some(p)) if !pools.contains_key(p.get()) => ctx.err(
                PlanCode::UnknownReference,
                p.span(),
                format!(
                    "allow names pool `{}`, which the plan does not define",
                    p.get()
                ),
                "no such pool",
                suggest(p.get(), &pool_names, "pools"),
            ),
            (Some(w), Some(_)) => ctx.err(
                PlanCode::ConflictingKeys,
                w.span(),
                "an allow names both a workload and a pool".into(),
                "one target per allow",
                "write one `[[allow]]` per workload or pool".into(),
            ),
            // An allow that names neither is the registry's to judge: only plan-wide rules
            // take one (`rules::validate_entries`).
            _ => {}
        }
        for (key, v) in [("reason", &a.reason), ("approved_by", &a.approved_by)] {
            if v.trim().is_empty() {
                ctx.err(
                    PlanCode::EmptyValue,
                    v.span(),
                    format!("`{key}` is empty"),
                    "empty",
                    format!("a suppression needs `{key}`"),
                );
            }
        }
        if let Some(e) = &a.expires {
            date_of(&mut ctx, "expires", e);
        }
    }

    if ctx.diags.is_empty() {
        Ok(Plan {
            file,
            raw,
            workloads,
            pools,
            decisions,
        })
    } else {
        Err(ctx.diags)
    }
}

/// The date an allow expires, if it has a valid one (validated above).
pub(super) fn allow_expiry(a: &super::raw::Allow) -> Option<Date> {
    let dt = &a.expires.as_ref()?.get().0;
    let d = dt.date.as_ref()?;
    Date::new(i32::from(d.year), d.month, d.day)
}

/// A pool that names another's `pool_label` is one node size of that pool: the label names
/// a pool of the plan that is its own first size, of the same region, GPU model, capacity
/// and sharing settings, in another size; never MIG (a layout is a size's own) or capacity
/// bought per instance type (Capacity Blocks, capacity reservations).
fn pool_labels(
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
        let per_instance = |c: Capacity| match c {
            Capacity::CapacityBlock | Capacity::CapacityReservation => true,
            Capacity::OnDemand | Capacity::Spot | Capacity::Reserved1y | Capacity::Reserved3y => {
                false
            }
        };
        let mig = |s: Sharing| match s {
            Sharing::Mig => true,
            Sharing::Dedicated | Sharing::TimeSlicing | Sharing::Mps | Sharing::SharedServer => {
                false
            }
        };
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dns1123_labels() {
        assert_eq!(dns1123_problem("chat-api"), None);
        assert!(dns1123_problem("Chat").is_some());
        assert!(dns1123_problem("-a").is_some());
        assert!(dns1123_problem(&"a".repeat(64)).is_some());
        assert!(dns1123_problem("").is_some());
        assert!(dns1123_problem("a\"b").is_some());
    }
}
