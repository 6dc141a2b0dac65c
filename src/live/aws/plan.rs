//! The AWS refresh planner: the requests a refresh makes (as `--dry-run` lists them) and one
//! task per part, each fetching every region before it returns its cache files.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::{
    advisor_cut, capacity_block_types, capacity_blocks, list_prices, offerings, placement_groups,
    placement_scores, quotas, shapes, spot_prices, Configs, BLOCK_HOURS, PRICING_URL,
    SPOT_ADVISOR_URL, TYPES_PER_CALL,
};
use crate::catalog::{columns, DataKind};
use crate::core::Provider;
use crate::live::cache;
use crate::live::scope::{account_csv, url_or, Part, Scope, Task};

/// The on-demand and spot quota codes of the catalog's types.
fn quota_codes(scope: &Scope) -> Vec<String> {
    let c = &scope.catalog;
    let mut codes: Vec<String> = scope
        .skus
        .iter()
        .filter_map(|s| c.sku(Provider::Aws, s))
        .flat_map(|s| [s.quota_family.clone(), s.spot_quota().to_owned()])
        .filter(|c| c.starts_with("L-"))
        .collect();
    codes.sort();
    codes.dedup();
    codes
}

/// What a refresh asks for, worked out once for the requests and the tasks.
struct Ask {
    pricing_url: String,
    advisor_url: String,
    codes: Vec<String>,
    block_types: Vec<String>,
    groups: Vec<(String, Vec<String>)>,
}

/// The AWS requests (for `--dry-run`) and tasks of a refresh.
pub(crate) fn plan(scope: &Scope) -> Result<(Vec<String>, Vec<Task>), String> {
    let ask = Ask {
        pricing_url: url_or(&scope.endpoints.aws_pricing, PRICING_URL),
        advisor_url: url_or(&scope.endpoints.aws_spot_advisor, SPOT_ADVISOR_URL),
        codes: quota_codes(scope),
        block_types: capacity_block_types(scope),
        groups: placement_groups(scope),
    };
    let requests = requests(scope, &ask);
    if scope.dry_run {
        return Ok((requests, Vec::new()));
    }
    let configs = Arc::new(Configs::new(scope.timeout));
    let tasks = [Part::Prices, Part::Skus, Part::Quota, Part::Eviction]
        .into_iter()
        .filter(|p| scope.wants(*p))
        .map(|part| match part {
            Part::Prices => prices(scope, &ask, &configs),
            Part::Skus => instance_types(scope, &configs),
            Part::Quota => quota(scope, &ask, &configs),
            Part::Eviction => eviction(scope, &ask, &configs),
        })
        .collect();
    Ok((requests, tasks))
}

/// Every request a refresh makes, in the order `--dry-run` lists them.
fn requests(scope: &Scope, ask: &Ask) -> Vec<String> {
    let n = scope.skus.len();
    let mut out = Vec::new();
    for r in &scope.regions {
        if scope.wants(Part::Prices) {
            out.push(format!(
                "POST {} GetProducts AmazonEC2 regionCode={r} instanceType ANY_OF {n} types (paged)",
                ask.pricing_url
            ));
            out.push(format!(
                "POST ec2.{r} DescribeSpotPriceHistory Linux/UNIX from now, {n} types (paged)"
            ));
            for t in &ask.block_types {
                out.push(format!(
                    "POST ec2.{r} DescribeCapacityBlockOfferings {t} x1 for {BLOCK_HOURS} h (paged)"
                ));
            }
        }
        if scope.wants(Part::Skus) {
            out.push(format!(
                "POST ec2.{r} DescribeInstanceTypeOfferings availability-zone, {n} types (paged)"
            ));
            out.push(format!(
                "POST ec2.{r} DescribeInstanceTypes, {} call(s) of up to {TYPES_PER_CALL} types",
                n.div_ceil(TYPES_PER_CALL)
            ));
        }
        if scope.wants(Part::Quota) {
            for c in &ask.codes {
                out.push(format!("POST servicequotas.{r} GetServiceQuota ec2/{c}"));
            }
        }
    }
    if scope.wants(Part::Eviction) {
        out.push(format!("GET {}", ask.advisor_url));
        for (model, types) in &ask.groups {
            out.push(format!(
                "POST ec2.{} GetSpotPlacementScores {model} ({} types) x1 in {}",
                scope.regions[0],
                types.len(),
                scope.regions.join(", ")
            ));
        }
    }
    out
}

