//! `gpuplan review PLAN`: allocated against used GPU-seconds from Prometheus or files.

use crate::cli::{Global, ReviewArgs, ReviewFormat};
use crate::core::exit;
use crate::engine::recommend;
use crate::output::Out;
use crate::review::{self, files, prometheus, telemetry};

use super::{CmdError, CmdResult};

fn usage(msg: impl Into<String>) -> CmdError {
    CmdError::Usage(msg.into())
}

pub(crate) fn run(g: &Global, args: &ReviewArgs, out: &Out) -> CmdResult {
    let started = std::time::Instant::now();
    let result = review(g, args, out);
    super::report_resources(out, started);
    result
}

/// The review, stage by stage: flags, plan, telemetry, analysis, next quarter, output.
fn review(g: &Global, args: &ReviewArgs, out: &Out) -> CmdResult {
    let f = Flags::parse(args)?;
    let (written, catalog) = super::load_plan(g, &args.plan, out)?;
    // The pools the cluster runs: the plan's own, or those `render` makes of a plan that
    // declares none. The next plan is still written from the plan as written.
    let rendered = render_pools(&written, &catalog);
    let p = rendered.as_ref().unwrap_or(&written);
    check_sources(args)?;
    // Read before any query: a purchase list that does not parse ends the review early.
    let bought = match &args.purchases {
        Some(path) => review::bought::read(path)?,
        None => Vec::new(),
    };
    // One cluster is narrowed at the source; a fleet is read whole and split by cluster.
    let one = (args.cluster.len() == 1).then(|| args.cluster[0].as_str());
    let (answers, grid, source, notes) = read(args, &f, one, out)?;
    let (t, fleet) = if args.all_clusters || args.cluster.len() > 1 {
        let wanted = (!args.all_clusters).then_some(args.cluster.as_slice());
        let (t, left_out) = assemble_fleet(&answers, grid, p, &catalog, wanted, &source, &notes)?;
        (t, Some(left_out))
    } else {
        (
            review::assemble::assemble(&answers, grid, p, &catalog, one, source, notes)?,
            None,
        )
    };
    // The queries' answers are the telemetry now: not held through the analysis.
    drop(answers);
    for n in &t.notes {
        out.stderr(&format!(
            "warning: {}\n",
            crate::core::printable(&crate::core::redact(&n.to_string()))
        ));
    }
    if t.pods.is_empty() {
        return Err(CmdError::Review(review::ReviewError::Data(format!(
            "no GPU samples between {} and {}: nothing to review",
            telemetry::format_time(t.from),
            telemetry::format_time(t.to)
        ))));
    }
    let mut r = analyse(p, &catalog, &t, &f);
    r.purchase_fill = review::bought::fill(&t, &catalog, &bought);
    // Next quarter's plan is made, and held to check, before anything is written.
    let read_clusters = match &fleet {
        // A fleet missing some of the data's clusters is part of the demand too.
        Some(left_out) if !left_out.is_empty() => Some(args.cluster.join(", ")),
        Some(_) => None,
        None => one.map(str::to_owned),
    };
    let next = match &args.write_plan {
        None => None,
        Some(dest) => Some((
            dest,
            next_quarter(&written, &catalog, &r, read_clusters.as_deref())?,
        )),
    };
    // The report says what the plan written in the same run says.
    if let Some((_, n)) = &next {
        review::next_plan::settle(&mut r.next_quarter, &written, &n.written);
    }
    write(args, out, p, &r, next)
}

/// A plan that declares no pools, with the pools `render` makes of it declared (the
/// recommendation, written as `recommend --write-plan` writes it: the same names, labels
/// and sizes): the review names, prices and judges the nodes of those pools as it does a
/// declared pool's. `None` for a plan that declares pools, or one the recommender cannot
/// meet (render makes nothing of it).
fn render_pools(
    p: &crate::plan::Plan,
    catalog: &crate::catalog::Catalog,
) -> Option<crate::plan::Plan> {
    if !p.pools().is_empty() {
        return None;
    }
    let mut rec = recommend::recommend(p, catalog);
    crate::rules::settle_recommendation(
        p,
        crate::core::Date::today(),
        &crate::rules::Levels::default(),
        &mut rec,
    );
    if rec.unsatisfiable() || rec.pools.is_empty() {
        return None;
    }
    let text = crate::render::write_plan::plan_with_pools(p, &rec, |_| String::new()).ok()?;
    crate::plan::Plan::load(crate::source::SourceFile::new(&p.file.name, text), catalog).ok()
}

/// The flags that are not paths, parsed: each refusal names the flag and what it expects.
struct Flags {
    step: Option<i64>,
    stalled_after: i64,
    headroom: Option<f64>,
    from: Option<i64>,
    to: Option<i64>,
    window: Option<i64>,
}

