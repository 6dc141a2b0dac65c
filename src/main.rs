use std::process::ExitCode;

use clap::Parser;

/// The variables gpuplan reads. Set but empty means unset (as in most tools): clap would
/// otherwise take an empty `GPUPLAN_CACHE` as a directory named "".
const ENV: &[&str] = &[
    "GPUPLAN_CACHE",
    "GPUPLAN_CATALOG",
    "GPUPLAN_PROMETHEUS_URL",
    "GPUPLAN_PROMETHEUS_TOKEN",
    "GPUPLAN_PROMETHEUS_BASIC_AUTH",
    "GPUPLAN_DOCS_URL",
    "GPUPLAN_TODAY",
    "GPUPLAN_AZURE_PRICES_URL",
    "GPUPLAN_AZURE_MANAGEMENT_URL",
    "GPUPLAN_AWS_PRICING_URL",
    "GPUPLAN_AWS_SPOT_ADVISOR_URL",
];

fn main() -> ExitCode {
    for k in ENV {
        if std::env::var_os(k).is_some_and(|v| v.is_empty()) {
            std::env::remove_var(k);
        }
    }
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
