//! A refresh as a library call: which provider, regions and parts, where the answers go.
//! [`plan`] lists the requests and builds the tasks that fetch them; [`execute`] runs them
//! all before anything is written, so one failure leaves the cache as it was.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::catalog::columns;
use crate::core::{Date, Provider};
pub(crate) use crate::live::scope::Endpoints;
use crate::live::scope::{account_csv, url_or, Scope, Task};
use crate::live::{aws, azure_mgmt, azure_prices, cache, LiveError};

/// A refresh as the command line (or any caller) asks for it.
#[derive(Debug, Clone)]
pub(crate) struct Request {
    pub provider: Provider,
    pub regions: Vec<String>,
    /// Which of [`PARTS`]; empty means all.
    pub parts: Vec<&'static str>,
    pub timeout: Duration,
    pub today: Date,
    /// The cache directory, for the rows of regions not refreshed now.
    pub dir: PathBuf,
    pub subscription: Option<String>,
    pub endpoints: Endpoints,
    pub dry_run: bool,
}

/// Requests in flight at once: below Resource Graph's 15 per 5 s per tenant with room for
/// the retries.
pub(crate) const CONCURRENCY: usize = 8;

pub(crate) const PARTS: [&str; 4] = ["prices", "eviction", "quota", "skus"];

/// What a request fetches: the scope it covers, the requests (as `--dry-run` lists them) and
/// the tasks (none for a dry run).
pub(crate) fn plan(req: Request) -> Result<(Scope, Vec<String>, Vec<Task>), LiveError> {
    let mut parts = if req.parts.is_empty() {
        PARTS.to_vec()
    } else {
        req.parts.clone()
    };
    parts.sort();
    parts.dedup();
    let mut regions = req.regions.clone();
    regions.sort();
    regions.dedup();
    if regions.is_empty() {
        return Err(LiveError::Request(
            "give the regions to refresh: `--region REGION` or `--plan PLAN`".into(),
        ));
    }
    let catalog = crate::catalog::Catalog::embedded(&[req.provider])?;
    let skus: Vec<String> = catalog
        .provider(req.provider)
        .map(|pc| {
            pc.skus
                .values()
                .filter(|s| !s.retired && !s.arm64)
                .map(|s| s.name.clone())
                .collect()
        })
        .unwrap_or_default();
    let scope = Scope {
        regions,
        skus,
        parts,
        timeout: req.timeout,
        today: req.today.to_string(),
        dir: req.dir,
        catalog,
        subscription: req.subscription,
        endpoints: req.endpoints,
        dry_run: req.dry_run,
    };
    // What the provider's planning refuses is the request's, not a provider's answer.
    let (requests, tasks) = match req.provider {
        Provider::Azure => azure(&scope),
        Provider::Aws => aws::plan(&scope),
    }
    .map_err(LiveError::Request)?;
    Ok((scope, requests, tasks))
}

