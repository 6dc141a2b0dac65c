//! The columns of the files `catalog refresh` writes and the loader reads: one definition of
//! each format.

/// `{provider}/quota.csv`, region in column 0.
pub(crate) const QUOTA: [&str; 6] = [
    "region",
    "family",
    "limit_vcpus",
    "used_vcpus",
    "captured",
    "source",
];
/// `{provider}/availability.csv`, region in column 1.
pub(crate) const AVAILABILITY: [&str; 6] = [
    "sku",
    "region",
    "zones",
    "restriction",
    "captured",
    "source",
];
/// `azure/spot-eviction.csv`, region in column 1.
pub(crate) const EVICTION: [&str; 6] = [
    "sku",
    "region",
    "band",
    "spot_usd_per_hour",
    "captured",
    "source",
];
/// `aws/instance-types.csv`, keyed by SKU.
pub(crate) const SHAPES: [&str; 7] = [
    "sku",
    "gpu_count",
    "vcpus",
    "memory_mib",
    "efa",
    "captured",
    "source",
];
/// `aws/spot-placement.csv`, region in column 1.
pub(crate) const PLACEMENT: [&str; 5] = ["gpu_model", "region", "score", "captured", "source"];
