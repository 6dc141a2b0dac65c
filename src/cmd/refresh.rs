//! `gpuplan catalog refresh`: today's provider data into the refresh cache. The command turns
//! its flags into a [`refresh::Request`]; `live::refresh` fetches everything before anything
//! is written, so one failure and the cache keeps its previous content.

use std::time::Duration;

use crate::cli::{Global, RefreshArgs};
use crate::core::exit;
use crate::core::Provider;
use crate::live::cache;
use crate::live::refresh::{self, Endpoints, Request};
use crate::live::scope::Part;
use crate::output::Out;

use super::{CmdError, CmdResult};

/// `--live` on `check` and `recommend`: refresh what the plan uses before reading it. Azure
/// quota and SKU availability need a subscription; without one they are skipped, and said so.
pub(crate) fn live(g: &Global, plan: &std::path::Path, out: &Out) -> CmdResult<()> {
    if plan.as_os_str() == "-" {
        return Err(CmdError::Usage(
            "`--live` needs a plan file, not standard input".into(),
        ));
    }
    let (p, _) = super::load_plan(g, plan, out)?;
    let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
    let provider = p.provider();
    let subscription = env("AZURE_SUBSCRIPTION_ID");
    let known = subscription.is_some() || p.meta().subscription.is_some();
    // A cloud whose quota and SKU reads need the plan's account refreshes only its public
    // data without one.
    let only: Vec<String> = if crate::cloud::profile(provider).subscription && !known {
        out.info("--live: no subscription (AZURE_SUBSCRIPTION_ID or `[plan] subscription`), so quota and SKU availability stay as cached; refreshing prices and eviction bands");
        [Part::Prices, Part::Eviction]
            .map(|p| p.as_str().to_owned())
            .to_vec()
    } else {
        Vec::new()
    };
    let args = RefreshArgs {
        provider,
        regions: Vec::new(),
        plan: Some(plan.to_owned()),
        only,
        dry_run: false,
        timeout: 30,
        subscription,
        management_url: env("GPUPLAN_AZURE_MANAGEMENT_URL"),
        prices_url: env("GPUPLAN_AZURE_PRICES_URL"),
        pricing_url: env("GPUPLAN_AWS_PRICING_URL"),
        spot_advisor_url: env("GPUPLAN_AWS_SPOT_ADVISOR_URL"),
    };
    run(g, &args, out).map(|_| ())
}

pub(crate) fn run(g: &Global, args: &RefreshArgs, out: &Out) -> CmdResult {
    let request = request(g, args)?;
    let (provider, dir) = (request.provider, request.dir.clone());
    let verify = |stage: &std::path::Path| verify(stage, provider);
    // A cache that does not exist yet is fetched first and made whole, in a staging
    // directory renamed into place: a refresh killed while it fetches (or writes) leaves no
    // directory behind (issue 75), where locking first made the cache's directories at once.
    if !args.dry_run && std::fs::symlink_metadata(&dir).is_err() {
        let (scope, _, tasks) = refresh::plan(request.clone())?;
        let entries = refresh::execute(tasks, out.draws_progress())?;
        let mut refused = None;
        let first = crate::fsio::first_set(&dir, |stage, lock| {
            cache::write(stage, lock, &entries, &scope.today, &verify).map_err(|e| {
                let e = e.named_for(stage, &dir);
                let source = std::io::Error::other(e.to_string());
                refused = Some(e);
                crate::fsio::FileError {
                    path: dir.clone(),
                    source,
                }
            })
        });
        if let Some(e) = refused {
            return Err(crate::live::LiveError::from(e).into());
        }
        if let Some(notes) = first? {
            return Ok(report(&scope, &entries, &notes, &dir, out));
        }
        // Another run made the cache meanwhile: refresh it as any existing one, under its
        // lock, so the rows it wrote for other regions are kept.
    }
    // One refresh at a time in a cache, from reading the previous files (each refreshed file
    // keeps the rows of the regions not refreshed now) to writing the new ones: a second
    // refresh waits, and then merges with this one's files instead of losing them.
    let hold = if args.dry_run {
        crate::fsio::Hold::Read
    } else {
        crate::fsio::Hold::Write
    };
    let lock = crate::fsio::lock(&dir, hold, !args.dry_run)?;
    let (scope, requests, tasks) = refresh::plan(request)?;
    if args.dry_run {
        for r in requests {
            out.stdout(&format!("{}\n", crate::core::redact(&r)));
        }
        return Ok(exit::OK);
    }
    let entries = refresh::execute(tasks, out.draws_progress())?;
    let Some(lock) = lock else {
        return Err(CmdError::Usage(format!(
            "`{}`: no such directory",
            dir.display()
        )));
    };
    let notes = cache::write(&dir, &lock, &entries, &scope.today, &verify)
        .map_err(crate::live::LiveError::from)?;
    Ok(report(&scope, &entries, &notes, &dir, out))
}

