//! Every integration test in one binary (as ripgrep's and just's `tests/`): one link of the
//! library instead of one per file. The live provider clients are tested apart, in
//! `tests/live/`, behind the `live` feature.

// Shared with the other test binary, which uses a different part of it.
#[allow(dead_code)]
#[path = "../common/mod.rs"]
mod common;

mod azure_vgpu;
mod capacity_rule;
mod ci_reports;
mod cli;
mod cluster;
mod comment;
mod costs;
mod data;
mod delivers;
mod files;
mod fleet_plan;
mod forecast;
mod hardening;
mod hardening4;
mod hardening5;
mod hardware_facts;
mod invariant;
mod karpenter;
mod kueue;
mod kueue_safeguards;
mod layers;
mod names;
mod oracle;
mod pod_runs;
mod pr;
mod pricing;
mod profile;
mod quality;
mod quota;
mod recommend;
mod registry;
mod release;
mod render;
mod render_nodes;
mod render_pools;
mod review;
mod review_pools;
mod review_stock;
mod review_stock_names;
mod review_stock_pending;
mod review_stock_scrapes;
mod review_store;
mod robustness;
mod rules;
mod serving_forecast;
mod serving_round2;
mod serving_sizing;
mod serving_stores;