/// Run every task, `CONCURRENCY` at a time, with a progress bar on stderr (hidden when stderr
/// is not a terminal or with `--quiet`). The first error wins; nothing is kept from the others.
pub(crate) fn execute(tasks: Vec<Task>, progress: bool) -> Result<Vec<cache::Entry>, LiveError> {
    use futures::StreamExt;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(LiveError::Runtime)?;
    let bar = if !progress {
        indicatif::ProgressBar::hidden()
    } else {
        indicatif::ProgressBar::with_draw_target(
            Some(tasks.len() as u64),
            indicatif::ProgressDrawTarget::stderr(),
        )
    };
    bar.set_style(
        indicatif::ProgressStyle::with_template("{bar:30} {pos}/{len} {msg}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    let bar = Arc::new(bar);
    let results: Vec<Result<Vec<cache::Entry>, String>> = rt.block_on(async {
        futures::stream::iter(tasks.into_iter().map(|t| {
            let bar = Arc::clone(&bar);
            async move {
                bar.set_message(t.label.clone());
                let r = t.run.await;
                bar.inc(1);
                r
            }
        }))
        .buffer_unordered(CONCURRENCY)
        .collect()
        .await
    });
    bar.finish_and_clear();
    let mut entries = Vec::new();
    for r in results {
        entries.extend(r.map_err(LiveError::Fetch)?);
    }
    // Tasks finish in any order; the cache is written in one.
    entries.sort_by(|a, b| a.path.cmp(b.path));
    Ok(entries)
}

/// The Azure requests (for `--dry-run`) and tasks of a refresh.
fn azure(scope: &Scope) -> Result<(Vec<String>, Vec<Task>), String> {
    let prices_base = url_or(&scope.endpoints.azure_prices, azure_prices::DEFAULT_URL);
    let mgmt = url_or(&scope.endpoints.azure_management, azure_mgmt::DEFAULT_URL);
    let needs_mgmt = scope.wants("quota") || scope.wants("skus") || scope.wants("eviction");
    let subscription = scope.subscription.clone().filter(|s| !s.is_empty());
    let sub_needed = scope.wants("quota") || scope.wants("skus");
    if sub_needed && subscription.is_none() && !scope.dry_run {
        return Err(
            "quota and SKU availability are per subscription: give `--subscription ID`, set AZURE_SUBSCRIPTION_ID or `[plan] subscription` (or refresh `--only prices,eviction`)"
                .into(),
        );
    }
    let sub = subscription.unwrap_or_else(|| "SUBSCRIPTION_ID".into());
    let mut requests = Vec::new();
    for r in &scope.regions {
        if scope.wants("prices") {
            requests.push(format!("GET {}", azure_prices::url(&prices_base, r)));
        }
        if scope.wants("quota") {
            requests.push(format!("GET {}", azure_mgmt::usages_url(&mgmt, &sub, r)));
        }
        if scope.wants("skus") {
            requests.push(format!("GET {}", azure_mgmt::skus_url(&mgmt, &sub, r)));
        }
    }
    if scope.wants("eviction") {
        for q in [
            azure_mgmt::eviction_query(&scope.regions, &scope.skus),
            azure_mgmt::spot_price_query(&scope.regions, &scope.skus),
        ] {
            requests.push(format!("POST {} {q}", azure_mgmt::graph_url(&mgmt)));
        }
    }
    if scope.dry_run {
        return Ok((requests, Vec::new()));
    }
    let mut tasks = Vec::new();
    if scope.wants("prices") {
        let client = Arc::new(azure_prices::Client {
            base: prices_base.clone(),
            timeout: scope.timeout,
        });
        let (regions, previous, today) = (
            scope.regions.clone(),
            scope.previous("azure/prices-retail.csv"),
            scope.today.clone(),
        );
        tasks.push(Task {
            label: "Azure retail prices".into(),
            run: Box::pin(async move {
                let mut rows = Vec::new();
                for r in &regions {
                    let c = Arc::clone(&client);
                    let region = r.clone();
                    let mut x = tokio::task::spawn_blocking(move || c.region(&region))
                        .await
                        .map_err(|e| e.to_string())??;
                    if x.is_empty() {
                        return Err(format!(
                            "Azure Retail Prices at {} has no GPU (N-series) prices for `{r}`: is the region name right?",
                            client.base
                        ));
                    }
                    rows.append(&mut x);
                }
                let source = crate::core::redact(&format!(
                    "Azure Retail Prices API ({})",
                    client.base
                ));
                Ok(vec![cache::Entry {
                    path: "azure/prices-retail.csv",
                    kind: "prices",
                    provider: "azure",
                    source: format!("{source}, fetched {today}"),
                    licence: "public price list",
                    text: cache::retail_csv(&previous, &rows, &regions, &today, &source),
                }])
            }),
        });
    }
    if !needs_mgmt {
        return Ok((requests, tasks));
    }
    let client = Arc::new(azure_mgmt::Client::new(&mgmt, &sub, scope.timeout)?);
    let source = crate::core::redact(&format!(
        "Azure Resource Manager ({mgmt}), subscription scope"
    ));
    if scope.wants("quota") {
        let (c, regions, previous, today, source) = (
            Arc::clone(&client),
            scope.regions.clone(),
            scope.previous("azure/quota.csv"),
            scope.today.clone(),
            source.clone(),
        );
        tasks.push(Task {
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
                    "quota",
                    "azure",
                    &columns::QUOTA,
                    &previous,
                    &regions,
                    &rows,
                    &source,
                    &today,
                )])
            }),
        });
    }
    if scope.wants("skus") {
        let (c, regions, previous, today, skus, source) = (
            Arc::clone(&client),
            scope.regions.clone(),
            scope.previous("azure/availability.csv"),
            scope.today.clone(),
            scope.skus.clone(),
            source.clone(),
        );
        tasks.push(Task {
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
                    "availability",
                    "azure",
                    &columns::AVAILABILITY,
                    &previous,
                    &regions,
                    &rows,
                    &source,
                    &today,
                )])
            }),
        });
    }
    if scope.wants("eviction") {
        let (c, regions, previous, today, skus) = (
            Arc::clone(&client),
            scope.regions.clone(),
            scope.previous("azure/spot-eviction.csv"),
            scope.today.clone(),
            scope.skus.clone(),
        );
        tasks.push(Task {
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
                    "spot-bands",
                    "azure",
                    &columns::EVICTION,
                    &previous,
                    &regions,
                    &rows,
                    &format!(
                        "Azure Resource Graph SpotResources ({})",
                        azure_mgmt::graph_url(c.endpoint())
                    ),
                    &today,
                )])
            }),
        });
    }
    Ok((requests, tasks))
}
