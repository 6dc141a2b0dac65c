//! Files a refresh writes (and the embedded Retail capture in the same shape): captured
//! Retail Prices rows, quota, availability, Azure eviction bands, EC2 instance shapes and
//! spot placement scores, each row dated by its `captured` column.

use std::sync::Arc;

use super::prices::{csv_err, offer, offer_spot, row_at};
use super::{invalid, CatalogError};
use crate::catalog::{Catalog, InterNode, Price, ProviderCatalog, SpotBand};
use crate::core::Date;
use crate::source::SourceFile;

/// A captured price row's kind, as the refresh writes it.
#[derive(Clone, Copy)]
enum RowKind {
    Consumption,
    Spot,
    CapacityBlock,
    /// A reservation of `years` (1 or 3), priced for the whole term.
    Reservation {
        years: u8,
    },
}

impl RowKind {
    fn parse(kind: &str) -> Option<RowKind> {
        Some(match kind {
            "consumption" => RowKind::Consumption,
            "spot" => RowKind::Spot,
            "capacity-block" => RowKind::CapacityBlock,
            "reservation-1y" => RowKind::Reservation { years: 1 },
            "reservation-3y" => RowKind::Reservation { years: 3 },
            _ => return None,
        })
    }
}

/// Captured Retail Prices rows, newer than the SkyPilot snapshot: they replace it.
pub(super) fn load_retail_overrides(
    file: &Arc<SourceFile>,
    pc: &mut ProviderCatalog,
) -> Result<(), CatalogError> {
    let mut rdr = csv::Reader::from_reader(file.text.as_bytes());
    // A refresh writes one row per SKU, region and kind; a second is an edit that would
    // otherwise be resolved silently by date and price (issue 75).
    let mut first: std::collections::BTreeMap<(String, String, String), usize> =
        std::collections::BTreeMap::new();
    for rec in rdr.records() {
        let rec = rec.map_err(|e| csv_err(file, &e))?;
        let (sku, region, kind) = (
            rec.get(0).unwrap_or(""),
            rec.get(1).unwrap_or(""),
            rec.get(2).unwrap_or(""),
        );
        let at = row_at(&rec);
        if let Some(line) = first.get(&(sku.to_owned(), region.to_owned(), kind.to_owned())) {
            return Err(invalid(
                file,
                at..at,
                format!(
                    "a second `{}` price for `{}` in `{}` (the first is on line {line}): a refreshed price file holds one row per SKU, region and kind; remove one, or refresh again",
                    kind.escape_debug(),
                    sku.escape_debug(),
                    region.escape_debug()
                ),
            ));
        }
        first.insert(
            (sku.to_owned(), region.to_owned(), kind.to_owned()),
            rec.position()
                .map_or(0, |p| usize::try_from(p.line()).unwrap_or(0)),
        );
        // Rows of sizes the catalog does not list price nothing a plan can name.
        let Some(provider) = pc.skus.get(sku).map(|s| s.provider) else {
            continue;
        };
        if !super::prices::is_region(provider, region) {
            return Err(invalid(
                file,
                at..at,
                format!("`{}` is not a region name", region.escape_debug()),
            ));
        }
        // Reservation rows price the whole term: the ceiling holds per hour of it.
        let term = match RowKind::parse(kind) {
            Some(RowKind::Reservation { years }) => 8760.0 * f64::from(years),
            _ => 1.0,
        };
        let Some(v) = super::prices::parse_price_over(file, &rec, 3, term)? else {
            continue;
        };
        // `captured` is the day the row was fetched: the figure's date.
        let captured = rec.get(5).unwrap_or("").trim();
        let as_of = Some(captured_date(file, at, captured)?);
        let source: Arc<str> = Arc::from(format!(
            "{} ({}, captured {})",
            file.data_name(),
            rec.get(6).unwrap_or(""),
            rec.get(5).unwrap_or("")
        ));
        let price = Price {
            usd_per_hour: v,
            source,
            as_of,
            offering: None,
        };
        let entry = pc
            .prices
            .entry((sku.to_owned(), region.to_owned()))
            .or_default();
        let Some(kind) = RowKind::parse(kind) else {
            return Err(invalid(
                file,
                at..at,
                format!("price kind `{kind}`: expected consumption, spot, capacity-block, reservation-1y or reservation-3y"),
            ));
        };
        match kind {
            RowKind::Consumption => {
                offer(&mut entry.on_demand, price);
            }
            RowKind::CapacityBlock => {
                offer(&mut entry.capacity_block, price);
            }
            RowKind::Spot => offer_spot(entry, price, ""),
            // Reservation rows carry the price of the whole term (Retail Prices API): 365 or
            // 3 x 365 days of 24 hours.
            RowKind::Reservation { years } => {
                let hourly = Price {
                    usd_per_hour: price.usd_per_hour / (8760.0 * f64::from(years)),
                    offering: Some(Arc::from(format!("{years}-year reservation"))),
                    ..price
                };
                let slot = if years == 1 {
                    &mut entry.reserved_1y
                } else {
                    &mut entry.reserved_3y
                };
                offer(slot, hourly);
            }
        }
    }
    Ok(())
}

