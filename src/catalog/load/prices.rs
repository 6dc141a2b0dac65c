//! The embedded price tables: the SkyPilot catalog rows, the dated on-demand tables, and the
//! rules every price file follows (the newest dated figure wins; regions, not zones).

use std::sync::Arc;

use indexmap::IndexMap;

use super::{invalid, CatalogError};
use crate::catalog::{DataSource, Price, ProviderCatalog, SpotBand};
use crate::core::Date;
use crate::core::Provider;
use crate::source::SourceFile;

pub(super) fn csv_err(file: &Arc<SourceFile>, e: &csv::Error) -> CatalogError {
    let at = e
        .position()
        .map_or(0, |p| usize::try_from(p.byte()).unwrap_or(0));
    invalid(file, at..at, format!("malformed CSV: {e}"))
}

pub(super) fn parse_price(
    file: &Arc<SourceFile>,
    rec: &csv::StringRecord,
    idx: usize,
) -> Result<Option<f64>, CatalogError> {
    parse_price_over(file, rec, idx, 1.0)
}

/// [`parse_price`] of a figure that pays for `hours` hours (a reservation's whole term): held
/// to the hourly ceiling once spread over them.
pub(super) fn parse_price_over(
    file: &Arc<SourceFile>,
    rec: &csv::StringRecord,
    idx: usize,
    hours: f64,
) -> Result<Option<f64>, CatalogError> {
    let raw = rec.get(idx).unwrap_or("").trim();
    if raw.is_empty() {
        return Ok(None);
    }
    let at = rec
        .position()
        .map_or(0, |p| usize::try_from(p.byte()).unwrap_or(0));
    match raw.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => {
            within_ceiling(file, at, raw, v / hours).map(|()| Some(v))
        }
        _ => Err(invalid(
            file,
            at..at,
            format!("`{raw}` is not a price in USD per hour"),
        )),
    }
}

/// A price of `usd_per_hour` (as `raw` spells it) at most [`MAX_USD_PER_HOUR`], else the
/// error located at `at`.
pub(super) fn within_ceiling(
    file: &Arc<SourceFile>,
    at: usize,
    raw: &str,
    usd_per_hour: f64,
) -> Result<(), CatalogError> {
    if usd_per_hour <= MAX_USD_PER_HOUR {
        return Ok(());
    }
    Err(invalid(
        file,
        at..at,
        format!(
            "`{raw}` USD is past any machine's price ({MAX_USD_PER_HOUR} an hour at most): a unit or decimal error"
        ),
    ))
}

/// The most one machine may cost an hour. The dearest GPU machines in the catalog list near
/// $100 (an 8-GPU H200 or B200 node); a figure a thousand times past that is a unit or
/// decimal error in a source, and priced as given it would overflow a fleet's cents.
pub(crate) const MAX_USD_PER_HOUR: f64 = 100_000.0;

/// The Azure on-demand table of every GPU size in every region (2026-06-18).
pub(super) const AZURE_TABLE: &str = "azure/ondemand-2026-06-18.csv";

/// Azure Retail Prices rows of four EU regions, Linux meters only (2026-08-20).
pub(super) const AZURE_RETAIL_EU: &str = "azure/retail-eu-2026-08-20.csv";

/// The AWS snapshot with on-demand, spot, bands and reserved rates (2025-11-30).
pub(super) const AWS_SNAPSHOT: &str = "aws/prices-2025-11-30.csv";

/// The newest AWS on-demand figures, us-east-1 only (2026-07-20).
pub(super) const AWS_US_EAST_1: &str = "aws/ondemand-us-east-1-2026-07-20.csv";

/// The date figures from `path` carry: the file's `as_of`, or `None` for an undated source.
pub(super) fn figure_date(sources: &[DataSource], path: &str) -> Option<Date> {
    sources
        .iter()
        .rev()
        .find(|s| s.file == path)
        .filter(|s| !s.undated)
        .map(|s| s.as_of)
}

