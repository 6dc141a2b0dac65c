//! The plan's header: its format version, `[plan]` and `[cluster]`.

use super::{limits, unique, Ctx, Known, PlanCode};
use crate::plan::raw::RawPlan;

pub(super) fn header(ctx: &mut Ctx<'_>, raw: &RawPlan, k: &Known<'_>) {
    let meta = raw.plan.get();
    let provider = k.provider;
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
    ctx.dns_label("plan name", &meta.name);
    if meta.regions.is_empty() {
        ctx.err(
            PlanCode::OutOfRange,
            meta.regions.span(),
            "`regions` is empty".into(),
            "no regions",
            "list at least one candidate region, in order of preference".into(),
        );
    }
    unique(ctx, "region", meta.regions.iter());
    for r in meta.regions.iter() {
        ctx.member(
            PlanCode::UnknownRegion,
            r,
            &k.known_regions,
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
        if !crate::cloud::profile(*meta.provider.get()).subscription {
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
}
