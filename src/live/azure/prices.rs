//! The Azure Retail Prices API (public, no credentials): one query per region for the N-series
//! (GPU) sizes, filtered in the service (`$filter`), following `NextPageLink` exactly as
//! given. Rows are told apart as the API documents them: Spot rows have `Spot` in `meterName`
//! and `skuName`, Low Priority ones end in ` Low Priority`, Windows ones differ only by
//! ` Windows`/` Win` in `productName`; reservation rows carry the price of the whole term.

use std::time::Duration;

use serde::Deserialize;

use crate::live::MAX_PAGES;

/// The public endpoint; `GPUPLAN_AZURE_PRICES_URL` points elsewhere (proxies, tests).
pub(crate) const DEFAULT_URL: &str = "https://prices.azure.com/api/retail/prices";
const API_VERSION: &str = "2023-01-01-preview";

#[derive(Debug, Deserialize)]
struct Page {
    #[serde(rename = "Items")]
    items: Vec<Item>,
    #[serde(rename = "NextPageLink")]
    next: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Item {
    arm_sku_name: String,
    arm_region_name: String,
    retail_price: f64,
    #[serde(default)]
    meter_name: String,
    #[serde(default)]
    sku_name: String,
    #[serde(default)]
    product_name: String,
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    unit_of_measure: String,
    #[serde(default)]
    currency_code: String,
    #[serde(default)]
    reservation_term: Option<String>,
}

/// One price row as the catalog's `prices-retail.csv` holds it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Row {
    pub sku: String,
    pub region: String,
    /// `consumption`, `spot`, `reservation-1y` or `reservation-3y`.
    pub kind: &'static str,
    pub price: f64,
    pub unit: String,
    pub note: String,
}

/// The request URL for one region (also what `--dry-run` prints).
pub(crate) fn url(base: &str, region: &str) -> String {
    // An OData string literal doubles its quotes (OData ABNF `SQUOTE-in-string`): a region
    // named with one cannot end the literal and add a clause of its own.
    let region = region.replace('\'', "''");
    let filter = format!(
        "serviceName eq 'Virtual Machines' and armRegionName eq '{region}' and contains(armSkuName, 'Standard_N')"
    );
    format!(
        "{base}?api-version={API_VERSION}&meterRegion='primary'&$filter={}",
        encode(&filter)
    )
}

fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' | b'\'' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// What a row is, or `None` for rows gpuplan does not use (Windows, Low Priority,
/// dev/test, not hourly, not USD).
fn classify(i: &Item) -> Option<&'static str> {
    let windows = i.product_name.contains(" Windows")
        || i.product_name.ends_with(" Win")
        || i.product_name.contains(" Win ");
    let cloud_services =
        i.product_name.contains("Cloud Services") || i.product_name.contains("CloudServices");
    if windows
        || cloud_services
        || i.meter_name.ends_with(" Low Priority")
        || i.sku_name.ends_with(" Low Priority")
    {
        return None;
    }
    if !i.currency_code.is_empty() && i.currency_code != "USD" {
        return None;
    }
    match i.kind.as_str() {
        "Consumption" if i.unit_of_measure.is_empty() || i.unit_of_measure == "1 Hour" => {
            if i.meter_name.contains("Spot") || i.sku_name.contains("Spot") {
                Some("spot")
            } else {
                Some("consumption")
            }
        }
        "Reservation" => match i.reservation_term.as_deref() {
            Some("1 Year") => Some("reservation-1y"),
            Some("3 Years") => Some("reservation-3y"),
            _ => None,
        },
        _ => None,
    }
}

/// Whether `link` is on the scheme, host and port of `base`: a paging link is followed only
/// there, whatever a server puts in it.
fn same_origin(base: &str, link: &str) -> bool {
    match (url::Url::parse(base), url::Url::parse(link)) {
        (Ok(a), Ok(b)) => a.origin() == b.origin(),
        _ => false,
    }
}

pub(crate) struct Client {
    pub base: String,
    pub timeout: Duration,
}

impl Client {
    fn get(&self, url: &str) -> Result<Page, String> {
        let agent = crate::http::agent(self.timeout);
        let request = || agent.get(url);
        crate::http::get_json(request)
            .map_err(|f| crate::http::describe(&format!("Azure Retail Prices at {}", self.base), f))
    }

