//! AWS data through the SDK's default credential chain and endpoint settings
//! (`AWS_ENDPOINT_URL`, `AWS_ENDPOINT_URL_EC2`, `AWS_ENDPOINT_URL_SERVICE_QUOTAS`):
//! - prices: on-demand and standard reserved (1y/3y) rows from the Price List Query API
//!   (`GetProducts`, one filtered query per region, `GPUPLAN_AWS_PRICING_URL`), and the
//!   current spot price per zone (`DescribeSpotPriceHistory` from now), and the price per
//!   instance-hour of a one-day Capacity Block (`DescribeCapacityBlockOfferings`);
//! - skus: which zones offer each instance type (`DescribeInstanceTypeOfferings`) and its
//!   shape (`DescribeInstanceTypes`: GPUs, vCPUs, memory, EFA);
//! - quota: the on-demand and spot vCPU quotas of every family the catalog's GPU types use
//!   (Service Quotas `GetServiceQuota`);
//! - eviction: the public Spot Instance Advisor file (`GPUPLAN_AWS_SPOT_ADVISOR_URL`), and
//!   spot placement scores per region for each GPU model's types (`GetSpotPlacementScores`).

use std::collections::BTreeMap;
use std::time::Duration;

use crate::live::scope::Scope;
use crate::live::Pages;

mod parse;
mod plan;
pub(crate) use parse::{advisor_cut, parse_product};
pub(crate) use plan::plan;

pub(crate) const PRICING_URL: &str = "https://api.pricing.us-east-1.amazonaws.com";
pub(crate) const SPOT_ADVISOR_URL: &str =
    "https://spot-bid-advisor.s3.amazonaws.com/spot-advisor-data.json";
/// DescribeInstanceTypes takes at most 100 instance types a call.
const TYPES_PER_CALL: usize = 100;

fn sdk_err<E: std::error::Error + 'static>(what: &str, e: &E) -> String {
    // The SDK's Display is terse ("service error"); its sources say what went wrong. Never
    // includes the request (credentials are in its headers).
    let mut msg = format!("{what}: {e}");
    let mut src = e.source();
    while let Some(s) = src {
        let s_text = s.to_string();
        if !msg.contains(&s_text) {
            msg.push_str(&format!(": {s_text}"));
        }
        src = s.source();
    }
    msg
}

/// The SDK configuration of one region: default credential chain, standard retries (3 tries,
/// backoff, 429/5xx/throttling), a timeout per try and per operation.
async fn config(region: &str, timeout: Duration) -> aws_config::SdkConfig {
    use aws_smithy_http_client::tls::{rustls_provider::CryptoMode, Provider};
    let https = aws_smithy_http_client::Builder::new()
        .tls_provider(Provider::Rustls(CryptoMode::Ring))
        .build_https();
    aws_config::defaults(aws_config::BehaviorVersion::latest())
        .http_client(https)
        .region(aws_config::Region::new(region.to_owned()))
        .retry_config(aws_config::retry::RetryConfig::standard().with_max_attempts(3))
        .timeout_config(
            aws_config::timeout::TimeoutConfig::builder()
                .operation_attempt_timeout(timeout)
                .operation_timeout(timeout * 3)
                .build(),
        )
        .load()
        .await
}

/// One SDK configuration per region, loaded on first use and shared by every task, so the
/// credential chain is resolved (and its credentials cached) once per region, not per task.
pub(crate) struct Configs {
    timeout: Duration,
    loaded: tokio::sync::Mutex<BTreeMap<String, aws_config::SdkConfig>>,
}

impl Configs {
    pub(crate) fn new(timeout: Duration) -> Configs {
        Configs {
            timeout,
            loaded: Default::default(),
        }
    }

    pub(crate) async fn get(&self, region: &str) -> aws_config::SdkConfig {
        let mut loaded = self.loaded.lock().await;
        if let Some(c) = loaded.get(region) {
            return c.clone();
        }
        let c = config(region, self.timeout).await;
        loaded.insert(region.to_owned(), c.clone());
        c
    }
}

