//! `gpuplan init`: a commented starter plan, from `templates/init/`.

use crate::cli::{InitArgs, ProviderArg};
use crate::core::exit;
use crate::output::Out;

const AZURE: &str = include_str!("../../templates/init/azure.toml");
const AWS: &str = include_str!("../../templates/init/aws.toml");

use super::{CmdError, CmdResult};

pub(crate) fn run(args: &InitArgs, out: &Out) -> CmdResult {
    let text = match args.provider {
        ProviderArg::Azure => AZURE,
        ProviderArg::Aws => AWS,
    };
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
    Ok(exit::OK)
}
