use indexmap::IndexMap;

use super::{Cx, Rule};
use crate::catalog::{DataKind, Figure, ProviderCatalog, SpotBand};
use crate::core::Capacity;
use crate::core::Date;

declare_rule! {
    /// # GP022 stale-provider-data
    ///
    /// ## What it does
    /// Flags provider figures the plan relies on that are older than the limit for their
    /// kind, or that come from a source which records no date at all. Each figure is dated by
    /// its source (the snapshot, price table or live capture it came from), not by the day it
    /// was copied into gpuplan. The figures relied on are those of the declared pools: the
    /// on-demand price always, the spot price and eviction band of spot pools, the reserved
    /// price of reserved pools and the Capacity Block price of block pools. A plan without
    /// pools relies on the figures of every SKU its workloads may use in its regions.
    ///
    /// Limits, in days (`providers/assumptions.toml`, `check.stale_after_days_by_figure`):
    /// on-demand price 180, reserved price 180, spot price 30, spot eviction band 90,
    /// Capacity Block price 7. Other data (quota and availability from a refresh) has the
    /// file limit `check.stale_after_days`, 30 days.
    ///
    /// ## Why is this bad?
    /// Prices move (AWS cut P-instance on-demand prices by up to 45% in June 2025, so a
    /// p5.48xlarge listed at $98.32 an hour became $55.04), eviction bands move with demand
    /// (between the June and November 2025 advisor snapshots p5 went from >20% to 5-10% and
    /// g6e from 5-10% to >20%), and Capacity Block offerings sell out in days. A decision
    /// made on last year's numbers is a guess with a decimal point.
    ///
    /// ## Example
    /// An AWS spot pool in us-west-2 priced from the embedded 2025-11-30 snapshot: its spot
    /// price is far past 30 days and its band past 90.
    ///
    /// Use instead: today's figures from `gpuplan catalog refresh --plan PLAN` (or `--live`),
    /// newer files through `--catalog DIR`, or accept the age explicitly with an `[[allow]]`.
    ///
    /// ## Configuration
    /// `providers/assumptions.toml`: `check.stale_after_days_by_figure` and
    /// `check.stale_after_days`.
    ///
    /// ## Source
    /// providers/sources.toml (the date of every embedded file; `undated` marks sources that
    /// record none) and the date each refreshed row was captured.
    pub(crate) struct StaleProviderData { id: GP022, name: "stale-provider-data", severity: Warning }
}

/// A figure the plan relies on: its kind, source, date, and where it is used.
type Origin = (Figure, String, Option<Date>);

impl Rule for StaleProviderData {
    fn check(&self, cx: &mut Cx<'_>) {
        let provider = cx.plan.provider();
        let Some(pc) = cx.catalog.provider(provider) else {
            return;
        };
        let relied = relied(cx, pc);
        let stale = stale_figures(cx, pc, &relied);
        let limits = &cx.catalog.assumptions;
        let today = cx.today;
        // Per-account files a refresh writes (quota, availability) keep the file limit.
        let file_limit = limits.stale_after_days;
        let files: Vec<_> = cx
            .catalog
            .sources_for(provider)
            .filter(|s| {
                s.provider == Some(provider)
                    && matches!(s.kind, DataKind::Quota | DataKind::Availability)
            })
            .filter(|s| today.days() - s.as_of.days() > file_limit)
            .map(|s| (s.file.clone(), s.kind, s.as_of))
            .collect();
        let span = cx.plan.meta().provider.span();
        for ((figure, source, as_of), uses) in stale {
            let age = match as_of {
                Some(d) => format!(
                    "is from {d}, {} days old (the limit for {}s is {} days)",
                    today.days() - d.days(),
                    figure.as_str(),
                    limits.stale_limit(figure)
                ),
                None => "comes from a source that records no date (age unknown)".to_owned(),
            };
            let shown: Vec<&str> = uses.iter().take(4).map(String::as_str).collect();
            let more = if uses.len() > shown.len() {
                format!(" and {} more", uses.len() - shown.len())
            } else {
                String::new()
            };
            cx.push(
                cx.finding(
                    span.clone(),
                    format!(
                        "the {} of {}{more} {age}: {source}",
                        figure.as_str(),
                        shown.join(", "),
                    ),
                )
                .label("provider data used")
                .help(HELP),
            );
        }
        for (file, kind, as_of) in files {
            cx.push(
                cx.finding(
                    span.clone(),
                    format!(
                        "{kind} data `{file}` is from {as_of}, {} days old (limit {file_limit})",
                        today.days() - as_of.days()
                    ),
                )
                .label("provider data used")
                .help(HELP),
            );
        }
    }
}

