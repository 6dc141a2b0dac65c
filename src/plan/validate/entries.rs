//! The plan's entries beside workloads and pools: `[[quota]]`, `[[decision]]`, `[[allow]]`.

use indexmap::IndexMap;

use super::{date_of, limits, suggest, unique, Ctx, Known, PlanCode};
use crate::plan::load::did_you_mean;
use crate::plan::raw::RawPlan;

pub(super) fn quotas(ctx: &mut Ctx<'_>, raw: &RawPlan, k: &Known<'_>) {
    let (pc, provider) = (k.pc, k.provider);
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
            &k.known_regions,
            format!(
                "quota region `{}` is not in the {provider} catalog",
                q.region.get()
            ),
            "unknown region",
            "regions",
        );
        ctx.range_f("vcpus", &q.vcpus, limits::QUOTA_VCPUS);
    }
}

/// Each decision dated, naming a fault domain a workload has, with who and why.
pub(super) fn decisions(ctx: &mut Ctx<'_>, raw: &RawPlan) -> IndexMap<String, usize> {
    // Decisions
    let fault_domains: Vec<String> = raw
        .workload
        .iter()
        .filter_map(|w| w.fault_domain.as_ref().map(|f| f.get().clone()))
        .collect();
    let decisions = unique(
        ctx,
        "decision for fault domain",
        raw.decision.iter().map(|d| &d.fault_domain),
    );
    for d in &raw.decision {
        date_of(ctx, "date", &d.date);
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
            ctx.non_empty(
                key,
                v,
                format!("a decision needs `{key}`: accountability is the point"),
            );
        }
    }
    decisions
}

/// Each allow names a workload or a pool the plan has, with who and why.
pub(super) fn allows(
    ctx: &mut Ctx<'_>,
    raw: &RawPlan,
    workloads: &IndexMap<String, usize>,
    workload_names: &[String],
    pools: &IndexMap<String, usize>,
) {
    // Allows (the rule registry checks the rule ids they name: `plan::rule_ids`)
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
                suggest(w.get(), workload_names, "workloads"),
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
            // take one (`plan::rule_ids`).
            _ => {}
        }
        for (key, v) in [("reason", &a.reason), ("approved_by", &a.approved_by)] {
            ctx.non_empty(key, v, format!("a suppression needs `{key}`"));
        }
        if let Some(e) = &a.expires {
            date_of(ctx, "expires", e);
        }
    }
}
