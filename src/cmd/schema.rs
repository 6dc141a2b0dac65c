//! `gpuplan schema`: JSON Schema of the plan format, generated from the plan types.

use crate::core::exit;
use crate::output::Out;
use crate::plan::raw::RawPlan;

pub(crate) fn schema_json() -> String {
    let mut schema = schemars::schema_for!(RawPlan);
    schema.schema.metadata().title = Some("gpuplan plan file (format version 1)".into());
    serde_json::to_string_pretty(&schema).unwrap_or_default() + "\n"
}

pub(crate) fn run(out: &Out) -> super::CmdResult {
    out.stdout(&schema_json());
    Ok(exit::OK)
}
