//! A refresh as a library call: which provider, regions and parts, where the answers go.
//! [`plan`] lists the requests and builds the tasks that fetch them; [`execute`] runs them
//! all before anything is written, so one failure leaves the cache as it was.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::core::{Date, Provider};
pub(crate) use crate::live::scope::Endpoints;
use crate::live::scope::{Part, Scope, Task};
use crate::live::{aws, azure, cache, LiveError};

/// A refresh as the command line (or any caller) asks for it.
#[derive(Debug, Clone)]
pub(crate) struct Request {
    pub provider: Provider,
    pub regions: Vec<String>,
    /// What to refresh; empty means all.
    pub parts: Vec<Part>,
    pub timeout: Duration,
    pub today: Date,
    /// The cache directory, for the rows of regions not refreshed now.
    pub dir: PathBuf,
    pub subscription: Option<String>,
    pub endpoints: Endpoints,
    pub dry_run: bool,
}

/// Requests in flight at once: below Resource Graph's 15 per 5 s per tenant with room for
/// the retries.
pub(crate) const CONCURRENCY: usize = 8;

/// What a request fetches: the scope it covers, the requests (as `--dry-run` lists them) and
/// the tasks (none for a dry run).
pub(crate) fn plan(req: Request) -> Result<(Scope, Vec<String>, Vec<Task>), LiveError> {
    let mut parts = if req.parts.is_empty() {
        Part::ALL.to_vec()
    } else {
        req.parts.clone()
    };
    parts.sort();
    parts.dedup();
    let mut regions = req.regions.clone();
    regions.sort();
    regions.dedup();
    if regions.is_empty() {
        return Err(LiveError::Request(
            "give the regions to refresh: `--region REGION` or `--plan PLAN`".into(),
        ));
    }
    let catalog = crate::catalog::Catalog::embedded(&[req.provider])?;
    let skus: Vec<String> = catalog
        .provider(req.provider)
        .map(|pc| {
            pc.skus
                .values()
                .filter(|s| !s.retired && !s.arm64)
                .map(|s| s.name.clone())
                .collect()
        })
        .unwrap_or_default();
    let scope = Scope {
        regions,
        skus,
        parts,
        timeout: req.timeout,
        today: req.today.to_string(),
        dir: req.dir,
        catalog,
        subscription: req.subscription,
        endpoints: req.endpoints,
        dry_run: req.dry_run,
    };
    // What the provider's planning refuses is the request's, not a provider's answer.
    let (requests, tasks) = match req.provider {
        Provider::Azure => azure::plan(&scope),
        Provider::Aws => aws::plan(&scope),
    }
    .map_err(LiveError::Request)?;
    Ok((scope, requests, tasks))
}

/// Run every task, `CONCURRENCY` at a time, with a progress bar on stderr (hidden when stderr
/// is not a terminal or with `--quiet`). The first error wins; nothing is kept from the others.
pub(crate) fn execute(tasks: Vec<Task>, progress: bool) -> Result<Vec<cache::Entry>, LiveError> {
    use futures::StreamExt;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(LiveError::Runtime)?;
    let bar = if !progress {
        indicatif::ProgressBar::hidden()
    } else {
        indicatif::ProgressBar::with_draw_target(
            Some(tasks.len() as u64),
            indicatif::ProgressDrawTarget::stderr(),
        )
    };
    bar.set_style(
        indicatif::ProgressStyle::with_template("{bar:30} {pos}/{len} {msg}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    let bar = Arc::new(bar);
    let results: Vec<Result<Vec<cache::Entry>, String>> = rt.block_on(async {
        futures::stream::iter(tasks.into_iter().map(|t| {
            let bar = Arc::clone(&bar);
            async move {
                bar.set_message(t.label.clone());
                let r = t.run.await;
                bar.inc(1);
                r
            }
        }))
        .buffer_unordered(CONCURRENCY)
        .collect()
        .await
    });
    bar.finish_and_clear();
    let mut entries = Vec::new();
    for r in results {
        entries.extend(r.map_err(LiveError::Fetch)?);
    }
    // Tasks finish in any order; the cache is written in one.
    entries.sort_by(|a, b| a.path.cmp(b.path));
    Ok(entries)
}
