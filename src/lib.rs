//! gpuplan: GPU capacity planning from a declarative plan.
//!
//! The pipeline: a plan is loaded ([`plan`]), joined with provider data ([`catalog`]),
//! evaluated by pure planning arithmetic ([`engine`], [`mig`]) and checked ([`rules`]);
//! [`diag`] prints what was found. [`cmd`] holds the subcommands, [`cli`] their arguments.

// Nothing is `pub` that no one outside the crate can reach: such items say `pub(crate)`.
#![warn(unreachable_pub)]

pub mod catalog;
pub mod cli;
pub mod cloud;
pub(crate) mod cmd;
pub mod comment;
pub mod core;
pub mod diag;
pub mod engine;
pub(crate) mod fsio;
// Without the `live` feature nothing calls the clients' support code.
#[cfg_attr(not(feature = "live"), allow(dead_code))]
pub(crate) mod http;
#[cfg_attr(not(feature = "live"), allow(dead_code))]
pub(crate) mod live;
pub mod mig;
pub(crate) mod output;
pub mod plan;
pub mod render;
pub mod report;
pub mod review;
pub mod rules;
pub mod source;

pub use crate::core::exit;

/// Run a parsed command line; returns the process exit code.
pub fn run(cli: cli::Cli) -> u8 {
    remember_secrets();
    let out = output::Out::new(&cli.global);
    if !cli.global.quiet {
        fsio::on_wait(|text| {
            use std::io::Write as _;
            let _ = writeln!(std::io::stderr().lock(), "note: {text}");
        });
    }
    let result = match environment_error() {
        Some(e) => Err(e),
        None => dispatch(cli, &out),
    }
    .and_then(|code| match out.stdout_failure() {
        // Output nobody got is no success.
        Some(e) => Err(cmd::CmdError::Stdout(e)),
        None => Ok(code),
    });
    // The one place an error becomes text and an exit code.
    match result {
        Ok(code) => code,
        Err(e) => {
            out.stderr(&e.report(out.color));
            e.exit_code()
        }
    }
}

fn dispatch(cli: cli::Cli, out: &output::Out) -> cmd::CmdResult {
    match cli.command {
        cli::Command::Check(args) => cmd::check::run(&cli.global, &args, out),
        cli::Command::Recommend(args) => cmd::recommend::run(&cli.global, &args, out),
        cli::Command::Render(args) => cmd::render::run(&cli.global, &args, out),
        cli::Command::Review(args) => cmd::review::run(&cli.global, &args, out),
        cli::Command::Diff(args) => cmd::diff::run(&cli.global, &args, out),
        cli::Command::Explain(args) => cmd::explain::run(&args, out),
        cli::Command::Catalog(args) => cmd::catalog::run(&cli.global, &args, out),
        cli::Command::Schema { output } => cmd::schema::run(output, out),
        cli::Command::Comment(args) => cmd::comment::run(&args, out),
        cli::Command::Init(args) => cmd::init::run(&args, out),
        cli::Command::Completions { shell } => {
            let mut c = <cli::Cli as clap::CommandFactory>::command();
            let mut buf = Vec::new();
            clap_complete::generate(shell, &mut c, "gpuplan", &mut buf);
            out.stdout(&String::from_utf8_lossy(&buf));
            Ok(exit::OK)
        }
    }
}

/// Every credential this run was handed, remembered so no output repeats it (a server may
/// echo one in an error body): the password of any URL on the command line or in the
/// environment, with the Basic value a client would send for it, the bearer token and basic
/// auth flags, and the cloud SDKs' secret variables.
fn remember_secrets() {
    // Arguments and variables are bytes until read: one that is not UTF-8 is read lossily
    // here (a secret in it is still remembered as the client would send it), never a panic.
    let args: Vec<String> = std::env::args_os()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let env: Vec<(String, String)> = std::env::vars_os()
        .map(|(k, v)| {
            (
                k.to_string_lossy().into_owned(),
                v.to_string_lossy().into_owned(),
            )
        })
        .collect();
    for v in args.iter().chain(env.iter().map(|(_, v)| v)) {
        for word in v.split_whitespace() {
            if let Ok(u) = url::Url::parse(word) {
                if let Some(pw) = u.password() {
                    core::format::secret(pw);
                    core::format::secret(&core::format::basic_value(u.username(), pw));
                }
            }
        }
    }
    for (i, a) in args.iter().enumerate() {
        let value = |flag: &str| {
            a.strip_prefix(&format!("{flag}=")).or_else(|| {
                (a == flag)
                    .then(|| args.get(i + 1).map(String::as_str))
                    .flatten()
            })
        };
        if let Some(t) = value("--bearer-token") {
            core::format::secret(t);
        }
        if let Some(b) = value("--basic-auth") {
            let (user, pw) = b.split_once(':').unwrap_or((b, ""));
            core::format::secret(pw);
            core::format::secret(&core::format::basic_value(user, pw));
        }
    }
    for (k, v) in &env {
        // The flag's variable holds USER:PASSWORD: the password and the header it makes are
        // the secrets, as for the flag itself.
        if k == "GPUPLAN_PROMETHEUS_BASIC_AUTH" {
            let (user, pw) = v.split_once(':').unwrap_or((v, ""));
            core::format::secret(pw);
            core::format::secret(&core::format::basic_value(user, pw));
        }
        if matches!(
            k.as_str(),
            "AZURE_CLIENT_SECRET"
                | "AWS_SECRET_ACCESS_KEY"
                | "AWS_SESSION_TOKEN"
                | "GPUPLAN_PROMETHEUS_TOKEN"
                | "GPUPLAN_BEARER_TOKEN"
                | "GITHUB_TOKEN"
                | "GH_TOKEN"
                | "GITLAB_TOKEN"
        ) {
            core::format::secret(v);
        }
    }
}

/// Settings from the environment that cannot be used are errors, like the flags they stand
/// for: `GPUPLAN_TODAY` that is not a date, a lock timeout or series bound that is not a
/// whole number (never silently the default). (Empty variables count as unset: `main`
/// removes them before the command line is parsed.)
fn environment_error() -> Option<cmd::CmdError> {
    let var = |k: &str| std::env::var_os(k).map(|v| v.to_string_lossy().into_owned());
    if let Some(today) = var("GPUPLAN_TODAY").filter(|t| core::Date::parse(t).is_none()) {
        return Some(cmd::CmdError::Usage(format!(
            "GPUPLAN_TODAY=`{}`: expected a date, YYYY-MM-DD",
            today.escape_debug()
        )));
    }
    for (k, what) in [
        ("GPUPLAN_LOCK_TIMEOUT", "whole seconds (0 gives up at once)"),
        (
            "GPUPLAN_REVIEW_MAX_SERIES",
            "a whole number of series, 1 or more",
        ),
    ] {
        let Some(v) = var(k) else { continue };
        let ok = v
            .trim()
            .parse::<u64>()
            .is_ok_and(|n| k != "GPUPLAN_REVIEW_MAX_SERIES" || n > 0);
        if !ok {
            return Some(cmd::CmdError::Usage(format!(
                "{k}=`{}`: expected {what}",
                v.escape_debug()
            )));
        }
    }
    None
}