/// On-demand and reserved list prices, Capacity Block offerings and spot prices.
fn prices(scope: &Scope, ask: &Ask, configs: &Arc<Configs>) -> Task {
    let (regions, types, previous, today, configs, url, block_types) = (
        scope.regions.clone(),
        scope.skus.clone(),
        scope.previous("aws/prices-live.csv"),
        scope.today.clone(),
        Arc::clone(configs),
        ask.pricing_url.clone(),
        ask.block_types.clone(),
    );
    Task {
        label: "AWS prices".into(),
        run: Box::pin(async move {
            let (mut rows, mut notes): (Vec<Vec<String>>, Vec<String>) = (Vec::new(), Vec::new());
            for r in &regions {
                let conf = configs.get(r).await;
                let (listed, mut said) = list_prices(&conf, &url, r, &types).await?;
                notes.append(&mut said);
                for (sku, kind, p, note) in listed {
                    let unit = if kind == "consumption" {
                        "1 Hour"
                    } else {
                        "term"
                    };
                    let note = format!("AWS Price List GetProducts ({note})");
                    rows.push(cache::price_row(sku, r, kind, p, unit, &today, note));
                }
                for (sku, p, note) in capacity_blocks(&conf, r, &block_types).await? {
                    let note = format!(
                        "EC2 DescribeCapacityBlockOfferings, lowest per instance-hour: {note}"
                    );
                    rows.push(cache::price_row(
                        sku,
                        r,
                        "capacity-block",
                        p,
                        "1 Hour",
                        &today,
                        note,
                    ));
                }
                for (sku, zones) in spot_prices(&conf, r, &types).await? {
                    if let Some((zone, p)) = zones.iter().min_by(|a, b| a.1.total_cmp(&b.1)) {
                        let note = format!(
                            "EC2 DescribeSpotPriceHistory Linux/UNIX (lowest of {} zone(s): {zone})",
                            zones.len()
                        );
                        rows.push(cache::price_row(sku, r, "spot", *p, "1 Hour", &today, note));
                    }
                }
            }
            rows.sort();
            Ok(vec![cache::Entry {
                path: "aws/prices-live.csv",
                kind: DataKind::Prices,
                provider: Provider::Aws,
                source: format!(
                    "AWS Price List Query API ({url}) and EC2 DescribeSpotPriceHistory, fetched {today}"
                ),
                licence: "public price list",
                text: cache::merge_csv(&previous, &cache::PRICE_HEADER, 1, &regions, &rows),
                notes,
            }])
        }),
    }
}

/// Which zones offer each type, and the shapes of those offered.
fn instance_types(scope: &Scope, configs: &Arc<Configs>) -> Task {
    let (regions, types, prev_av, prev_sh, today, configs) = (
        scope.regions.clone(),
        scope.skus.clone(),
        scope.previous("aws/availability.csv"),
        scope.previous("aws/instance-types.csv"),
        scope.today.clone(),
        Arc::clone(configs),
    );
    Task {
        label: "AWS instance types".into(),
        run: Box::pin(async move {
            let mut avail = Vec::new();
            let mut shape_rows: BTreeMap<String, Vec<String>> = BTreeMap::new();
            for r in &regions {
                let conf = configs.get(r).await;
                let offered = offerings(&conf, r, &types).await?;
                for t in &types {
                    let (zones, why) = match offered.get(t) {
                        Some(z) => (z.join(" "), String::new()),
                        None => (String::new(), "not offered".to_owned()),
                    };
                    let source = "EC2 DescribeInstanceTypeOfferings".into();
                    avail.push(vec![
                        t.clone(),
                        r.clone(),
                        zones,
                        why,
                        today.clone(),
                        source,
                    ]);
                }
                let listed: Vec<String> = types
                    .iter()
                    .filter(|t| offered.contains_key(*t))
                    .cloned()
                    .collect();
                if listed.is_empty() {
                    continue;
                }
                for s in shapes(&conf, r, &listed).await? {
                    shape_rows.insert(
                        s.sku.clone(),
                        vec![
                            s.sku,
                            s.gpus.map(|g| g.to_string()).unwrap_or_default(),
                            s.vcpus.to_string(),
                            s.memory_mib.to_string(),
                            s.efa.to_string(),
                            today.clone(),
                            format!("EC2 DescribeInstanceTypes in {r}"),
                        ],
                    );
                }
            }
            let source = "EC2 (DescribeInstanceTypeOfferings, DescribeInstanceTypes)";
            let shapes_text = cache::merge_csv(
                &prev_sh,
                &columns::SHAPES,
                0,
                &shape_rows.keys().cloned().collect::<Vec<_>>(),
                &shape_rows.into_values().collect::<Vec<_>>(),
            );
            Ok(vec![
                account_csv(
                    "aws/availability.csv",
                    DataKind::Availability,
                    Provider::Aws,
                    &columns::AVAILABILITY,
                    &prev_av,
                    &regions,
                    &avail,
                    source,
                    &today,
                ),
                cache::Entry {
                    path: "aws/instance-types.csv",
                    kind: DataKind::Shapes,
                    provider: Provider::Aws,
                    source: format!("EC2 DescribeInstanceTypes, fetched {today}"),
                    licence: "provider data",
                    text: shapes_text,
                    notes: Vec::new(),
                },
            ])
        }),
    }
}

