use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = match gpuplan::cli::Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            // clap: help and version are success; every usage error is exit 2.
            return if e.use_stderr() {
                ExitCode::from(2)
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    ExitCode::from(gpuplan::run(cli))
}
