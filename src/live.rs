//! Live provider data: clients for the providers' APIs and the dated cache they write, in the
//! same layout as the embedded catalog (`providers/`), so every command reads it the same way.
//! Azure: Retail Prices (no credentials), compute usages and resource SKUs
//! (`azure_mgmt_compute`), Resource Graph `SpotResources`. AWS: Price List, EC2, Service
//! Quotas (the SDK), and the Spot Instance Advisor file.

#[cfg(feature = "live")]
pub(crate) mod aws;
#[cfg(feature = "live")]
pub(crate) mod azure_mgmt;
pub(crate) mod azure_prices;
pub(crate) mod cache;
#[cfg(feature = "live")]
pub(crate) mod refresh;

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