/// The vCPU quotas of every family the catalog's types use.
fn quota(scope: &Scope, ask: &Ask, configs: &Arc<Configs>) -> Task {
    let (regions, previous, today, configs, codes) = (
        scope.regions.clone(),
        scope.previous("aws/quota.csv"),
        scope.today.clone(),
        Arc::clone(configs),
        ask.codes.clone(),
    );
    Task {
        label: "AWS Service Quotas".into(),
        run: Box::pin(async move {
            let mut rows = Vec::new();
            for r in &regions {
                let conf = configs.get(r).await;
                for (code, v) in quotas(&conf, r, &codes).await? {
                    rows.push(vec![
                        r.clone(),
                        code,
                        v.to_string(),
                        String::new(),
                        today.clone(),
                        "Service Quotas GetServiceQuota (usage not reported)".into(),
                    ]);
                }
            }
            Ok(vec![account_csv(
                "aws/quota.csv",
                DataKind::Quota,
                Provider::Aws,
                &columns::QUOTA,
                &previous,
                &regions,
                &rows,
                "AWS Service Quotas",
                &today,
            )])
        }),
    }
}

/// The Spot Instance Advisor file, cut to the catalog's types, and spot placement scores.
fn eviction(scope: &Scope, ask: &Ask, configs: &Arc<Configs>) -> Task {
    let (types, today, timeout, url, regions, previous_placement, configs, groups) = (
        scope.skus.clone(),
        scope.today.clone(),
        scope.timeout,
        ask.advisor_url.clone(),
        scope.regions.clone(),
        scope.previous("aws/spot-placement.csv"),
        Arc::clone(configs),
        ask.groups.clone(),
    );
    Task {
        label: "AWS Spot Instance Advisor".into(),
        run: Box::pin(async move {
            let u = url.clone();
            let advisor = tokio::task::spawn_blocking(move || {
                let agent = crate::http::agent(timeout);
                crate::http::get_json::<serde_json::Value>(|| agent.get(&u))
                    .map_err(|f| crate::http::describe(&format!("Spot Instance Advisor at {u}"), f))
            })
            .await
            .map_err(|e| e.to_string())??;
            let cut = advisor_cut(&advisor, &types)?;
            let conf = configs.get(&regions[0]).await;
            let rows: Vec<Vec<String>> = placement_scores(&conf, &regions, &groups)
                .await?
                .into_iter()
                .map(|(model, region, score)| {
                    let n = groups
                        .iter()
                        .find(|g| g.0 == model)
                        .map_or(0, |g| g.1.len());
                    vec![
                        model,
                        region,
                        score.to_string(),
                        today.clone(),
                        format!("EC2 GetSpotPlacementScores, 1 instance of any of {n} types"),
                    ]
                })
                .collect();
            Ok(vec![
                cache::Entry {
                    path: "aws/spot-advisor.json",
                    kind: DataKind::SpotBands,
                    provider: Provider::Aws,
                    source: format!("AWS Spot Instance Advisor data ({url}), cut to the catalog's instance types, Linux, fetched {today}"),
                    licence: "AWS public data",
                    text: cut,
                    notes: Vec::new(),
                },
                account_csv(
                    "aws/spot-placement.csv",
                    DataKind::SpotBands,
                    Provider::Aws,
                    &columns::PLACEMENT,
                    &previous_placement,
                    &regions,
                    &rows,
                    "EC2 GetSpotPlacementScores",
                    &today,
                ),
            ])
        }),
    }
}