    /// Every price row of the N-series sizes in one region, one per SKU and kind, with a note
    /// for each that the API listed at several prices.
    pub(crate) fn region(&self, region: &str) -> Result<(Vec<Row>, Vec<String>), String> {
        let mut next = Some(url(&self.base, region));
        let mut seen = std::collections::BTreeSet::new();
        let mut rows = Vec::new();
        let mut pages = 0;
        while let Some(link) = next.take().filter(|l| !l.is_empty()) {
            pages += 1;
            if pages > MAX_PAGES || !seen.insert(link.clone()) {
                return Err(format!(
                    "Azure Retail Prices at {}: paging for {region} did not end after {} pages",
                    self.base,
                    pages - 1
                ));
            }
            if !same_origin(&self.base, &link) {
                return Err(format!(
                    "Azure Retail Prices at {}: a NextPageLink points at another host ({}); paging stays on the host it started on",
                    self.base,
                    crate::core::redact_short(&link)
                ));
            }
            let page = self.get(&link)?;
            for i in page.items {
                if !i.retail_price.is_finite()
                    || i.retail_price <= 0.0
                    || i.arm_region_name != region
                {
                    continue;
                }
                let Some(kind) = classify(&i) else { continue };
                rows.push(Row {
                    sku: i.arm_sku_name.clone(),
                    region: i.arm_region_name.clone(),
                    kind,
                    price: i.retail_price,
                    unit: if i.unit_of_measure.is_empty() {
                        "1 Hour".into()
                    } else {
                        i.unit_of_measure.clone()
                    },
                    note: format!(
                        "productName '{}', meterName '{}'",
                        i.product_name, i.meter_name
                    ),
                });
            }
            next = page.next;
        }
        rows.sort_by(|a, b| {
            (&a.sku, a.kind, &a.region)
                .cmp(&(&b.sku, b.kind, &b.region))
                .then(a.price.total_cmp(&b.price))
        });
        // One price per (SKU, kind): the lowest, as the catalog keeps spot.
        let notes = crate::live::lowest_per(
            &mut rows,
            |a, b| a.sku == b.sku && a.kind == b.kind && a.region == b.region,
            |r| r.price,
            |r| {
                Some(format!(
                    "Azure Retail Prices, {} in {}, {}",
                    r.sku, r.region, r.kind
                ))
            },
        );
        Ok((rows, notes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 75: a quote in `--region` is doubled inside the OData literal, so the filter
    /// still asks for one region and nothing else.
    #[test]
    fn a_quote_in_the_region_stays_inside_the_literal() {
        let u = url(
            "https://prices.test/api/retail/prices",
            "eastus' or '1' eq '1",
        );
        let filter = u.split("$filter=").nth(1).expect("a filter");
        let decoded = filter
            .replace("%20", " ")
            .replace("%28", "(")
            .replace("%29", ")");
        assert!(
            decoded.contains("armRegionName eq 'eastus'' or ''1'' eq ''1' and"),
            "{decoded}"
        );
    }

    fn item(product: &str, meter: &str, kind: &str, term: Option<&str>) -> Item {
        Item {
            arm_sku_name: "Standard_ND96isr_H100_v5".into(),
            arm_region_name: "eastus".into(),
            retail_price: 1.0,
            meter_name: meter.into(),
            sku_name: meter.into(),
            product_name: product.into(),
            kind: kind.into(),
            unit_of_measure: "1 Hour".into(),
            currency_code: "USD".into(),
            reservation_term: term.map(str::to_owned),
        }
    }

    #[test]
    fn rows_are_told_apart_as_documented() {
        let linux = "Virtual Machines NDsr H100 v5 Series";
        let win = "Virtual Machines NDsr H100 v5 Series Windows";
        assert_eq!(
            classify(&item(linux, "ND96isrH100v5", "Consumption", None)),
            Some("consumption")
        );
        assert_eq!(
            classify(&item(win, "ND96isrH100v5", "Consumption", None)),
            None
        );
        assert_eq!(
            classify(&item(linux, "ND96isrH100v5 Spot", "Consumption", None)),
            Some("spot")
        );
        assert_eq!(
            classify(&item(
                win,
                "ND96isrH100v5 Low Priority",
                "Consumption",
                None
            )),
            None
        );
        assert_eq!(
            classify(&item(
                linux,
                "ND96isrH100v5",
                "Reservation",
                Some("3 Years")
            )),
            Some("reservation-3y")
        );
        assert_eq!(
            classify(&item(
                "Virtual Machines NCCadsv5 Srs Win",
                "x",
                "Consumption",
                None
            )),
            None
        );
        assert_eq!(
            classify(&item(linux, "ND96isrH100v5", "DevTestConsumption", None)),
            None
        );
    }

    #[test]
    fn the_filter_is_encoded_into_one_query() {
        let u = url("http://h/api/retail/prices", "eastus");
        assert!(u.contains("api-version=2023-01-01-preview&meterRegion='primary'&$filter=serviceName%20eq%20'Virtual%20Machines'%20and%20armRegionName%20eq%20'eastus'"), "{u}");
    }
}