/// The (SKU, region, capacity) figures that decide the plan's cost: its pools', or, with no
/// pools, those of every SKU the recommender would consider (or the workloads name).
fn relied(cx: &Cx<'_>, pc: &ProviderCatalog) -> Vec<(String, String, Capacity)> {
    let uses_spot = cx.plan.pools().iter().any(|p| p.capacity().is_evictable())
        || cx.plan.workloads().iter().any(|w| w.interruptible());
    let mut relied: Vec<(String, String, Capacity)> = Vec::new();
    if !cx.plan.pools().is_empty() {
        for p in cx.plan.pools() {
            let (sku, region) = (p.sku.get().clone(), p.region.get().clone());
            relied.push((sku.clone(), region.clone(), Capacity::OnDemand));
            if !p.capacity().is_on_demand() {
                relied.push((sku, region, p.capacity()));
            }
        }
        return relied;
    }
    let named: Vec<&str> = cx
        .plan
        .workloads()
        .iter()
        .flat_map(|w| {
            w.skus
                .iter()
                .flat_map(|s| s.get().iter().map(|x| x.get().as_str()))
        })
        .collect();
    for region in cx.plan.regions() {
        for sku in pc.skus.values() {
            // What the recommender would consider (candidate SKUs), or what is named.
            let open = if named.is_empty() {
                !sku.retired
                    && !sku.arm64
                    && sku.gpu_partition >= 1.0
                    && cx.catalog.sku_gpu(sku).is_some_and(|g| g.is_nvidia())
            } else {
                named.contains(&sku.name.as_str())
            };
            if open && pc.offered(&sku.name, region) {
                relied.push((sku.name.clone(), region.to_owned(), Capacity::OnDemand));
                if uses_spot {
                    relied.push((sku.name.clone(), region.to_owned(), Capacity::Spot));
                }
            }
        }
    }
    relied
}

/// The figures past their limit, by figure, source and date, with where each is used.
fn stale_figures(
    cx: &Cx<'_>,
    pc: &ProviderCatalog,
    relied: &[(String, String, Capacity)],
) -> IndexMap<Origin, Vec<String>> {
    let mut stale: IndexMap<Origin, Vec<String>> = IndexMap::new();
    let today = cx.today;
    let limits = &cx.catalog.assumptions;
    let mut note = |figure: Figure, source: &str, as_of: Option<Date>, at: String| {
        let old = as_of.is_none_or(|d| today.days() - d.days() > limits.stale_limit(figure));
        if old {
            let uses = stale.entry((figure, source.to_owned(), as_of)).or_default();
            if !uses.contains(&at) {
                uses.push(at);
            }
        }
    };
    for (sku, region, capacity) in relied {
        // A figure is relied on only where the SKU is sold at all.
        if !pc.offered(sku, region) {
            continue;
        }
        let at = format!("{sku} in {region}");
        let provider = cx.plan.provider();
        if let Some(p) = cx.catalog.listed(provider, sku, region, *capacity) {
            note(Figure::of(*capacity), &p.source, p.as_of, at.clone());
        }
        if capacity.is_evictable() {
            if let Some(SpotBand { source, as_of, .. }) = pc.band(sku, region) {
                note(Figure::SpotBand, source, *as_of, at.clone());
            }
        }
    }
    stale
}

const HELP: &str = "fetch today's data with `gpuplan catalog refresh --plan PLAN` (or run with `--live`), load newer files with `--catalog DIR`, or record the accepted age with an `[[allow]]`";