/// The records of a refreshed CSV file with its named columns, each record with its byte
/// offset for errors.
pub(super) fn records(
    file: &Arc<SourceFile>,
    columns: &[&str],
) -> Result<Vec<(usize, Vec<String>)>, CatalogError> {
    let mut rdr = csv::Reader::from_reader(file.text.as_bytes());
    let headers = rdr.headers().map_err(|e| csv_err(file, &e))?.clone();
    let idx = columns
        .iter()
        .map(|c| {
            headers
                .iter()
                .position(|h| h == *c)
                .ok_or_else(|| invalid(file, 0..0, format!("missing CSV column `{c}`")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let mut out = Vec::new();
    for rec in rdr.records() {
        let rec = rec.map_err(|e| csv_err(file, &e))?;
        let at = rec
            .position()
            .map_or(0, |p| usize::try_from(p.byte()).unwrap_or(0));
        out.push((
            at,
            idx.iter()
                .map(|&i| rec.get(i).unwrap_or("").trim().to_owned())
                .collect(),
        ));
    }
    Ok(out)
}

/// The names of a refreshed row (SKU, region, family, zones): catalog names, or a located
/// error, never text that could reach a rendered file as code.
fn names<'a>(
    file: &Arc<SourceFile>,
    at: usize,
    names: impl IntoIterator<Item = &'a str>,
) -> Result<(), CatalogError> {
    match names.into_iter().find(|n| !crate::catalog::name_ok(n)) {
        Some(n) => Err(invalid(
            file,
            at..at,
            format!("`{}` is not a catalog name", n.escape_debug()),
        )),
        None => Ok(()),
    }
}

pub(super) fn number(
    file: &Arc<SourceFile>,
    at: usize,
    raw: &str,
    what: &str,
) -> Result<f64, CatalogError> {
    match raw.parse::<f64>() {
        // Past the price ceiling nothing here is a count or a price: a vCPU limit of 1e306
        // is as much an error as such a price.
        Ok(v) if v.is_finite() && (0.0..=1e9).contains(&v) => Ok(v),
        Ok(v) if v.is_finite() && v > 1e9 => Err(invalid(
            file,
            at..at,
            format!("`{raw}` is not {what}: past any real figure"),
        )),
        _ => Err(invalid(file, at..at, format!("`{raw}` is not {what}"))),
    }
}

pub(super) fn row_source(file: &Arc<SourceFile>, source: &str, captured: &str) -> Arc<str> {
    Arc::from(format!(
        "{} ({source}, captured {captured})",
        file.data_name()
    ))
}

/// `quota.csv`: region, family, limit_vcpus, used_vcpus, captured, source.
pub(super) fn load_quota(
    file: &Arc<SourceFile>,
    pc: &mut ProviderCatalog,
) -> Result<(), CatalogError> {
    for (at, r) in records(file, &crate::catalog::columns::QUOTA)? {
        names(file, at, [r[0].as_str(), r[1].as_str()])?;
        let limit = number(file, at, &r[2], "a vCPU limit")?;
        // AWS Service Quotas reports no usage.
        let used = match r[3].as_str() {
            "" => None,
            u => Some(number(file, at, u, "a vCPU count")?),
        };
        pc.quotas.insert(
            (r[0].clone(), crate::catalog::quota_key(&r[1])),
            crate::catalog::QuotaLimit {
                family: r[1].clone(),
                limit,
                used,
                source: row_source(file, &r[5], &r[4]),
            },
        );
    }
    Ok(())
}

/// `availability.csv`: sku, region, zones (space-separated), restriction, captured, source.
pub(super) fn load_availability(
    file: &Arc<SourceFile>,
    pc: &mut ProviderCatalog,
) -> Result<(), CatalogError> {
    for (at, r) in records(file, &crate::catalog::columns::AVAILABILITY)? {
        names(
            file,
            at,
            [r[0].as_str(), r[1].as_str()]
                .into_iter()
                .chain(r[2].split_whitespace()),
        )?;
        pc.availability.insert(
            (r[0].clone(), r[1].clone()),
            crate::catalog::Availability {
                zones: r[2].split_whitespace().map(str::to_owned).collect(),
                restriction: Some(r[3].clone()).filter(|x| !x.is_empty()),
                source: row_source(file, &r[5], &r[4]),
            },
        );
    }
    Ok(())
}

/// `azure/spot-eviction.csv`: sku, region, band (`0-5` … `20+`), spot_usd_per_hour, captured,
/// source. A band replaces the catalog's "unknown"; a spot price replaces the retail one.
pub(super) fn load_eviction(
    file: &Arc<SourceFile>,
    pc: &mut ProviderCatalog,
    catalog: &Catalog,
) -> Result<(), CatalogError> {
    for (at, r) in records(file, &crate::catalog::columns::EVICTION)? {
        names(file, at, [r[0].as_str(), r[1].as_str()])?;
        let source = row_source(file, &r[5], &r[4]);
        let as_of = Some(captured_date(file, at, &r[4])?);
        if !r[2].is_empty() {
            let Some(b) = catalog
                .assumptions
                .band_monthly_interruption
                .iter()
                .find(|b| b.2 == r[2])
            else {
                return Err(invalid(
                    file,
                    at..at,
                    format!(
                        "eviction band `{}`: expected 0-5, 5-10, 10-15, 15-20 or 20+",
                        r[2]
                    ),
                ));
            };
            pc.spot_bands.insert(
                (r[0].clone(), r[1].clone()),
                SpotBand {
                    index: b.0,
                    label: r[2].clone(),
                    savings_pct: None,
                    source: Arc::clone(&source),
                    as_of,
                },
            );
        }
        if !r[3].is_empty() {
            let v = number(file, at, &r[3], "a price in USD per hour")?;
            super::prices::within_ceiling(file, at, &r[3], v)?;
            let entry = pc.prices.entry((r[0].clone(), r[1].clone())).or_default();
            offer_spot(
                entry,
                Price {
                    usd_per_hour: v,
                    source,
                    as_of,
                    offering: None,
                },
                "",
            );
        }
    }
    Ok(())
}

/// The date of a refreshed row's `captured` (a date or an RFC 3339 time).
pub(super) fn captured_date(
    file: &Arc<SourceFile>,
    at: usize,
    captured: &str,
) -> Result<Date, CatalogError> {
    captured.get(..10).and_then(Date::parse).ok_or_else(|| {
        invalid(
            file,
            at..at,
            format!("`captured` is `{captured}`, expected a date (YYYY-MM-DD)"),
        )
    })
}

/// `aws/instance-types.csv` (DescribeInstanceTypes): sku, gpu_count, vcpus, memory_mib, efa,
/// captured, source. The provider's own shape replaces the catalog's.
pub(super) fn load_shapes(
    file: &Arc<SourceFile>,
    pc: &mut ProviderCatalog,
) -> Result<(), CatalogError> {
    for (at, r) in records(file, &crate::catalog::columns::SHAPES)? {
        let Some(sku) = pc.skus.get_mut(&r[0]) else {
            continue;
        };
        let whole = |raw: &str, what: &str| -> Result<u32, CatalogError> {
            raw.parse::<u32>()
                .map_err(|_| invalid(file, at..at, format!("`{raw}` is not {what}")))
        };
        // Fractional-GPU sizes report one GPU; their share stays the catalog's.
        if !r[1].is_empty() && sku.gpu_partition >= 1.0 {
            sku.gpu_count = whole(&r[1], "a GPU count")?;
        }
        sku.vcpus = whole(&r[2], "a vCPU count")?;
        sku.memory_gib = number(file, at, &r[3], "a memory size in MiB")? / 1024.0;
        if r[4] == "true" && sku.inter_node == InterNode::None {
            sku.inter_node = InterNode::Efa;
        }
    }
    Ok(())
}
