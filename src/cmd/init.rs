//! `gpuplan init`: a commented starter plan, from `templates/init/`.

use crate::cli::{InitArgs, ProviderArg};
use crate::core::exit;
use crate::output::{write_atomic, Out};

const AZURE: &str = include_str!("../../templates/init/azure.toml");
const AWS: &str = include_str!("../../templates/init/aws.toml");

pub(crate) fn run(args: &InitArgs, out: &Out) -> u8 {
    let text = match args.provider {
        ProviderArg::Azure => AZURE,
        ProviderArg::Aws => AWS,
    };
    if args.path.as_os_str() == "-" {
        out.stdout(text);
        return exit::OK;
    }
    if args.path.exists() && !args.force {
        out.stderr(&format!(
            "error: `{}` already exists; pass --force to overwrite it\n",
            args.path.display()
        ));
        return exit::INPUT;
    }
    match write_atomic(&args.path, text.as_bytes()) {
        Ok(()) => {
            out.info(&format!(
                "wrote {}; run `gpuplan check {}`",
                args.path.display(),
                args.path.display()
            ));
            exit::OK
        }
        Err(e) => {
            out.stderr(&format!(
                "error: cannot write `{}`: {e}\n",
                args.path.display()
            ));
            exit::INPUT
        }
    }
}
