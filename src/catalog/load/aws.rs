//! AWS's own files: the 2025-11-30 snapshot (on-demand, spot, bands, Reserved Instance
//! rates), the Spot Instance Advisor file, the us-east-1 table, and what a refresh writes
//! (prices, instance shapes, spot placement scores).

use std::sync::Arc;

use indexmap::IndexMap;
use serde::Deserialize;

use super::prices::{
    column, csv_err, is_region, offer, offer_band, offer_spot, parse_price, row_at,
};
use super::prices::{figure_date, load_ondemand_table, AWS_SNAPSHOT, AWS_US_EAST_1};
use super::refreshed::{load_retail_overrides, load_shapes, records, row_source};
use super::{invalid, CatalogError, Files};
use crate::catalog::{Catalog, Price, ProviderCatalog, SpotBand};
use crate::core::Date;
use crate::core::Provider;
use crate::source::SourceFile;

/// The AWS snapshot (instances.vantage.sh, 2025-11-30): on-demand, spot min, interruption band
/// and Reserved Instance effective hourly rates per instance type and region. It is not
/// complete (six priced offerings are missing from it), so a region it omits keeps an older
/// source's figure rather than being dropped.
fn load_aws_snapshot(
    file: &Arc<SourceFile>,
    pc: &mut ProviderCatalog,
    catalog: &Catalog,
    as_of: Option<Date>,
) -> Result<(), CatalogError> {
    let mut rdr = csv::Reader::from_reader(file.text.as_bytes());
    let headers = rdr.headers().map_err(|e| csv_err(file, &e))?.clone();
    let col = |name: &str| column(file, &headers, name);
    let (c_type, c_region, c_od, c_spot, c_spot_min, c_band) = (
        col("instance_type")?,
        col("region")?,
        col("ondemand")?,
        col("spot_avg")?,
        col("spot_min")?,
        col("pct_interrupt")?,
    );
    // The term gpuplan quotes, in order of preference: standard before convertible (cheaper,
    // and what a steady floor needs), no upfront before partial and all upfront (no capital
    // outlay; the rates are effective hourly with any upfront amortised over the term).
    let terms = |years: u8| -> Result<Vec<(usize, String)>, CatalogError> {
        let mut out = Vec::new();
        for (kind, label) in [
            ("Standard.noUpfront", "standard, no upfront"),
            ("Standard.partialUpfront", "standard, partial upfront"),
            ("Standard.allUpfront", "standard, all upfront"),
            ("Convertible.noUpfront", "convertible, no upfront"),
        ] {
            out.push((
                col(&format!("yrTerm{years}{kind}"))?,
                format!("{years}-year {label}"),
            ));
        }
        Ok(out)
    };
    let cols = Columns {
        c_type,
        c_region,
        c_od,
        c_spot,
        c_spot_min,
        c_band,
        terms_1y: terms(1)?,
        terms_3y: terms(3)?,
    };
    for rec in rdr.records() {
        let rec = rec.map_err(|e| csv_err(file, &e))?;
        snapshot_row(file, pc, catalog, as_of, &cols, &rec)?;
    }
    Ok(())
}

/// Where each figure of the snapshot is, and the reserved terms in order of preference.
struct Columns {
    c_type: usize,
    c_region: usize,
    c_od: usize,
    c_spot: usize,
    c_spot_min: usize,
    c_band: usize,
    terms_1y: Vec<(usize, String)>,
    terms_3y: Vec<(usize, String)>,
}

/// One row of the snapshot: on-demand, reserved and spot prices, and the interruption band.
fn snapshot_row(
    file: &Arc<SourceFile>,
    pc: &mut ProviderCatalog,
    catalog: &Catalog,
    as_of: Option<Date>,
    cols: &Columns,
    rec: &csv::StringRecord,
) -> Result<(), CatalogError> {
    let (c_type, c_region, c_od) = (cols.c_type, cols.c_region, cols.c_od);
    let (c_spot, c_spot_min, c_band) = (cols.c_spot, cols.c_spot_min, cols.c_band);
    let (terms_1y, terms_3y) = (&cols.terms_1y, &cols.terms_3y);
    let name: &str = file.data_name();
    let (sku, region) = (
        rec.get(c_type).unwrap_or(""),
        rec.get(c_region).unwrap_or(""),
    );
    if !pc.skus.contains_key(sku) || !is_region(Provider::Aws, region) {
        return Ok(());
    }
    let at = row_at(rec);
    let Some(od) = parse_price(file, rec, c_od)? else {
        return Ok(());
    };
    let key = (sku.to_owned(), region.to_owned());
    let price = |usd: f64, what: &str| Price {
        usd_per_hour: usd,
        source: Arc::from(format!("{name} ({what})")),
        as_of,
        offering: None,
    };
    let reserved = |terms: &[(usize, String)]| -> Result<Option<Price>, CatalogError> {
        for (c, label) in terms {
            if let Some(v) = parse_price(file, rec, *c)? {
                if v > 0.0 && v < od {
                    return Ok(Some(Price {
                        offering: Some(Arc::from(label.as_str())),
                        ..price(v, &format!("Reserved Instance, {label}, effective hourly"))
                    }));
                }
                return Err(invalid(
                    file,
                    at..at,
                    format!(
                        "reserved rate {v} for `{sku}` in {region} is not below its on-demand {od}"
                    ),
                ));
            }
        }
        Ok(None)
    };
    let (r1, r3) = (reserved(terms_1y)?, reserved(terms_3y)?);
    let entry = pc.prices.entry(key.clone()).or_default();
    offer(&mut entry.on_demand, price(od, "Linux on-demand"));
    if let Some(p) = r1 {
        offer(&mut entry.reserved_1y, p);
    }
    if let Some(p) = r3 {
        offer(&mut entry.reserved_3y, p);
    }
    // Spot as bought: the zones' average (a pool's nodes land in whichever zone has
    // capacity), with the cheapest zone named in the source, never priced at it. A spot
    // price at or above on-demand is no spot price (as in the SkyPilot rows).
    if let Some(sp) = parse_price(file, rec, c_spot)?.filter(|sp| *sp > 0.0 && *sp < od) {
        let cheapest = parse_price(file, rec, c_spot_min)?.filter(|m| *m < sp);
        offer_spot(entry, price(sp, "spot, zones' average"), "");
        if entry.spot.as_ref().is_some_and(|s| s.usd_per_hour == sp) {
            entry.spot_cheapest_zone = cheapest;
        }
    }
    let label = rec.get(c_band).unwrap_or("").trim();
    if !label.is_empty() {
        let Some(b) = catalog
            .assumptions
            .band_monthly_interruption
            .iter()
            .find(|b| b.1 == label)
        else {
            return Err(invalid(
                file,
                at..at,
                format!("interruption band `{label}`: expected <5%, 5-10%, 10-15%, 15-20% or >20%"),
            ));
        };
        offer_band(
            pc,
            key,
            SpotBand {
                index: b.0,
                label: label.to_owned(),
                savings_pct: None,
                source: Arc::from(format!("{name} (Spot Instance Advisor band)")),
                as_of,
            },
        );
    }

    Ok(())
}

