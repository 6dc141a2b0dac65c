//! Live provider data: clients for the providers' APIs and the dated cache they write, in the
//! same layout as the embedded catalog (`providers/`), so every command reads it the same way.
//! Azure: Retail Prices (no credentials), compute usages and resource SKUs
//! (`azure_mgmt_compute`), Resource Graph `SpotResources`. AWS: Price List, EC2, Service
//! Quotas (the SDK), and the Spot Instance Advisor file.

pub mod aws;
pub mod azure_mgmt;
pub mod azure_prices;
pub mod cache;
