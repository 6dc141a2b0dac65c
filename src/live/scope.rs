//! What every provider's refresh shares: the scope it covers, the endpoints it may be
//! pointed at, a unit of work, and the per-account files it writes. `refresh` runs the
//! providers' plans; each provider (`aws`, and Azure's in `refresh`) builds its own from
//! these, so the two never import each other.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use crate::live::cache;

/// Endpoint overrides (a local server in tests, a sovereign cloud); `None` is the public one.
#[derive(Debug, Clone, Default)]
pub(crate) struct Endpoints {
    pub azure_management: Option<String>,
    pub azure_prices: Option<String>,
    pub aws_pricing: Option<String>,
    pub aws_spot_advisor: Option<String>,
}

/// One unit of work: a label for the progress bar and what it fetches.
pub(crate) struct Task {
    pub label: String,
    pub run: Pin<Box<dyn Future<Output = Result<Vec<cache::Entry>, String>> + Send>>,
}

crate::core::named_enum! {
    /// A part of a refresh (`--only`). In the order of their text, the order they are listed.
    pub(crate) enum Part {
        /// Spot eviction: Azure's Resource Graph, AWS's Spot Instance Advisor and placement
        /// scores.
        Eviction => "eviction",
        Prices => "prices",
        /// Per-subscription (account) vCPU quotas.
        Quota => "quota",
        /// Which zones offer each SKU (and, on AWS, its shape).
        Skus => "skus",
    }
}

/// What a refresh of one provider needs to know.
pub(crate) struct Scope {
    pub regions: Vec<String>,
    /// The catalog's current (non-retired, x86) SKUs: what eviction and availability are
    /// asked about.
    pub skus: Vec<String>,
    /// What is refreshed, sorted.
    pub parts: Vec<Part>,
    pub timeout: Duration,
    pub today: String,
    /// The cache directory, for the rows of regions not refreshed now.
    pub dir: std::path::PathBuf,
    /// The embedded catalog of the provider refreshed: the SKUs, quota codes and GPU models
    /// to ask about.
    pub catalog: crate::catalog::Catalog,
    /// The Azure subscription quota and SKU availability are read for.
    pub subscription: Option<String>,
    pub endpoints: Endpoints,
    /// Only list the requests (`--dry-run`): no credentials needed, nothing fetched.
    pub dry_run: bool,
}

impl Scope {
    pub(crate) fn wants(&self, part: Part) -> bool {
        self.parts.contains(&part)
    }

    /// The previous text of a cached file: the cache's, else the embedded one, else empty.
    pub(crate) fn previous(&self, path: &str) -> String {
        if cache::present(&self.dir) {
            if let Ok(t) = crate::fsio::read_text(&self.dir.join(path), 64 << 20) {
                return t;
            }
        }
        crate::catalog::embedded_files()
            .into_iter()
            .find(|(p, _)| *p == path)
            .map(|(_, t)| t.to_owned())
            .unwrap_or_default()
    }
}

/// A flag's URL (clap fills it from its environment variable), else the public endpoint.
pub(crate) fn url_or(flag: &Option<String>, default: &str) -> String {
    flag.clone()
        .filter(|u| !u.is_empty())
        .unwrap_or_else(|| default.to_owned())
}

/// A refreshed per-account CSV file (`quota.csv`, `availability.csv`): `rows` for the
/// refreshed regions, the previous rows of the others.
#[allow(clippy::too_many_arguments)]
pub(crate) fn account_csv(
    path: &'static str,
    kind: crate::catalog::DataKind,
    provider: crate::core::Provider,
    columns: &[&str],
    previous: &str,
    regions: &[String],
    rows: &[Vec<String>],
    source: &str,
    today: &str,
) -> cache::Entry {
    let region_col = columns.iter().position(|c| *c == "region").unwrap_or(0);
    cache::Entry {
        path,
        kind,
        provider,
        source: format!("{source}, fetched {today}"),
        licence: "provider data of the account that fetched it",
        text: cache::merge_csv(previous, columns, region_col, regions, rows),
        notes: Vec::new(),
    }
}
