//! The live provider clients (Azure and AWS SDKs, the refresh) against local servers that
//! speak the real wire formats: one binary, built only with the `live` feature.

// Shared with the other test binary, which uses a different part of it.
#[allow(dead_code)]
#[path = "../common/mod.rs"]
mod common;

mod live;
mod live_aws;
mod live_azure;
