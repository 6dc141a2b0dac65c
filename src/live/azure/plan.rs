//! The Azure refresh planner: the requests a refresh makes (as `--dry-run` lists them) and one
//! task per part, each fetching every region before it returns its cache file.

use std::sync::Arc;

use super::{mgmt, prices};
use crate::catalog::{columns, DataKind};
use crate::core::Provider;
use crate::live::cache;
use crate::live::scope::{account_csv, url_or, Part, Scope, Task};

/// The endpoints and subscription a refresh reads, worked out once.
struct Ask {
    prices_base: String,
    mgmt: String,
    /// The subscription, or a placeholder in a dry run that names none.
    subscription: String,
}

/// The Azure requests (for `--dry-run`) and tasks of a refresh.
pub(crate) fn plan(scope: &Scope) -> Result<(Vec<String>, Vec<Task>), String> {
    let subscription = scope.subscription.clone().filter(|s| !s.is_empty());
    let sub_needed = scope.wants(Part::Quota) || scope.wants(Part::Skus);
    if sub_needed && subscription.is_none() && !scope.dry_run {
        return Err(
            "quota and SKU availability are per subscription: give `--subscription ID`, set AZURE_SUBSCRIPTION_ID or `[plan] subscription` (or refresh `--only prices,eviction`)"
                .into(),
        );
    }
    let ask = Ask {
        prices_base: url_or(&scope.endpoints.azure_prices, prices::DEFAULT_URL),
        mgmt: url_or(&scope.endpoints.azure_management, mgmt::DEFAULT_URL),
        subscription: subscription.unwrap_or_else(|| "SUBSCRIPTION_ID".into()),
    };
    let requests = requests(scope, &ask);
    if scope.dry_run {
        return Ok((requests, Vec::new()));
    }
    let mut tasks = Vec::new();
    if scope.wants(Part::Prices) {
        tasks.push(retail_prices(scope, &ask));
    }
    let needs_mgmt = [Part::Quota, Part::Skus, Part::Eviction]
        .into_iter()
        .any(|p| scope.wants(p));
    if !needs_mgmt {
        return Ok((requests, tasks));
    }
    let client = Arc::new(mgmt::Client::new(
        &ask.mgmt,
        &ask.subscription,
        scope.timeout,
    )?);
    let source = crate::core::redact(&format!(
        "Azure Resource Manager ({}), subscription scope",
        ask.mgmt
    ));
    if scope.wants(Part::Quota) {
        tasks.push(usages(scope, &client, &source));
    }
    if scope.wants(Part::Skus) {
        tasks.push(availability(scope, &client, &source));
    }
    if scope.wants(Part::Eviction) {
        tasks.push(eviction(scope, &client));
    }
    Ok((requests, tasks))
}

/// Every request a refresh makes, in the order `--dry-run` lists them.
fn requests(scope: &Scope, ask: &Ask) -> Vec<String> {
    let (base, mgmt_url, sub) = (&ask.prices_base, &ask.mgmt, &ask.subscription);
    let mut out = Vec::new();
    for r in &scope.regions {
        if scope.wants(Part::Prices) {
            out.push(format!("GET {}", prices::url(base, r)));
        }
        if scope.wants(Part::Quota) {
            out.push(format!("GET {}", mgmt::usages_url(mgmt_url, sub, r)));
        }
        if scope.wants(Part::Skus) {
            out.push(format!("GET {}", mgmt::skus_url(mgmt_url, sub, r)));
        }
    }
    if scope.wants(Part::Eviction) {
        for q in [
            mgmt::eviction_query(&scope.regions, &scope.skus),
            mgmt::spot_price_query(&scope.regions, &scope.skus),
        ] {
            out.push(format!("POST {} {q}", mgmt::graph_url(mgmt_url)));
        }
    }
    out
}

/// The Retail Prices API's GPU rows of every region (no credentials).
fn retail_prices(scope: &Scope, ask: &Ask) -> Task {
    let client = Arc::new(prices::Client {
        base: ask.prices_base.clone(),
        timeout: scope.timeout,
    });
    let (regions, previous, today) = (
        scope.regions.clone(),
        scope.previous("azure/prices-retail.csv"),
        scope.today.clone(),
    );
    Task {
        label: "Azure retail prices".into(),
        run: Box::pin(async move {
            let (mut rows, mut notes) = (Vec::new(), Vec::new());
            for r in &regions {
                let c = Arc::clone(&client);
                let region = r.clone();
                let (mut x, mut said) = tokio::task::spawn_blocking(move || c.region(&region))
                    .await
                    .map_err(|e| e.to_string())??;
                notes.append(&mut said);
                if x.is_empty() {
                    return Err(format!(
                        "Azure Retail Prices at {} has no GPU (N-series) prices for `{r}`: is the region name right?",
                        client.base
                    ));
                }
                rows.append(&mut x);
            }
            let source = crate::core::redact(&format!("Azure Retail Prices API ({})", client.base));
            Ok(vec![cache::Entry {
                path: "azure/prices-retail.csv",
                kind: DataKind::Prices,
                provider: Provider::Azure,
                source: format!("{source}, fetched {today}"),
                licence: "public price list",
                text: retail_csv(&previous, &rows, &regions, &today, &source),
                notes,
            }])
        }),
    }
}

