//! Azure data: Retail Prices (no credentials); compute usages and resource SKUs
//! (`azure_mgmt_compute`) and Resource Graph `SpotResources` through the standard credential
//! chain; and the refresh planner that asks for them.

#[cfg(feature = "live")]
pub(crate) mod mgmt;
#[cfg(feature = "live")]
mod plan;
pub(crate) mod prices;

#[cfg(feature = "live")]
pub(crate) use plan::plan;