/// What a refresh that landed says: the warnings of its fetch and write, each file written
/// with its rows, and the parts and regions refreshed.
fn report(
    scope: &crate::live::scope::Scope,
    entries: &[cache::Entry],
    notes: &[String],
    dir: &std::path::Path,
    out: &Out,
) -> u8 {
    for n in entries.iter().flat_map(|e| &e.notes).chain(notes) {
        out.stderr(&format!("warning: {}\n", crate::core::redact(n)));
    }
    for e in entries {
        out.info(&format!(
            "wrote {} ({} row(s) now)",
            e.path,
            e.text.lines().count().saturating_sub(1)
        ));
    }
    out.info(&format!(
        "refreshed {} for {} into `{}`",
        scope
            .parts
            .iter()
            .map(|p| p.as_str())
            .collect::<Vec<_>>()
            .join(", "),
        scope.regions.join(", "),
        dir.display()
    ));
    exit::OK
}

/// The refresh the command line asks for: its parts, the regions (given, or the plan's),
/// the cache and the subscription.
fn request(g: &Global, args: &RefreshArgs) -> CmdResult<Request> {
    let fail = |msg: String| Err(CmdError::Usage(msg));
    let mut parts: Vec<Part> = Vec::new();
    for what in &args.only {
        match Part::parse(what.trim()) {
            Some(p) => parts.push(p),
            None => {
                return fail(format!(
                    "`--only {what}`: expected prices, eviction, quota or skus"
                ))
            }
        }
    }
    let mut regions = args.regions.clone();
    let mut plan_subscription = None;
    let provider = args.provider;
    if let Some(path) = &args.plan {
        // The plan is read against the embedded catalog alone: a cache that no longer loads
        // must not stop the refresh that replaces it.
        let p = super::load_plan_embedded(path, provider)?;
        if p.provider() != provider {
            return fail(format!(
                "`{}` is a {} plan; refresh it with `--provider {}`",
                path.display(),
                p.provider(),
                p.provider()
            ));
        }
        regions.extend(p.regions().map(str::to_owned));
        plan_subscription = p.meta().subscription.as_ref().map(|s| s.get().clone());
    }
    if regions.is_empty() {
        return fail("give the regions to refresh: `--region REGION` or `--plan PLAN`".into());
    }
    let Some(dir) = g.cache.clone().or_else(cache::default_dir) else {
        return fail("no cache directory: give `--cache DIR` (or set GPUPLAN_CACHE)".into());
    };
    Ok(Request {
        provider,
        regions,
        parts,
        timeout: Duration::from_secs(args.timeout),
        today: crate::core::Date::today(),
        dir,
        subscription: args
            .subscription
            .clone()
            .filter(|s| !s.is_empty())
            .or(plan_subscription),
        endpoints: Endpoints {
            azure_management: args.management_url.clone(),
            azure_prices: args.prices_url.clone(),
            aws_pricing: args.pricing_url.clone(),
            aws_spot_advisor: args.spot_advisor_url.clone(),
        },
        dry_run: args.dry_run,
    })
}

/// The refreshed files must load exactly as every later command will load them: a price that
/// is NaN, infinite or negative is refused here, not written.
fn verify(stage: &std::path::Path, provider: Provider) -> Result<(), String> {
    crate::catalog::Catalog::layered(stage, &[provider])
        .map(|_| ())
        .map_err(|e| match e {
            crate::catalog::CatalogError::Invalid(ds) => ds
                .iter()
                .map(|d| {
                    let (line, col) = d.line_col();
                    let name = d.file.name.replace(&stage.display().to_string(), "");
                    format!(
                        "{}:{line}:{col}: {}",
                        name.trim_start_matches('/'),
                        d.message
                    )
                })
                .collect::<Vec<_>>()
                .join("; "),
            other => other.to_string(),
        })
}