/// The current spot price of each type in each zone (DescribeSpotPriceHistory from now
/// returns the price in force).
pub(crate) async fn spot_prices(
    conf: &aws_config::SdkConfig,
    region: &str,
    types: &[String],
) -> Result<BTreeMap<String, Vec<(String, f64)>>, String> {
    use aws_sdk_ec2::types::InstanceType;
    let ec2 = aws_sdk_ec2::Client::new(conf);
    let what = format!("EC2 DescribeSpotPriceHistory in {region}");
    let mut pages = Pages::new(&what, "NextToken");
    let mut out: BTreeMap<String, Vec<(String, f64)>> = BTreeMap::new();
    loop {
        let r = ec2
            .describe_spot_price_history()
            .set_instance_types(Some(
                types
                    .iter()
                    .map(|t| InstanceType::from(t.as_str()))
                    .collect(),
            ))
            .product_descriptions("Linux/UNIX")
            .start_time(aws_sdk_ec2::primitives::DateTime::from(
                std::time::SystemTime::now(),
            ))
            .set_next_token(pages.token())
            .send()
            .await
            .map_err(|e| sdk_err(&what, &e))?;
        for p in r.spot_price_history() {
            let (Some(ty), Some(price), Some(zone)) = (
                p.instance_type().map(|t| t.as_str().to_owned()),
                p.spot_price(),
                p.availability_zone(),
            ) else {
                return Err(format!(
                    "{what}: an entry without instanceType, spotPrice or availabilityZone"
                ));
            };
            let price: f64 = price
                .parse()
                .map_err(|_| format!("{what}: spotPrice `{price}` is not a number"))?;
            let zones = out.entry(ty).or_default();
            // The newest entry per zone comes first; later ones are older prices.
            if !zones.iter().any(|(z, _)| z == zone) {
                zones.push((zone.to_owned(), price));
            }
        }
        if !pages.advance(r.next_token())? {
            return Ok(out);
        }
    }
}

/// The zones of `region` that offer each type.
pub(crate) async fn offerings(
    conf: &aws_config::SdkConfig,
    region: &str,
    types: &[String],
) -> Result<BTreeMap<String, Vec<String>>, String> {
    use aws_sdk_ec2::types::{Filter, LocationType};
    let ec2 = aws_sdk_ec2::Client::new(conf);
    let what = format!("EC2 DescribeInstanceTypeOfferings in {region}");
    let mut pages = Pages::new(&what, "NextToken");
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    loop {
        let r = ec2
            .describe_instance_type_offerings()
            .location_type(LocationType::AvailabilityZone)
            .filters(
                Filter::builder()
                    .name("instance-type")
                    .set_values(Some(types.to_vec()))
                    .build(),
            )
            .set_next_token(pages.token())
            .send()
            .await
            .map_err(|e| sdk_err(&what, &e))?;
        for o in r.instance_type_offerings() {
            if let (Some(ty), Some(zone)) = (o.instance_type(), o.location()) {
                let zones = out.entry(ty.as_str().to_owned()).or_default();
                zones.push(zone.to_owned());
                zones.sort();
                zones.dedup();
            }
        }
        if !pages.advance(r.next_token())? {
            return Ok(out);
        }
    }
}

/// An instance type's shape as EC2 describes it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Shape {
    pub sku: String,
    pub gpus: Option<i32>,
    pub vcpus: i32,
    pub memory_mib: i64,
    pub efa: bool,
}

pub(crate) async fn shapes(
    conf: &aws_config::SdkConfig,
    region: &str,
    types: &[String],
) -> Result<Vec<Shape>, String> {
    use aws_sdk_ec2::types::InstanceType;
    let ec2 = aws_sdk_ec2::Client::new(conf);
    let what = format!("EC2 DescribeInstanceTypes in {region}");
    let mut out = Vec::new();
    for chunk in types.chunks(TYPES_PER_CALL) {
        let mut pages = Pages::new(&what, "NextToken");
        loop {
            let r = ec2
                .describe_instance_types()
                .set_instance_types(Some(
                    chunk
                        .iter()
                        .map(|t| InstanceType::from(t.as_str()))
                        .collect(),
                ))
                .set_next_token(pages.token())
                .send()
                .await
                .map_err(|e| sdk_err(&what, &e))?;
            for t in r.instance_types() {
                let Some(sku) = t.instance_type().map(|t| t.as_str().to_owned()) else {
                    continue;
                };
                let (Some(vcpus), Some(memory_mib)) = (
                    t.v_cpu_info().and_then(|v| v.default_v_cpus()),
                    t.memory_info().and_then(|m| m.size_in_mib()),
                ) else {
                    return Err(format!(
                        "{what}: `{sku}` has no vCpuInfo/defaultVCpus or memoryInfo/sizeInMiB"
                    ));
                };
                let gpus = t
                    .gpu_info()
                    .map(|g| g.gpus().iter().filter_map(|d| d.count()).sum::<i32>());
                out.push(Shape {
                    sku,
                    gpus,
                    vcpus,
                    memory_mib,
                    efa: t
                        .network_info()
                        .and_then(|n| n.efa_supported())
                        .unwrap_or(false),
                });
            }
            if !pages.advance(r.next_token())? {
                break;
            }
        }
    }
    out.sort_by(|a, b| a.sku.cmp(&b.sku));
    out.dedup_by(|a, b| a.sku == b.sku);
    Ok(out)
}