/// Keep the newer figure: a dated one beats an undated one, a later date an earlier one, and
/// on a tie the one read later (a correction or capture of the same day) wins.
pub(super) fn offer(slot: &mut Option<Price>, p: Price) -> bool {
    if slot.as_ref().is_none_or(|old| old.as_of <= p.as_of) {
        *slot = Some(p);
        true
    } else {
        false
    }
}

/// A spot price replaces the zone list with its own when it is the newer figure.
pub(super) fn offer_spot(entry: &mut crate::catalog::RegionPrices, p: Price, zone: &str) {
    let v = p.usd_per_hour;
    let same_source = entry.spot.as_ref().is_some_and(|s| s.source == p.source);
    if same_source {
        // More zones of the same file: spot is bought in whichever zone has capacity, so the
        // region's figure is the zones' average (the cheapest zone stays listed, as a note).
        entry.spot_zones.push((zone.to_owned(), v));
        let mean =
            entry.spot_zones.iter().map(|z| z.1).sum::<f64>() / entry.spot_zones.len() as f64;
        if let Some(s) = entry.spot.as_mut() {
            s.usd_per_hour = mean;
        }
    } else if offer(&mut entry.spot, p) {
        entry.spot_zones = vec![(zone.to_owned(), v)];
    }
}

pub(super) fn offer_band(pc: &mut ProviderCatalog, key: (String, String), band: SpotBand) {
    match pc.spot_bands.get(&key) {
        Some(old) if old.as_of > band.as_of => {}
        _ => {
            pc.spot_bands.insert(key, band);
        }
    }
}

/// A region name, not a Local Zone or Wavelength zone (`us-east-1-atl-1`), which the tables
/// list beside regions but which node groups do not run in.
pub(super) fn is_region(provider: Provider, r: &str) -> bool {
    (crate::cloud::profile(provider).is_region)(r)
}

/// The index of a named CSV column, or a located error.
pub(super) fn column(
    file: &Arc<SourceFile>,
    headers: &csv::StringRecord,
    name: &str,
) -> Result<usize, CatalogError> {
    headers
        .iter()
        .position(|h| h == name)
        .ok_or_else(|| invalid(file, 0..0, format!("missing CSV column `{name}`")))
}

pub(super) fn row_at(rec: &csv::StringRecord) -> usize {
    rec.position()
        .map_or(0, |p| usize::try_from(p.byte()).unwrap_or(0))
}

/// SkyPilot `vms.csv` rows: InstanceType, ..., Price, SpotPrice, Region, (Generation | AvailabilityZone).
pub(super) fn load_skypilot_prices(
    file: &Arc<SourceFile>,
    pc: &mut ProviderCatalog,
    as_of: Option<Date>,
) -> Result<(), CatalogError> {
    let source: Arc<str> = Arc::from(file.data_name());
    let mut rdr = csv::Reader::from_reader(file.text.as_bytes());
    let headers = rdr.headers().map_err(|e| csv_err(file, &e))?.clone();
    let col = |name: &str| column(file, &headers, name);
    let (c_type, c_price, c_spot, c_region) = (
        col("InstanceType")?,
        col("Price")?,
        col("SpotPrice")?,
        col("Region")?,
    );
    let c_zone = headers.iter().position(|h| h == "AvailabilityZone");
    for rec in rdr.records() {
        let rec = rec.map_err(|e| csv_err(file, &e))?;
        let sku = rec.get(c_type).unwrap_or("");
        if !pc.skus.contains_key(sku) {
            continue;
        }
        let region = rec.get(c_region).unwrap_or("").to_owned();
        let od = parse_price(file, &rec, c_price)?;
        let spot = parse_price(file, &rec, c_spot)?;
        let entry = pc.prices.entry((sku.to_owned(), region)).or_default();
        if let Some(od) = od {
            // The first row of a (SKU, region) is kept: duplicates in the source repeat it.
            if entry.on_demand.is_none() {
                offer(
                    &mut entry.on_demand,
                    Price {
                        usd_per_hour: od,
                        source: Arc::clone(&source),
                        as_of,
                        offering: None,
                    },
                );
            }
        }
        // A spot price equal to (or above) on-demand means the source had none. An undated
        // spot figure is no price at all: spot moves with supply, and the SkyPilot rows were
        // 11% of on-demand where a dated Retail capture says 26% (ND96amsr_A100_v4). Without
        // a dated figure spot is "unknown offline", as Azure reservations are.
        if let Some(sp) = spot.filter(|sp| as_of.is_some() && od.is_none_or(|od| *sp < od)) {
            let zone = c_zone.and_then(|c| rec.get(c)).unwrap_or_default();
            offer_spot(
                entry,
                Price {
                    usd_per_hour: sp,
                    source: Arc::clone(&source),
                    as_of,
                    offering: None,
                },
                zone,
            );
        }
    }
    Ok(())
}

