//! Live provider data: clients for the providers' APIs and the dated cache they write, in the
//! same layout as the embedded catalog (`providers/`), so every command reads it the same way.
//! Azure: Retail Prices (no credentials), compute usages and resource SKUs
//! (`azure_mgmt_compute`), Resource Graph `SpotResources`. AWS: Price List, EC2, Service
//! Quotas (the SDK), and the Spot Instance Advisor file.

#[cfg(feature = "live")]
pub(crate) mod aws;
pub(crate) mod azure;
pub(crate) mod cache;
#[cfg(feature = "live")]
pub(crate) mod refresh;
#[cfg(feature = "live")]
pub(crate) mod scope;

/// Why a refresh did not happen; the cache is as it was in every case.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub(crate) enum LiveError {
    /// The refresh cannot be made as asked: no regions, an unknown part, no subscription.
    #[error("{0}")]
    #[diagnostic(code(gpuplan::live::request))]
    Request(String),
    /// A provider API could not be reached, refused, or answered in a shape it does not
    /// document (the message names the API, the region and the HTTP status).
    #[error("{0}; the cache is unchanged")]
    #[diagnostic(code(gpuplan::live::fetch))]
    Fetch(String),
    #[error("cannot start the async runtime: {0}")]
    #[diagnostic(code(gpuplan::live::runtime))]
    Runtime(#[source] std::io::Error),
    #[error(transparent)]
    #[diagnostic(code(gpuplan::live::catalog))]
    Catalog(#[from] crate::catalog::CatalogError),
    #[error("{0}; the cache is unchanged")]
    #[diagnostic(code(gpuplan::live::cache))]
    Cache(#[from] cache::CacheError),
}

/// Keep one price per key: the lowest of each run of `rows` (sorted by key, then price) that
/// `same` holds together. Where a run held different prices, a note names the key, the range
/// and what was kept: a price list that lists one size twice at two prices is the provider's
/// to explain, and choosing one silently hides it (issue 75). Equal repeats say nothing, nor
/// does a key `name` gives `None`: one whose several prices are by design.
pub(crate) fn lowest_per<T>(
    rows: &mut Vec<T>,
    same: impl Fn(&T, &T) -> bool,
    price: impl Fn(&T) -> f64,
    name: impl Fn(&T) -> Option<String>,
) -> Vec<String> {
    let mut notes = Vec::new();
    let mut start = 0;
    while start < rows.len() {
        let end = start
            + rows[start..]
                .iter()
                .take_while(|r| same(&rows[start], r))
                .count();
        let (lo, hi) = (price(&rows[start]), price(&rows[end - 1]));
        if let Some(name) = name(&rows[start]).filter(|_| hi > lo) {
            notes.push(format!(
                "{name}: {} rows at different prices (${lo} to ${hi}); kept the lowest, ${lo}",
                end - start
            ));
        }
        start = end;
    }
    rows.dedup_by(|b, a| same(a, b));
    notes
}

/// A listing longer than this many pages is a paging loop, not data: no provider answer
/// gpuplan asks for runs past a few pages.
pub(crate) const MAX_PAGES: usize = 50;

/// The continuation token of a paged listing (`NextToken`, `$skipToken`), guarded: a token
/// that comes back unchanged, or a chain past `MAX_PAGES`, is an error, not more requests.
pub(crate) struct Pages {
    what: String,
    /// The token's name in the API, for messages.
    name: &'static str,
    n: usize,
    token: Option<String>,
}

impl Pages {
    pub(crate) fn new(what: &str, name: &'static str) -> Pages {
        Pages {
            what: what.to_owned(),
            name,
            n: 0,
            token: None,
        }
    }

    /// The token to send with the next request: none for the first page.
    pub(crate) fn token(&self) -> Option<String> {
        self.token.clone()
    }

    /// Take the token an answer gave: `Ok(true)` when another page follows.
    pub(crate) fn advance(&mut self, next: Option<&str>) -> Result<bool, String> {
        let Some(t) = next.filter(|t| !t.is_empty()) else {
            return Ok(false);
        };
        self.n += 1;
        if self.n >= MAX_PAGES {
            return Err(format!(
                "{}: more than {MAX_PAGES} pages; the {} chain does not end",
                self.what, self.name
            ));
        }
        if self.token.as_deref() == Some(t) {
            return Err(format!(
                "{}: the same {} came back twice; paging stopped",
                self.what, self.name
            ));
        }
        self.token = Some(t.to_owned());
        Ok(true)
    }
}