impl Flags {
    fn parse(args: &ReviewArgs) -> CmdResult<Flags> {
        let duration = |v: Option<&str>, what: &str, example: &str| -> CmdResult<Option<i64>> {
            match v.map(telemetry::parse_duration) {
                Some(None) => Err(usage(format!(
                    "`--{what}`: expected a duration such as {example} (at most 3660d)"
                ))),
                Some(d) => Ok(d),
                None => Ok(None),
            }
        };
        let step = duration(args.step.as_deref(), "step", "60s or 5m")?;
        let stalled_after =
            duration(Some(&args.stalled_after), "stalled-after", "2h")?.unwrap_or_default();
        let window = duration(args.window.as_deref(), "window", "90d")?;
        let headroom = match args.headroom.as_deref() {
            None => None,
            Some(h) => Some(
                h.trim()
                    .trim_end_matches('%')
                    .parse::<f64>()
                    .ok()
                    .filter(|v| (0.0..=100.0).contains(v))
                    .map(|v| v / 100.0)
                    .ok_or_else(|| {
                        usage(format!(
                            "`--headroom {h}`: expected a percent from 0 to 100, such as 15%"
                        ))
                    })?,
            ),
        };
        let time = |s: &Option<String>, what: &str| -> CmdResult<Option<i64>> {
            match s {
                None => Ok(None),
                Some(v) => telemetry::parse_time(v).map(Some).ok_or_else(|| {
                    usage(format!(
                        "`--{what} {v}`: expected RFC 3339 or Unix seconds, from 1970 to 9999"
                    ))
                }),
            }
        };
        Ok(Flags {
            step,
            stalled_after,
            headroom,
            from: time(&args.from, "from")?,
            to: time(&args.to, "to")?,
            window,
        })
    }
}

/// One telemetry source, and clusters only where the source has them.
fn check_sources(args: &ReviewArgs) -> CmdResult<()> {
    let sources = [
        args.prometheus.is_some(),
        args.csv.is_some(),
        args.metrics.is_some(),
    ];
    if sources.iter().filter(|s| **s).count() != 1 {
        return Err(usage(
            "give one telemetry source: `--prometheus URL`, `--csv FILE` or `--metrics FILE`",
        ));
    }
    if (!args.cluster.is_empty() || args.all_clusters) && args.csv.is_some() {
        return Err(usage(
            "`--cluster`: the CSV format has no cluster column, so it cannot be narrowed to one; give the cluster's own CSV without `--cluster`, or `--metrics`/`--prometheus` data with a `cluster` label",
        ));
    }
    Ok(())
}

/// The answers of the one telemetry source given, on their grid, with the source's name and
/// what reading it noticed.
fn read(
    args: &ReviewArgs,
    f: &Flags,
    one: Option<&str>,
    out: &Out,
) -> CmdResult<(
    review::query::Answers,
    review::query::Grid,
    String,
    Vec<review::noticed::Noticed>,
)> {
    if let Some(url) = &args.prometheus {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64);
        let to = f.to.unwrap_or(now);
        let from = f.from.unwrap_or(to - f.window.unwrap_or(90 * 86_400));
        let client = prometheus::Client {
            base: url.clone(),
            bearer: args.bearer_token.clone(),
            basic: args
                .basic_auth
                .as_deref()
                .and_then(|s| s.split_once(':'))
                .map(|(u, p)| (u.to_owned(), p.to_owned())),
            timeout: std::time::Duration::from_secs(args.timeout),
            fits: std::sync::atomic::AtomicU32::new(u32::MAX),
            notice: Some(out.notices()),
        };
        let step = f.step.unwrap_or_else(|| prometheus::step_for(to - from));
        let (grid, tail) = review::query::Grid::within(from, to, step)?;
        let bar = out.progress("Prometheus queries", Some(0));
        let answers = client.fetch(grid, one, &|done, total| bar.set(done, total))?;
        return Ok((
            answers,
            grid,
            format!("Prometheus {}", crate::core::redact(url)),
            review::noticed::Noticed::tail_not_read(&grid, tail)
                .into_iter()
                .collect(),
        ));
    }
    let w = files::Window {
        from: f.from,
        to: f.to,
        window: f.window,
        step: f.step,
    };
    let r = match (&args.csv, &args.metrics) {
        (Some(p), _) => files::read_csv(p, w)?,
        (_, Some(p)) if p.as_os_str() == "-" => {
            return Err(usage(
                "`--metrics -`: the review reads an exposition file twice (a first pass finds the window and the series, a second collects them, so a file of gigabytes never sits in memory), and standard input can be read only once: save it to a file first (`curl ... > metrics.om`)",
            ))
        }
        (_, Some(p)) => files::read_exposition(p, w, one)?,
        _ => return Err(usage("no telemetry source")),
    };
    Ok((r.answers, r.grid, r.source, r.notes))
}