/// The subscription's vCPU quotas and usage (compute usages).
fn usages(scope: &Scope, client: &Arc<mgmt::Client>, source: &str) -> Task {
    let (c, regions, previous, today, source) = (
        Arc::clone(client),
        scope.regions.clone(),
        scope.previous("azure/quota.csv"),
        scope.today.clone(),
        source.to_owned(),
    );
    Task {
        label: "Azure compute usages".into(),
        run: Box::pin(async move {
            let mut rows = Vec::new();
            for r in &regions {
                for q in c.usages(r).await? {
                    rows.push(vec![
                        q.region,
                        q.family,
                        q.limit.to_string(),
                        q.used.to_string(),
                        today.clone(),
                        "Microsoft.Compute usages 2024-07-01".into(),
                    ]);
                }
            }
            Ok(vec![account_csv(
                "azure/quota.csv",
                DataKind::Quota,
                Provider::Azure,
                &columns::QUOTA,
                &previous,
                &regions,
                &rows,
                &source,
                &today,
            )])
        }),
    }
}

/// Which zones offer each catalog SKU to the subscription, and what restricts it (resource
/// SKUs).
fn availability(scope: &Scope, client: &Arc<mgmt::Client>, source: &str) -> Task {
    let (c, regions, previous, today, skus, source) = (
        Arc::clone(client),
        scope.regions.clone(),
        scope.previous("azure/availability.csv"),
        scope.today.clone(),
        scope.skus.clone(),
        source.to_owned(),
    );
    Task {
        label: "Azure resource SKUs".into(),
        run: Box::pin(async move {
            let mut rows = Vec::new();
            for r in &regions {
                let found = c.skus(r, &skus).await?;
                // A catalog SKU the region does not list is not offered there.
                for s in &skus {
                    let row = match found.iter().find(|a| &a.sku == s) {
                        Some(a) => vec![
                            a.sku.clone(),
                            a.region.clone(),
                            a.zones.join(" "),
                            a.restriction.clone(),
                        ],
                        None => vec![s.clone(), r.clone(), String::new(), "not offered".into()],
                    };
                    rows.push(
                        row.into_iter()
                            .chain([today.clone(), "Microsoft.Compute skus 2021-07-01".into()])
                            .collect(),
                    );
                }
            }
            Ok(vec![account_csv(
                "azure/availability.csv",
                DataKind::Availability,
                Provider::Azure,
                &columns::AVAILABILITY,
                &previous,
                &regions,
                &rows,
                &source,
                &today,
            )])
        }),
    }
}

/// Spot eviction bands and spot prices (Resource Graph `SpotResources`).
fn eviction(scope: &Scope, client: &Arc<mgmt::Client>) -> Task {
    let (c, regions, previous, today, skus) = (
        Arc::clone(client),
        scope.regions.clone(),
        scope.previous("azure/spot-eviction.csv"),
        scope.today.clone(),
        scope.skus.clone(),
    );
    Task {
        label: "Azure Resource Graph SpotResources".into(),
        run: Box::pin(async move {
            let found = c.eviction(&regions, &skus).await?;
            let rows: Vec<Vec<String>> = found
                .into_iter()
                .map(|e| {
                    vec![
                        e.sku,
                        e.region,
                        e.band.unwrap_or_default(),
                        e.spot_usd_per_hour
                            .map(|p| p.to_string())
                            .unwrap_or_default(),
                        today.clone(),
                        "Resource Graph SpotResources (eviction rate: trailing 28 days)".into(),
                    ]
                })
                .collect();
            Ok(vec![account_csv(
                "azure/spot-eviction.csv",
                DataKind::SpotBands,
                Provider::Azure,
                &columns::EVICTION,
                &previous,
                &regions,
                &rows,
                &format!(
                    "Azure Resource Graph SpotResources ({})",
                    mgmt::graph_url(c.endpoint())
                ),
                &today,
            )])
        }),
    }
}

/// The `prices-retail.csv` text: fetched rows for the refreshed regions, and the previous
/// rows of every other region.
fn retail_csv(
    previous: &str,
    rows: &[prices::Row],
    regions: &[String],
    fetched: &str,
    source: &str,
) -> String {
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            cache::price_row(
                r.sku.clone(),
                &r.region,
                r.kind,
                r.price,
                &r.unit,
                fetched,
                format!("{source} ({})", r.note),
            )
        })
        .collect();
    cache::merge_csv(previous, &cache::PRICE_HEADER, 1, regions, &rows)
}