/// Instance types sold as EC2 Capacity Blocks for ML: the 8-GPU P sizes and Trainium.
pub(crate) fn capacity_block_types(scope: &Scope) -> Vec<String> {
    let c = &scope.catalog;
    scope
        .skus
        .iter()
        .filter(|s| {
            c.sku(crate::core::Provider::Aws, s).is_some_and(|k| {
                (k.quota_family == "L-417A185B" && k.gpu_count == 8)
                    || k.quota_family == "L-2C3B7624"
            })
        })
        .cloned()
        .collect()
}

/// Hours of the block priced: one day, the shortest block AWS sells.
pub(crate) const BLOCK_HOURS: i32 = 24;

/// The lowest price per instance-hour of a one-instance, one-day Capacity Block of each type
/// (upfront fee / (instances x hours)), with the offering's zone and start.
pub(crate) async fn capacity_blocks(
    conf: &aws_config::SdkConfig,
    region: &str,
    types: &[String],
) -> Result<Vec<(String, f64, String)>, String> {
    let ec2 = aws_sdk_ec2::Client::new(conf);
    let mut out = Vec::new();
    for ty in types {
        let what = format!("EC2 DescribeCapacityBlockOfferings {ty} in {region}");
        let mut pages = Pages::new(&what, "NextToken");
        let mut best: Option<(f64, String)> = None;
        loop {
            let r = ec2
                .describe_capacity_block_offerings()
                .instance_type(ty)
                .instance_count(1)
                .capacity_duration_hours(BLOCK_HOURS)
                .set_next_token(pages.token())
                .send()
                .await
                .map_err(|e| sdk_err(&what, &e))?;
            for o in r.capacity_block_offerings() {
                if o.currency_code().is_some_and(|c| c != "USD") {
                    continue;
                }
                let (Some(fee), Some(n), Some(h)) = (
                    o.upfront_fee(),
                    o.instance_count(),
                    o.capacity_block_duration_hours(),
                ) else {
                    return Err(format!(
                        "{what}: an offering without upfrontFee, instanceCount or capacityBlockDurationHours"
                    ));
                };
                let fee: f64 = fee
                    .parse()
                    .map_err(|_| format!("{what}: upfrontFee `{fee}` is not a number"))?;
                if n <= 0 || h <= 0 {
                    continue;
                }
                let hourly = fee / f64::from(n) / f64::from(h);
                if best.as_ref().is_none_or(|b| hourly < b.0) {
                    best = Some((
                        hourly,
                        format!(
                            "{} instance(s) x {h} h from {} in {}",
                            n,
                            o.start_date().map(|d| d.to_string()).unwrap_or_default(),
                            o.availability_zone().unwrap_or("?")
                        ),
                    ));
                }
            }
            if !pages.advance(r.next_token())? {
                break;
            }
        }
        if let Some((p, note)) = best {
            out.push((ty.clone(), p, note));
        }
    }
    Ok(out)
}

/// Spot placement scores (1-10) per region for each GPU model's instance types taken
/// together, for one instance: how likely a spot request for that GPU succeeds. AWS scores a
/// request of one or two types low whatever the capacity, so only GPU models with three or
/// more types are asked about.
pub(crate) async fn placement_scores(
    conf: &aws_config::SdkConfig,
    regions: &[String],
    groups: &[(String, Vec<String>)],
) -> Result<Vec<(String, String, i32)>, String> {
    use aws_sdk_ec2::types::TargetCapacityUnitType;
    let ec2 = aws_sdk_ec2::Client::new(conf);
    let mut out = Vec::new();
    for (model, types) in groups {
        let what = format!("EC2 GetSpotPlacementScores for {model}");
        let mut pages = Pages::new(&what, "NextToken");
        loop {
            let r = ec2
                .get_spot_placement_scores()
                .set_instance_types(Some(types.clone()))
                .target_capacity(1)
                .target_capacity_unit_type(TargetCapacityUnitType::Units)
                .single_availability_zone(false)
                .set_region_names(Some(regions.to_vec()))
                .set_next_token(pages.token())
                .send()
                .await
                .map_err(|e| sdk_err(&what, &e))?;
            for sc in r.spot_placement_scores() {
                let (Some(region), Some(score)) = (sc.region(), sc.score()) else {
                    return Err(format!("{what}: a score without region or score"));
                };
                if !(1..=10).contains(&score) {
                    return Err(format!(
                        "{what}: score {score} for {region}, expected 1 to 10"
                    ));
                }
                out.push((model.clone(), region.to_owned(), score));
            }
            if !pages.advance(r.next_token())? {
                break;
            }
        }
    }
    out.sort();
    out.dedup_by(|b, a| a.0 == b.0 && a.1 == b.1);
    Ok(out)
}

