//! `gpuplan schema [--output NAME]`: the JSON Schema of the plan format or of a JSON output
//! ([`crate::report::schemas`]).

use crate::core::exit;
use crate::output::Out;
use crate::report::schemas::{self, Output};

pub(crate) fn run(output: Output, out: &Out) -> super::CmdResult {
    let text = match output {
        Output::Plan => schemas::plan_schema_text(),
        o => serde_json::to_string_pretty(&schemas::schema(o)).unwrap_or_default() + "\n",
    };
    out.stdout(&text);
    Ok(exit::OK)
}
