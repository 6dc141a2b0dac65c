//! Azure Resource Manager data that needs credentials: compute usages (quota per VM family
//! and the regional `lowPriorityCores` pool) and resource SKUs (availability, zones,
//! restrictions) through `azure_mgmt_compute`, and spot eviction bands and spot prices from
//! Resource Graph `SpotResources`. Credentials come from azure_identity's standard chain
//! (environment, workload identity, managed identity, Azure CLI).

use std::sync::Arc;
use std::time::Duration;

use azure_core::auth::TokenCredential;
use futures::StreamExt;
use serde::Deserialize;

use crate::live::{Pages, MAX_PAGES};

/// The public cloud's Resource Manager; `GPUPLAN_AZURE_MANAGEMENT_URL` points elsewhere
/// (sovereign clouds, proxies, tests).
pub(crate) const DEFAULT_URL: &str = "https://management.azure.com";
const GRAPH_API_VERSION: &str = "2021-03-01";

/// One quota bucket: a VM family, `lowPriorityCores` or `cores`, in vCPUs.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct QuotaRow {
    pub region: String,
    pub family: String,
    pub limit: f64,
    pub used: f64,
}

/// Whether a SKU can be deployed in a region by this subscription.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Availability {
    pub sku: String,
    pub region: String,
    /// Zones the subscription can deploy to: the region's zones less Zone restrictions.
    pub zones: Vec<String>,
    /// `NotAvailableForSubscription` or `QuotaId` (a Location restriction), else empty.
    pub restriction: String,
}

/// An eviction band and the latest spot price of a SKU in a region.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Eviction {
    pub sku: String,
    pub region: String,
    /// `0-5`, `5-10`, `10-15`, `15-20` or `20+` (a trailing `%` is dropped).
    pub band: Option<String>,
    pub spot_usd_per_hour: Option<f64>,
}

pub(crate) struct Client {
    endpoint: azure_core::Url,
    subscription: String,
    credential: Arc<dyn TokenCredential>,
    compute: azure_mgmt_compute::Client,
    timeout: Duration,
}

fn err(what: &str, e: impl std::fmt::Display) -> String {
    format!("{what}: {e}")
}

impl Client {
    /// A client for `endpoint` with the standard credential chain. Fails when no credential
    /// source is configured.
    pub(crate) fn new(
        endpoint: &str,
        subscription: &str,
        timeout: Duration,
    ) -> Result<Client, String> {
        let credential = azure_identity::create_credential()
            .map_err(|e| err("no Azure credentials (azure_identity chain)", e))?;
        let url = azure_core::Url::parse(endpoint)
            .map_err(|e| err(&format!("management endpoint `{endpoint}`"), e))?;
        let scope = scope(endpoint);
        let compute = azure_mgmt_compute::Client::builder(Arc::clone(&credential))
            .endpoint(url.clone())
            .scopes(&[scope.as_str()])
            // 429/5xx are retried twice, waiting at least the server's Retry-After.
            .retry(azure_core::RetryOptions::fixed(
                azure_core::FixedRetryOptions::default()
                    .max_retries(2u32)
                    .delay(Duration::from_secs(1))
                    .max_total_elapsed(Duration::from_secs(30)),
            ))
            .build()
            .map_err(|e| err("Azure compute client", e))?;
        Ok(Client {
            endpoint: url,
            subscription: subscription.to_owned(),
            credential,
            compute,
            timeout,
        })
    }

    pub(crate) fn endpoint(&self) -> &str {
        self.endpoint.as_str()
    }

    async fn timed<T>(
        &self,
        what: &str,
        f: impl std::future::Future<Output = Result<T, String>>,
    ) -> Result<T, String> {
        // Paging can go on for several requests; each may take the whole timeout.
        let limit = self.timeout * u32::try_from(MAX_PAGES).unwrap_or(50);
        tokio::time::timeout(limit, f)
            .await
            .map_err(|_| format!("{what}: no answer within {} s", limit.as_secs()))?
    }