/// The catalog's types grouped by GPU model, for placement scores: models with 3+ types.
fn placement_groups(scope: &Scope) -> Vec<(String, Vec<String>)> {
    let c = &scope.catalog;
    let mut by: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for s in &scope.skus {
        if let Some(k) = c.sku(crate::core::Provider::Aws, s) {
            by.entry(k.gpu_model.clone()).or_default().push(s.clone());
        }
    }
    by.into_iter().filter(|(_, t)| t.len() >= 3).collect()
}

/// The value of each quota code in `region`, in vCPUs.
pub(crate) async fn quotas(
    conf: &aws_config::SdkConfig,
    region: &str,
    codes: &[String],
) -> Result<Vec<(String, f64)>, String> {
    let sq = aws_sdk_servicequotas::Client::new(conf);
    let mut out = Vec::new();
    for code in codes {
        let what = format!("Service Quotas GetServiceQuota ec2/{code} in {region}");
        let r = sq
            .get_service_quota()
            .service_code("ec2")
            .quota_code(code)
            .send()
            .await
            .map_err(|e| sdk_err(&what, &e))?;
        let Some(v) = r.quota().and_then(|q| q.value()) else {
            return Err(format!("{what}: the answer has no Quota.Value"));
        };
        out.push((code.clone(), v));
    }
    Ok(out)
}

/// On-demand and standard reserved prices of `types` in `region` from the Price List Query
/// API. Reserved rows hold the whole term's cost (upfront fee plus hourly charge over the
/// term), the lowest of the standard purchase options, like Azure's reservation rows.
pub(crate) async fn list_prices(
    conf: &aws_config::SdkConfig,
    endpoint: &str,
    region: &str,
    types: &[String],
) -> Result<(Vec<(String, &'static str, f64, String)>, Vec<String>), String> {
    use aws_sdk_pricing::types::{Filter, FilterType};
    let pconf = aws_sdk_pricing::config::Builder::from(conf)
        .endpoint_url(endpoint)
        // The Price List Query API lives in us-east-1 (and ap-south-1), whatever the region priced.
        .region(aws_sdk_pricing::config::Region::new("us-east-1"))
        .build();
    let pricing = aws_sdk_pricing::Client::from_conf(pconf);
    let what = format!("AWS Price List GetProducts for {region}");
    let filter = |field: &str, value: &str, ty: FilterType| {
        Filter::builder()
            .r#type(ty)
            .field(field)
            .value(value)
            .build()
            .map_err(|e| format!("{what}: {e}"))
    };
    let filters = vec![
        filter("regionCode", region, FilterType::TermMatch)?,
        filter("operatingSystem", "Linux", FilterType::TermMatch)?,
        filter("tenancy", "Shared", FilterType::TermMatch)?,
        filter("preInstalledSw", "NA", FilterType::TermMatch)?,
        filter("capacitystatus", "Used", FilterType::TermMatch)?,
        filter("licenseModel", "No License required", FilterType::TermMatch)?,
        filter("instanceType", &types.join(","), FilterType::AnyOf)?,
    ];
    let mut pages = Pages::new(&what, "NextToken");
    let mut out = Vec::new();
    loop {
        let r = pricing
            .get_products()
            .service_code("AmazonEC2")
            .format_version("aws_v1")
            .set_filters(Some(filters.clone()))
            .max_results(100)
            .set_next_token(pages.token())
            .send()
            .await
            .map_err(|e| sdk_err(&what, &e))?;
        for item in r.price_list() {
            out.extend(parse_product(item).map_err(|e| format!("{what}: {e}"))?);
        }
        if !pages.advance(r.next_token())? {
            break;
        }
    }
    out.retain(|(sku, ..)| types.contains(sku));
    out.sort_by(|a, b| (&a.0, a.1).cmp(&(&b.0, b.1)).then(a.2.total_cmp(&b.2)));
    // One price per (type, kind): the lowest. A reservation has several purchase options
    // (no, partial, all upfront) by design; two on-demand prices for one type do not.
    let notes = crate::live::lowest_per(
        &mut out,
        |a, b| a.0 == b.0 && a.1 == b.1,
        |r| r.2,
        |r| {
            (r.1 == "consumption")
                .then(|| format!("AWS Price List, {} in {region}, on-demand", r.0))
        },
    );
    Ok((out, notes))
}
