//! `gpuplan init`: a commented starter plan, from `templates/init/`.

use crate::cli::InitArgs;
use crate::core::exit;
use crate::output::Out;

use super::{CmdError, CmdResult};

/// The schema file the starter plan's `#:schema` line names.
const SCHEMA_FILE: &str = "gpuplan.schema.json";

pub(crate) fn run(args: &InitArgs, out: &Out) -> CmdResult {
    let text = crate::cloud::profile(args.provider).starter_plan;
    if args.path.as_os_str() == "-" {
        out.stdout(text);
        return Ok(exit::OK);
    }
    if std::fs::symlink_metadata(&args.path).is_ok() && !args.force {
        return Err(CmdError::Usage(format!(
            "`{}` already exists; pass --force to overwrite it",
            crate::core::shown(&args.path)
        )));
    }
    super::write_output(out, &args.path, text, &[])?;
    let shown = crate::core::shown(&args.path);
    out.info(&format!("wrote {shown}; run `gpuplan check {shown}`"));
    // The schema its `#:schema` line names, beside it; one already there is the user's.
    let schema = args
        .path
        .parent()
        .unwrap_or(std::path::Path::new(""))
        .join(SCHEMA_FILE);
    if std::fs::symlink_metadata(&schema).is_ok() && !args.force {
        out.info(&format!(
            "kept {}; `gpuplan schema > {SCHEMA_FILE}` writes it anew",
            crate::core::shown(&schema)
        ));
    } else {
        super::write_output(
            out,
            &schema,
            &crate::report::schemas::plan_schema_text(),
            &[],
        )?;
        out.info(&format!(
            "wrote {} (the plan's JSON Schema, for editors)",
            crate::core::shown(&schema)
        ));
    }
    Ok(exit::OK)
}
