//! `gpuplan init`: a commented starter plan, from `templates/init/`.

use crate::cli::{InitArgs, ProviderArg};
use crate::core::exit;
use crate::output::{write_atomic, Out};

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
    if args.path.exists() && !args.force {
        return Err(CmdError::Usage(format!(
            "`{}` already exists; pass --force to overwrite it",
            args.path.display()
        )));
    }
    write_atomic(&args.path, text.as_bytes()).map_err(|e| CmdError::write(&args.path, e))?;
    out.info(&format!(
        "wrote {}; run `gpuplan check {}`",
        args.path.display(),
        args.path.display()
    ));
    Ok(exit::OK)
}