    /// Compute usages of one region: every quota bucket with its limit and current use.
    pub(crate) async fn usages(&self, region: &str) -> Result<Vec<QuotaRow>, String> {
        let what = format!("compute usages for {region}");
        self.timed(&what, async {
            let pages = self
                .compute
                .usage_client()
                .list(region, self.subscription.as_str())
                .into_stream();
            let mut out = Vec::new();
            for page in all_pages(self.timeout, &what, pages).await? {
                for u in page.value {
                    let Some(family) = u.name.value else { continue };
                    out.push(QuotaRow {
                        region: region.to_owned(),
                        family,
                        limit: u.limit as f64,
                        used: f64::from(u.current_value),
                    });
                }
            }
            Ok(out)
        })
        .await
    }

    /// Resource SKUs of one region (the only filter the API supports), cut to `wanted`
    /// (compared case-insensitively).
    pub(crate) async fn skus(
        &self,
        region: &str,
        wanted: &[String],
    ) -> Result<Vec<Availability>, String> {
        let what = format!("resource SKUs for {region}");
        self.timed(&what, async {
            let pages = self
                .compute
                .resource_skus_client()
                .list(self.subscription.as_str())
                .filter(format!("location eq '{region}'"))
                .into_stream();
            let mut out = Vec::new();
            for page in all_pages(self.timeout, &what, pages).await? {
                for s in page.value {
                    if s.resource_type.as_deref() != Some("virtualMachines") {
                        continue;
                    }
                    let Some(name) = s.name else { continue };
                    let Some(sku) = wanted.iter().find(|w| w.eq_ignore_ascii_case(&name)) else {
                        continue;
                    };
                    let info = s.location_info.iter().find(|l| {
                        l.location
                            .as_deref()
                            .is_some_and(|l| l.eq_ignore_ascii_case(region))
                    });
                    let mut zones = info.map(|i| i.zones.clone()).unwrap_or_default();
                    zones.sort();
                    let mut restriction = String::new();
                    for r in &s.restrictions {
                        let code = match &r.reason_code {
                            Some(c) => format!("{c:?}"),
                            None => "restricted".to_owned(),
                        };
                        match &r.type_ {
                            Some(
                                azure_mgmt_compute::models::resource_sku_restrictions::Type::Zone,
                            ) => {
                                if let Some(i) = &r.restriction_info {
                                    zones.retain(|z| !i.zones.contains(z));
                                }
                            }
                            _ => restriction = code,
                        }
                    }
                    out.push(Availability {
                        sku: sku.clone(),
                        region: region.to_owned(),
                        zones,
                        restriction,
                    });
                }
            }
            Ok(out)
        })
        .await
    }

    async fn token(&self) -> Result<String, String> {
        let t = tokio::time::timeout(
            self.timeout,
            self.credential
                .get_token(&[scope(self.endpoint.as_str()).as_str()]),
        )
        .await
        .map_err(|_| "Azure token: no answer from the identity endpoint".to_owned())?
        .map_err(|e| describe("Azure token", &e))?;
        // A service that echoes the request's header in an error body cannot make gpuplan
        // print the token.
        crate::core::format::secret(t.token.secret());
        Ok(t.token.secret().to_owned())
    }

