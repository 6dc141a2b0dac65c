use super::{Cx, Rule};
use crate::plan::raw::Capacity;

declare_rule! {
    /// # GP022 stale-provider-data
    ///
    /// ## What it does
    /// Flags provider data the plan relies on that is older than the configured age (30 days
    /// by default): prices always, spot eviction bands when the plan uses spot (a spot pool
    /// or an interruptible workload). The finding names the file and its date.
    ///
    /// ## Why is this bad?
    /// Prices move (AWS cut P-instance prices by up to ~45% in June 2025), eviction bands
    /// move with demand, and quota changes. A decision made on last year's numbers is a
    /// guess with a decimal point.
    ///
    /// ## Example
    /// An AWS plan with a spot pool, checked against the embedded spot-advisor snapshot of
    /// 2025-06-28.
    ///
    /// Use instead: newer provider files through `--catalog DIR` (live refresh is planned), or accept the age
    /// explicitly with an `[[allow]]`.
    ///
    /// ## Configuration
    /// `providers/assumptions.toml`: `check.stale_after_days`.
    ///
    /// ## Source
    /// providers/sources.toml (dates of every embedded file).
    pub struct StaleProviderData { id: "GP022", name: "stale-provider-data", severity: Warning }
}

impl Rule for StaleProviderData {
    fn check(&self, cx: &mut Cx<'_>) {
        let limit = cx.catalog.assumptions.stale_after_days;
        let uses_spot = cx
            .plan
            .pools()
            .iter()
            .any(|p| p.capacity() == Capacity::Spot)
            || cx.plan.workloads().iter().any(|w| w.interruptible());
        let provider = cx.plan.provider();
        // Price files the declared pools actually read; every price file when there are none.
        let pc = cx.catalog.provider(provider);
        let used: Vec<String> = cx
            .plan
            .pools()
            .iter()
            .filter_map(|p| pc.and_then(|pc| pc.price(p.sku.get(), p.region.get())))
            .flat_map(|p| [p.on_demand.as_ref(), p.spot.as_ref()])
            .flatten()
            .map(|p| p.source.to_string())
            .collect();
        let relied_on =
            |file: &str| cx.plan.pools().is_empty() || used.iter().any(|u| u.contains(file));
        let stale: Vec<_> = cx
            .catalog
            .sources_for(provider)
            .filter(|s| s.provider == Some(provider))
            .filter(|s| {
                (s.kind == "prices" && relied_on(&s.file)) || (s.kind == "spot-bands" && uses_spot)
            })
            .filter(|s| cx.today.days() - s.as_of.days() > limit)
            .map(|s| {
                (
                    s.file.clone(),
                    s.kind,
                    s.as_of,
                    cx.today.days() - s.as_of.days(),
                )
            })
            .collect();
        for (file, kind, as_of, age) in stale {
            cx.push(
                cx.finding(cx.plan.raw.plan.provider.span(), format!("{kind} data `{file}` is from {as_of}, {age} days old (limit {limit})"))
                    .label("provider data used")
                    .help("fetch today's data with `gpuplan catalog refresh --plan PLAN` (or run with `--live`), load newer files with `--catalog DIR`, or record the accepted age with an `[[allow]]`"),
            );
        }
    }
}