/// The review's figures and advice, with the method's settings from the catalog's
/// assumptions and the flags.
fn analyse(
    p: &crate::plan::Plan,
    catalog: &crate::catalog::Catalog,
    t: &review::telemetry::Telemetry,
    f: &Flags,
) -> review::Review {
    let rec = recommend::recommend(p, catalog);
    let a = &catalog.assumptions;
    review::analyse(
        p,
        &rec,
        catalog,
        t,
        &review::Settings {
            stalled_after: f.stalled_after,
            quiet_below: 0.05,
            low_utilization: a.low_utilization,
            forecast: review::Method {
                headroom: f.headroom.unwrap_or(a.review_headroom),
                min_days: a.review_min_days,
                min_trend_days: a.review_min_trend_days,
                consolidation_target: a.review_consolidation_target,
                low_utilization: a.low_utilization,
                user_facing_min_nodes: a.user_facing_min_nodes,
            },
        },
    )
}

/// Next quarter's plan, or why there is none; `clusters` names the clusters read when they
/// are not all of the demand.
fn next_quarter(
    p: &crate::plan::Plan,
    catalog: &crate::catalog::Catalog,
    r: &review::Review,
    clusters: Option<&str>,
) -> CmdResult<review::next_plan::NextPlan> {
    if let Some(why) = &r.next_quarter.withheld {
        return Err(CmdError::Review(review::ReviewError::Data(format!(
            "`--write-plan`: nothing to propose: {why}"
        ))));
    }
    Ok(review::next_plan::next_plan(
        p,
        catalog,
        &r.next_quarter,
        (&r.window.from, &r.window.to),
        crate::plan::Date::today(),
        clusters,
    )?)
}

/// The review in its format to `--out` or stdout, then next quarter's plan to its file.
fn write(
    args: &ReviewArgs,
    out: &Out,
    p: &crate::plan::Plan,
    r: &review::Review,
    next: Option<(&std::path::PathBuf, review::next_plan::NextPlan)>,
) -> CmdResult {
    let text = match args.format {
        ReviewFormat::Json => crate::report::review::json(r),
        ReviewFormat::Markdown => crate::report::review::markdown(r),
        ReviewFormat::Html => crate::report::review::html(r),
    };
    let inputs: Vec<&std::path::Path> =
        [Some(&args.plan), args.csv.as_ref(), args.metrics.as_ref()]
            .into_iter()
            .flatten()
            .map(|p| p.as_path())
            .collect();
    match &args.out {
        Some(path) => {
            if super::write_output(out, path, &text, &inputs)? {
                out.info(&format!(
                    "wrote the review to `{}`",
                    crate::core::shown(path)
                ));
            }
        }
        None => out.stdout(&text),
    }
    if let Some((dest, n)) = next {
        for note in &n.notes {
            out.stderr(&format!(
                "warning: {}\n",
                crate::core::printable(&note.to_string())
            ));
        }
        // NEXT may be the plan itself: rewriting it is what the flag is for.
        let telemetry: Vec<&std::path::Path> = [args.csv.as_ref(), args.metrics.as_ref()]
            .into_iter()
            .flatten()
            .map(|p| p.as_path())
            .collect();
        let written = crate::core::format::as_written(&p.file.text, &n.text);
        if super::write_output(out, dest, &written, &telemetry)? {
            out.stderr(&format!(
                "wrote next quarter's plan ({}, {} workload(s) changed) to `{}`\n",
                r.next_quarter.quarter,
                n.changed.len(),
                crate::core::shown(dest)
            ));
        }
    }
    Ok(exit::OK)
}

/// Several clusters as one fleet: each assembled from its own answers, then joined; with the
/// clusters the data holds that were left out (none for every cluster, `wanted` = `None`).
fn assemble_fleet(
    answers: &review::query::Answers,
    grid: review::query::Grid,
    plan: &crate::plan::Plan,
    catalog: &crate::catalog::Catalog,
    wanted: Option<&[String]>,
    source: &str,
    notes: &[review::noticed::Noticed],
) -> Result<(review::telemetry::Telemetry, Vec<String>), CmdError> {
    let held = answers.clusters();
    let chosen: Vec<String> = wanted.map_or_else(|| held.iter().cloned().collect(), <[_]>::to_vec);
    if let Some(c) = chosen.iter().find(|c| !held.contains(*c)) {
        return Err(CmdError::Review(review::ReviewError::Data(format!(
            "`--cluster {c}`: the data holds no such cluster (it holds {})",
            held.iter().cloned().collect::<Vec<_>>().join(", ")
        ))));
    }
    let parts = chosen
        .iter()
        .map(|c| {
            review::assemble::assemble(
                &answers.of_cluster(c),
                grid,
                plan,
                catalog,
                Some(c),
                source.to_owned(),
                notes.to_vec(),
            )
            .map(|t| (c.clone(), t))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let left_out = held.into_iter().filter(|c| !chosen.contains(c)).collect();
    Ok((review::telemetry::Telemetry::fleet(parts), left_out))
}