/// `sku|instance_type, region, ondemand_usd_per_hour` tables (from the Karpenter providers'
/// generated price lists). `complete`: the table lists every region a SKU is sold in, so an
/// older row for a region it omits is dropped (the SKU is no longer offered there).
/// `_Promo` sizes are skipped: they are temporary discounts on retired sizes, 2.2-3x off the
/// list price, and not something to plan capacity on.
pub(super) fn load_ondemand_table(
    file: &Arc<SourceFile>,
    pc: &mut ProviderCatalog,
    as_of: Option<Date>,
    complete: bool,
) -> Result<(), CatalogError> {
    let source: Arc<str> = Arc::from(file.data_name());
    let mut rdr = csv::Reader::from_reader(file.text.as_bytes());
    let headers = rdr.headers().map_err(|e| csv_err(file, &e))?.clone();
    if headers.len() != 3 || headers.get(2) != Some("ondemand_usd_per_hour") {
        return Err(invalid(
            file,
            0..0,
            "expected the columns sku (or instance_type), region, ondemand_usd_per_hour".into(),
        ));
    }
    let mut listed: IndexMap<String, Vec<String>> = IndexMap::new();
    for rec in rdr.records() {
        let rec = rec.map_err(|e| csv_err(file, &e))?;
        let (sku, region) = (rec.get(0).unwrap_or(""), rec.get(1).unwrap_or(""));
        let Some(provider) = pc.skus.get(sku).map(|s| s.provider) else {
            continue;
        };
        if sku.ends_with("_Promo") || !is_region(provider, region) {
            continue;
        }
        let Some(v) = parse_price(file, &rec, 2)? else {
            continue;
        };
        if v <= 0.0 {
            return Err(invalid(
                file,
                row_at(&rec)..row_at(&rec),
                format!("`{v}` is not a price: on-demand is never free"),
            ));
        }
        listed
            .entry(sku.to_owned())
            .or_default()
            .push(region.to_owned());
        let entry = pc
            .prices
            .entry((sku.to_owned(), region.to_owned()))
            .or_default();
        offer(
            &mut entry.on_demand,
            Price {
                usd_per_hour: v,
                source: Arc::clone(&source),
                as_of,
                offering: None,
            },
        );
    }
    if complete {
        drop_unlisted(pc, &listed);
    }
    Ok(())
}

/// Forget the older figures of (SKU, region) pairs a complete newer table does not list.
pub(super) fn drop_unlisted(pc: &mut ProviderCatalog, listed: &IndexMap<String, Vec<String>>) {
    let gone = |(sku, region): &(String, String)| {
        listed
            .get(sku)
            .is_some_and(|regions| !regions.contains(region))
    };
    pc.prices.retain(|k, _| !gone(k));
    pc.spot_bands.retain(|k, _| !gone(k));
}