    /// Eviction bands and latest Linux spot prices of `skus` in `regions` from Resource Graph:
    /// two queries (bands, prices), each paged with `$skipToken`.
    pub(crate) async fn eviction(
        &self,
        regions: &[String],
        skus: &[String],
    ) -> Result<Vec<Eviction>, String> {
        let token = self.token().await?;
        let bands = self
            .graph(&token, &eviction_query(regions, skus), "eviction bands")
            .await?;
        let prices = self
            .graph(
                &token,
                &spot_price_query(regions, skus),
                "spot price history",
            )
            .await?;
        // (region, sku) -> entry; names come back lowercased, the catalog's spelling wins.
        let mut out: std::collections::BTreeMap<(String, String), Eviction> = Default::default();
        let canon = |name: &str| skus.iter().find(|s| s.eq_ignore_ascii_case(name)).cloned();
        let mut set = Vec::new();
        for row in bands {
            let (Some(sku), Some(loc)) = (row.str("skuName"), row.str("location")) else {
                return Err(
                    "Resource Graph eviction bands: a row without skuName or location".to_owned(),
                );
            };
            let band = row
                .str("spotEvictionRate")
                .map(|b| b.trim().trim_end_matches('%').to_owned())
                .filter(|b| ["0-5", "5-10", "10-15", "15-20", "20+"].contains(&b.as_str()));
            let Some(band) = band else {
                return Err(format!(
                    "Resource Graph eviction band for {sku} in {loc}: `{}`, expected 0-5, 5-10, 10-15, 15-20 or 20+",
                    row.str("spotEvictionRate").unwrap_or("(none)")
                ));
            };
            set.push((sku.to_owned(), loc.to_owned(), Some(band), None));
        }
        for row in prices {
            let (Some(sku), Some(loc)) = (row.str("skuName"), row.str("location")) else {
                return Err(
                    "Resource Graph spot prices: a row without skuName or location".to_owned(),
                );
            };
            let price = row.0.get("latestSpotPriceUSD").and_then(|v| v.as_f64());
            set.push((sku.to_owned(), loc.to_owned(), None, price));
        }
        for (sku, loc, band, price) in set {
            let Some(sku) = canon(&sku) else { continue };
            let region = loc.to_ascii_lowercase();
            let e = out
                .entry((region.clone(), sku.clone()))
                .or_insert_with(|| Eviction {
                    sku,
                    region,
                    band: None,
                    spot_usd_per_hour: None,
                });
            if band.is_some() {
                e.band = band;
            }
            if price.is_some() {
                e.spot_usd_per_hour = price;
            }
        }
        Ok(out.into_values().collect())
    }

    async fn graph(&self, token: &str, query: &str, what: &str) -> Result<Vec<Row>, String> {
        let url = graph_url(self.endpoint.as_str());
        let mut rows = Vec::new();
        let mut pages = Pages::new(&format!("Resource Graph {what}"), "$skipToken");
        loop {
            let mut options = serde_json::json!({"resultFormat": "objectArray", "$top": 1000});
            if let Some(s) = pages.token() {
                options["$skipToken"] = serde_json::Value::String(s);
            }
            let mut body = serde_json::json!({"query": query, "options": options});
            if !self.subscription.is_empty() {
                body["subscriptions"] = serde_json::json!([self.subscription]);
            }
            let (url, token, timeout) = (url.clone(), token.to_owned(), self.timeout);
            let page: Result<GraphPage, crate::http::Failure> = tokio::task::block_in_place(|| {
                crate::http::send_json(
                    || {
                        ureq::post(&url)
                            .timeout(timeout)
                            .set("Authorization", &format!("Bearer {token}"))
                    },
                    Some(&body),
                )
            });
            let page =
                page.map_err(|f| crate::http::describe(&format!("Resource Graph {what}"), f))?;
            let data = match page.data {
                serde_json::Value::Array(a) => a,
                other => {
                    return Err(format!(
                        "Resource Graph {what}: `data` is {}, expected an array of objects (resultFormat objectArray)",
                        kind_of(&other)
                    ))
                }
            };
            rows.extend(data.into_iter().filter_map(|v| match v {
                serde_json::Value::Object(m) => Some(Row(m)),
                _ => None,
            }));
            if !pages.advance(page.skip_token.as_deref())? {
                return Ok(rows);
            }
        }
    }
}

fn kind_of(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object (a table?)",
    }
}

/// Every page of a `nextLink`-paged listing, each request within `timeout`; a chain past
/// `MAX_PAGES` is a loop, not data.
async fn all_pages<T>(
    timeout: Duration,
    what: &str,
    mut pages: impl futures::Stream<Item = azure_core::Result<T>> + Unpin,
) -> Result<Vec<T>, String> {
    let mut out = Vec::new();
    while let Some(page) = tokio::time::timeout(timeout, pages.next())
        .await
        .map_err(|_| format!("{what}: no answer within {} s", timeout.as_secs()))?
    {
        if out.len() == MAX_PAGES {
            return Err(format!(
                "{what}: more than {MAX_PAGES} pages; the nextLink chain does not end"
            ));
        }
        out.push(page.map_err(|e| describe(what, &e))?);
    }
    Ok(out)
}

