//! Live provider data: clients for the providers' APIs and the dated cache they write, in the
//! same layout as the embedded catalog (`providers/`), so every command reads it the same way.
//!
//! Built so far: Azure retail prices (on-demand, spot and 1/3-year reservations) from the
//! public Retail Prices API. Not built yet: Azure Resource Graph eviction bands, compute
//! usages and resource SKUs, and the AWS clients; `refresh` says so when asked for them.

pub mod azure_prices;
pub mod cache;
