//! `gpuplan catalog refresh`: today's provider data into the refresh cache.

use crate::cli::{Global, ProviderArg, RefreshArgs};
use crate::exit;
use crate::live::{azure_prices, cache};
use crate::output::Out;

pub fn run(g: &Global, args: &RefreshArgs, out: &Out) -> u8 {
    let fail = |msg: String| {
        out.stderr(&format!("error: {msg}\n"));
        exit::INPUT
    };
    for what in &args.only {
        match (args.provider, what.as_str()) {
            (ProviderArg::Azure, "prices") => {}
            (_, "prices" | "eviction" | "quota" | "skus") => {
                return fail(format!(
                    "refreshing `{what}` for {} is not built yet: only Azure prices are (the embedded data stays in use)",
                    match args.provider {
                        ProviderArg::Azure => "azure",
                        ProviderArg::Aws => "aws",
                    }
                ))
            }
            (_, other) => {
                return fail(format!(
                    "`--only {other}`: expected prices, eviction, quota or skus"
                ))
            }
        }
    }
    let mut regions = args.regions.clone();
    if let Some(path) = &args.plan {
        match super::load_plan(g, path, out) {
            Ok((p, _)) => regions.extend(p.regions().map(str::to_owned)),
            Err(code) => return code,
        }
    }
    regions.sort();
    regions.dedup();
    if regions.is_empty() {
        return fail("give the regions to refresh: `--region REGION` or `--plan PLAN`".into());
    }
    let base = std::env::var("GPUPLAN_AZURE_PRICES_URL")
        .ok()
        .filter(|u| !u.is_empty())
        .unwrap_or_else(|| azure_prices::DEFAULT_URL.to_owned());
    if args.dry_run {
        for r in &regions {
            out.stdout(&format!("GET {}\n", azure_prices::url(&base, r)));
        }
        return exit::OK;
    }
    let Some(dir) = g.cache.clone().or_else(cache::default_dir) else {
        return fail("no cache directory: give `--cache DIR` (or set GPUPLAN_CACHE)".into());
    };
    let client = azure_prices::Client {
        base: base.clone(),
        timeout: std::time::Duration::from_secs(args.timeout),
        requests: std::cell::Cell::new(0),
    };
    let mut rows = Vec::new();
    for r in &regions {
        out.info(&format!("fetching Azure retail prices for {r}"));
        match client.region(r) {
            Ok(mut x) => {
                if x.is_empty() {
                    return fail(format!(
                        "Azure Retail Prices at {base} has no GPU (N-series) prices for `{r}`: is the region name right? The cache is unchanged"
                    ));
                }
                rows.append(&mut x);
            }
            Err(e) => return fail(format!("{e}; the cache is unchanged")),
        }
    }
    let today = crate::plan::Date::today().to_string();
    // Rows of regions not refreshed now are kept from the cache, else from the embedded file.
    let previous = if cache::present(&dir) {
        std::fs::read_to_string(dir.join("azure/prices-retail.csv")).ok()
    } else {
        None
    }
    .unwrap_or_else(|| {
        crate::catalog::embedded_files()
            .into_iter()
            .find(|(p, _)| *p == "azure/prices-retail.csv")
            .map(|(_, t)| t.to_owned())
            .unwrap_or_default()
    });
    let source = format!("Azure Retail Prices API ({base})");
    let text = cache::retail_csv(&previous, &rows, &regions, &today, &source);
    let entry = cache::Entry {
        path: "azure/prices-retail.csv",
        kind: "prices",
        provider: "azure",
        source: format!("{source}, fetched {today}"),
        licence: "public price list",
        text,
    };
    if let Err(e) = cache::write(&dir, &[entry], &today) {
        return fail(format!("cannot write the cache `{}`: {e}", dir.display()));
    }
    out.info(&format!(
        "wrote {} price row(s) for {} to `{}` ({} request(s))",
        rows.len(),
        regions.join(", "),
        dir.display(),
        client.requests.get()
    ));
    exit::OK
}