/// An azure_core error as one line: the HTTP status and the service's error code when there
/// is one. Never the request headers (they carry the bearer token).
fn describe(what: &str, e: &azure_core::Error) -> String {
    match e.kind() {
        azure_core::error::ErrorKind::HttpResponse { status, error_code } => format!(
            "{what}: HTTP {}{}",
            u16::from(*status),
            error_code
                .as_deref()
                .map(|c| format!(" ({c})"))
                .unwrap_or_default()
        ),
        azure_core::error::ErrorKind::Credential => format!(
            "{what}: credentials were refused or unavailable ({e}); set AZURE_TENANT_ID, AZURE_CLIENT_ID and AZURE_CLIENT_SECRET, or sign in with `az login`"
        ),
        _ => {
            let mut msg = format!("{what}: {e}");
            let mut src = std::error::Error::source(e);
            while let Some(s) = src {
                msg.push_str(&format!(": {s}"));
                src = s.source();
            }
            msg
        }
    }
}

/// The token scope of a management endpoint.
pub(crate) fn scope(endpoint: &str) -> String {
    format!("{}/.default", endpoint.trim_end_matches('/'))
}

pub(crate) fn graph_url(endpoint: &str) -> String {
    format!(
        "{}/providers/Microsoft.ResourceGraph/resources?api-version={GRAPH_API_VERSION}",
        endpoint.trim_end_matches('/')
    )
}

pub(crate) fn usages_url(endpoint: &str, subscription: &str, region: &str) -> String {
    format!(
        "{}/subscriptions/{subscription}/providers/Microsoft.Compute/locations/{region}/usages?api-version=2024-07-01",
        endpoint.trim_end_matches('/')
    )
}

pub(crate) fn skus_url(endpoint: &str, subscription: &str, region: &str) -> String {
    format!(
        "{}/subscriptions/{subscription}/providers/Microsoft.Compute/skus?api-version=2021-07-01&$filter=location eq '{region}'",
        endpoint.trim_end_matches('/')
    )
}

fn kusto_list(items: &[String]) -> String {
    items
        .iter()
        .map(|s| format!("'{}'", s.to_ascii_lowercase().replace('\'', "")))
        .collect::<Vec<_>>()
        .join(",")
}

pub(crate) fn eviction_query(regions: &[String], skus: &[String]) -> String {
    format!(
        "SpotResources | where type =~ 'microsoft.compute/skuspotevictionrate/location' | where sku.name in~ ({}) | where location in~ ({}) | project skuName = tostring(sku.name), location, spotEvictionRate = tostring(properties.evictionRate)",
        kusto_list(skus),
        kusto_list(regions)
    )
}

pub(crate) fn spot_price_query(regions: &[String], skus: &[String]) -> String {
    format!(
        "SpotResources | where type =~ 'microsoft.compute/skuspotpricehistory/ostype/location' | where sku.name in~ ({}) and properties.osType =~ 'linux' and location in~ ({}) | project skuName = tostring(sku.name), osType = tostring(properties.osType), location, latestSpotPriceUSD = todouble(properties.spotPrices[0].priceUSD)",
        kusto_list(skus),
        kusto_list(regions)
    )
}

#[derive(Deserialize)]
struct GraphPage {
    // Required by the API; a page without them is not a Resource Graph answer.
    #[serde(rename = "totalRecords")]
    _total: i64,
    #[serde(rename = "count")]
    _count: i64,
    #[serde(rename = "resultTruncated")]
    _truncated: String,
    data: serde_json::Value,
    #[serde(rename = "$skipToken", default)]
    skip_token: Option<String>,
}

struct Row(serde_json::Map<String, serde_json::Value>);

impl Row {
    fn str(&self, k: &str) -> Option<&str> {
        self.0.get(k).and_then(|v| v.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_name_every_sku_and_region_lowercased_and_quote_safe() {
        let q = eviction_query(
            &["eastus".into(), "westus3".into()],
            &["Standard_ND96isr_H100_v5".into(), "bad'name".into()],
        );
        assert!(q.contains("in~ ('standard_nd96isr_h100_v5','badname')"));
        assert!(q.contains("location in~ ('eastus','westus3')"));
        assert!(q.starts_with("SpotResources"));
        assert_eq!(
            scope("https://management.azure.com/"),
            "https://management.azure.com/.default"
        );
    }
}