#[derive(Deserialize)]
pub(super) struct AdvisorFile {
    ranges: Vec<AdvisorRange>,
    spot_advisor: IndexMap<String, IndexMap<String, IndexMap<String, AdvisorEntry>>>,
}

#[derive(Deserialize)]
pub(super) struct AdvisorRange {
    index: u8,
    label: String,
}

#[derive(Deserialize)]
pub(super) struct AdvisorEntry {
    s: i32,
    r: u8,
}

fn load_advisor(
    file: &Arc<SourceFile>,
    pc: &mut ProviderCatalog,
    as_of: Option<Date>,
) -> Result<(), CatalogError> {
    let parsed: AdvisorFile = serde_json::from_str(&file.text).map_err(|e| {
        let off = line_offset(&file.text, e.line(), e.column());
        invalid(file, off..off, format!("spot advisor data: {e}"))
    })?;
    let source: Arc<str> = Arc::from(file.data_name());
    for (region, oses) in parsed.spot_advisor {
        let Some(linux) = oses.get("Linux") else {
            continue;
        };
        for (ty, e) in linux {
            if !pc.skus.contains_key(ty) {
                continue;
            }
            // A band the file's own ranges do not define has no interruption rate to read.
            let Some(label) = parsed
                .ranges
                .iter()
                .find(|r| r.index == e.r)
                .map(|r| r.label.clone())
            else {
                let at = file.text.find(&format!("\"{ty}\"")).unwrap_or(0);
                return Err(invalid(
                    file,
                    at..at,
                    format!(
                        "spot advisor data: `{ty}` in {region} has interruption band {}, which the file's `ranges` do not define (they define {})",
                        e.r,
                        parsed
                            .ranges
                            .iter()
                            .map(|r| r.index.to_string())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                ));
            };
            offer_band(
                pc,
                (ty.clone(), region.clone()),
                SpotBand {
                    index: e.r,
                    label,
                    savings_pct: Some(e.s),
                    source: Arc::clone(&source),
                    as_of,
                },
            );
        }
    }
    Ok(())
}

pub(super) fn line_offset(text: &str, line: usize, col: usize) -> usize {
    text.split_inclusive('\n')
        .take(line.saturating_sub(1))
        .map(str::len)
        .sum::<usize>()
        + col.saturating_sub(1)
}

/// AWS's Spot Advisor, price snapshot and table, refreshed prices, shapes and placement
/// scores, oldest first.
pub(super) fn load(
    files: &Files,
    pc: &mut ProviderCatalog,
    catalog: &Catalog,
) -> Result<(), CatalogError> {
    let dated = |path: &str| figure_date(&catalog.sources, path);
    let advisor = files.read("aws/spot-advisor.json")?;
    load_advisor(&advisor, pc, dated("aws/spot-advisor.json"))?;
    if let Some(f) = files.optional(AWS_SNAPSHOT)? {
        load_aws_snapshot(&f, pc, catalog, dated(AWS_SNAPSHOT))?;
    }
    if let Some(f) = files.optional(AWS_US_EAST_1)? {
        load_ondemand_table(&f, pc, dated(AWS_US_EAST_1), false)?;
    }
    if let Some(f) = files.optional("aws/prices-live.csv")? {
        load_retail_overrides(&f, pc)?;
    }
    if let Some(f) = files.optional("aws/instance-types.csv")? {
        load_shapes(&f, pc)?;
    }
    if let Some(f) = files.optional("aws/spot-placement.csv")? {
        for (at, r) in records(&f, &crate::catalog::columns::PLACEMENT)? {
            let score = r[2]
                .parse::<u8>()
                .ok()
                .filter(|s| (1..=10).contains(s))
                .ok_or_else(|| {
                    invalid(
                        &f,
                        at..at,
                        format!("`{}` is not a placement score (1-10)", r[2]),
                    )
                })?;
            pc.spot_placement.insert(
                (r[0].clone(), r[1].clone()),
                (score, row_source(&f, &r[4], &r[3])),
            );
        }
    }
    Ok(())
}
