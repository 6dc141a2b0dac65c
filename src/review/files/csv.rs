//! The CSV format: one row per running pod and sample, read as the samples kube-state-metrics
//! and dcgm-exporter would have given.

use std::collections::{BTreeMap, HashMap};

use super::source::{bounded, err, err_at, file_err, grid_for, read_err, Read, Window};
use crate::review::query::{Collector, MAX_GPUS};
use crate::review::telemetry::parse_time;
use crate::review::ReviewError;

/// Read the CSV format as the samples kube-state-metrics and dcgm-exporter would have given,
/// streamed twice (the times first, for the grid; then the samples): memory grows with the
/// pods and windows, not with the file.
pub(crate) fn read_csv(path: &std::path::Path, w: Window) -> Result<Read, ReviewError> {
    let file = path.display().to_string();
    let max_series = crate::review::telemetry::max_series();
    let (mut min, mut max) = (i64::MAX, i64::MIN);
    // The sample times: the file lists the pods running at each, so a time between the first
    // and the last with no row is a time nothing ran, not one without data.
    let mut times = std::collections::BTreeSet::new();
    // Each pod's spacing between its own samples: what one of its samples stands for.
    let mut last: HashMap<(String, String), i64> = HashMap::new();
    let mut pod_gaps: BTreeMap<i64, usize> = BTreeMap::new();
    csv_rows(path, &file, |r| {
        min = min.min(r.time);
        max = max.max(r.time);
        times.insert(r.time);
        if let Some(prev) = last.insert((r.ns, r.pod), r.time) {
            *pod_gaps.entry((r.time - prev).abs()).or_default() += 1;
        }
        if last.len() > max_series {
            return Err(file_err(
                &file,
                crate::review::telemetry::too_many_series("the file"),
            ));
        }
        Ok(())
    })?;
    drop(last);
    if min > max {
        return Err(file_err(&file, "no rows".to_owned()));
    }
    let (grid, tail) = grid_for(min * 1000, max * 1000, w)?;
    let mut c = Collector::new(grid, None);
    let mut ids: HashMap<(String, String, u8), usize> = HashMap::new();
    // Each pod's `app` per window, once (bounded by pods and windows, not rows).
    let mut apps: BTreeMap<(u32, String, String), String> = BTreeMap::new();
    csv_rows(path, &file, |r| {
        if let (Some(app), Some(k)) = (&r.app, grid.window(r.time * 1000)) {
            apps.entry((k, r.ns.clone(), r.pod.clone()))
                .or_insert_with(|| app.clone());
        }
        let ms = r.time * 1000;
        let mut feed = |kind: u8, name: &str, v: f64, c: &mut Collector| {
            let key = (r.ns.clone(), r.pod.clone(), kind);
            let id = match ids.get(&key) {
                Some(i) => *i,
                None => {
                    let (ns, pod) = (r.ns.clone(), r.pod.clone());
                    let mut l = BTreeMap::new();
                    l.insert("namespace".to_owned(), ns.clone());
                    l.insert("pod".to_owned(), pod.clone());
                    match kind {
                        0 => {
                            l.insert("container".into(), "csv".into());
                            l.insert("node".into(), format!("csv/{ns}/{pod}"));
                            l.insert("resource".into(), "nvidia_com_gpu".into());
                        }
                        1 => {
                            l.insert("phase".into(), "Running".into());
                        }
                        2 => {
                            l.insert("UUID".into(), format!("csv/{ns}/{pod}"));
                        }
                        _ => {}
                    }
                    let k = format!("{name}{l:?}");
                    let Ok(Some(i)) = c.series(&k, name, || Some(l), true) else {
                        return;
                    };
                    ids.insert(key, i);
                    i
                }
            };
            c.sample(id, ms, v);
        };
        if r.alloc > 0.0 {
            feed(0, "kube_pod_container_resource_requests", r.alloc, &mut c);
            feed(1, "kube_pod_status_phase", 1.0, &mut c);
        }
        feed(2, "DCGM_FI_PROF_GR_ENGINE_ACTIVE", r.used, &mut c);
        if let Some(t) = r.tokens {
            feed(3, "vllm:generation_tokens_total", t, &mut c);
        }
        if ids.len() > max_series {
            return Err(file_err(
                &file,
                crate::review::telemetry::too_many_series("the file"),
            ));
        }
        Ok(())
    })?;
    let mut answers = c.finish();
    answers.gpus_as_given = true;
    // A window the user asked for is the file's too: its sample times continue to the
    // window's edges, where a missing row is again a time nothing ran (weekday notebooks
    // read over two weeks from Monday 08:00 to Friday 20:00 ran 43% of the time, not 36%).
    let asked = w.from.is_some() || w.to.is_some() || w.window.is_some();
    let every = most_common(&gaps_of(&times));
    answers.idle_samples = idle_samples(&times, every, grid, asked);
    answers.sample_every = most_common(&pod_gaps).map(|e| e as f64);
    for ((k, ns, pod), app) in apps {
        answers.add(
            crate::review::query::Q::PodLabels,
            &[String::new(), ns, pod, app],
            k,
            1.0,
        );
    }
    Ok(Read {
        answers,
        grid,
        source: format!("CSV {file}"),
        notes: tail.into_iter().collect(),
    })
}

/// The spacings of the file's sample times, and how often each occurs.
fn gaps_of(times: &std::collections::BTreeSet<i64>) -> BTreeMap<i64, usize> {
    let mut gaps: BTreeMap<i64, usize> = BTreeMap::new();
    for (a, b) in times.iter().zip(times.iter().skip(1)) {
        *gaps.entry(b - a).or_default() += 1;
    }
    gaps
}

/// The most common positive spacing (the shorter of two as common), seconds: the file's
/// export interval.
fn most_common(gaps: &BTreeMap<i64, usize>) -> Option<i64> {
    gaps.iter()
        .filter(|(g, _)| **g > 0)
        .max_by_key(|(g, n)| (**n, std::cmp::Reverse(**g)))
        .map(|(g, _)| *g)
}

/// The windows of the sample times the file's rows leave empty: the most common spacing of
/// its sample times (its export interval) continued from the first to the last, and with
/// `to_edges` on to the grid's edges. A gap no longer than one interval has no missing
/// sample; each missing one is a time nothing ran.
fn idle_samples(
    times: &std::collections::BTreeSet<i64>,
    every: Option<i64>,
    grid: crate::review::query::Grid,
    to_edges: bool,
) -> std::collections::BTreeSet<u32> {
    let mut out = std::collections::BTreeSet::new();
    let Some(every) = every else {
        return out;
    };
    let mut missing = |t: i64| {
        if let Some(k) = grid.window(t * 1000) {
            out.insert(k);
        }
    };
    for (a, b) in times.iter().zip(times.iter().skip(1)) {
        let mut t = a + every;
        // Half an interval of slack: a late export is not a missing sample.
        while t + every / 2 < *b {
            missing(t);
            t += every;
        }
    }
    if let (true, Some(first), Some(last)) = (to_edges, times.first(), times.last()) {
        // At most one sample time a window is needed to mark it: a file exported every
        // second over a year-long window is walked a window at a time.
        let by = every.max(grid.step);
        let mut t = first - every;
        while t >= grid.from {
            missing(t);
            t -= by;
        }
        let mut t = last + every;
        while t < grid.to() {
            missing(t);
            t += by;
        }
    }
    out
}

struct Row {
    time: i64,
    ns: String,
    pod: String,
    alloc: f64,
    used: f64,
    tokens: Option<f64>,
    app: Option<String>,
}

/// Each row of a CSV file, in order, read as it streams in.
fn csv_rows(
    path: &std::path::Path,
    file: &str,
    mut each: impl FnMut(Row) -> Result<(), ReviewError>,
) -> Result<(), ReviewError> {
    let fh = crate::fsio::open(path, crate::fsio::Input::Regular)
        .map_err(read_err(file))?
        .file;
    let mut rdr = csv::ReaderBuilder::new()
        .flexible(true)
        .from_reader(std::io::BufReader::with_capacity(1 << 20, fh));
    let header = rdr
        .headers()
        .map_err(|e| err(file, 1, format!("not CSV: {e}")))?
        .clone();
    let col = |name: &str| header.iter().position(|h| h.trim() == name);
    let need = |name: &str| {
        col(name).ok_or_else(|| {
            err(
                file,
                1,
                format!("no `{name}` column (expected timestamp,namespace,pod,allocated_gpus,used_gpus)"),
            )
        })
    };
    let (c_t, c_ns, c_pod, c_alloc, c_used) = (
        need("timestamp")?,
        need("namespace")?,
        need("pod")?,
        need("allocated_gpus")?,
        need("used_gpus")?,
    );
    let (c_tok, c_app) = (col("tokens_total"), col("app"));
    let mut rec = csv::StringRecord::new();
    loop {
        match rdr.read_record(&mut rec) {
            Ok(true) => {}
            Ok(false) => return Ok(()),
            Err(e) => {
                let line = e.position().map_or(0, |p| p.line() as usize);
                return Err(err(file, line, format!("not CSV: {e}")));
            }
        }
        let rec = &rec;
        let line = rec.position().map_or(0, |p| p.line() as usize);
        // The 1-based column of field `c` (exact for unquoted fields: the fields before it
        // and their commas).
        let col = |c: usize| rec.range(c).map_or(1, |r| r.start + c + 1);
        let field = |c: usize, what: &str| {
            rec.get(c)
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .ok_or_else(|| err_at(file, line, col(c), format!("`{what}` is empty")))
        };
        let num = |c: usize, what: &str, max: f64| -> Result<f64, ReviewError> {
            let s = field(c, what)?;
            bounded(s, max).ok_or_else(|| {
                err_at(
                    file,
                    line,
                    col(c),
                    format!("`{what}` = `{s}`: expected a number from 0 to {max:e}"),
                )
            })
        };
        let ts = field(c_t, "timestamp")?;
        let time = parse_time(ts).ok_or_else(|| {
            err_at(
                file,
                line,
                col(c_t),
                format!("timestamp `{ts}`: expected RFC 3339 or Unix seconds, from 1970 to 9999"),
            )
        })?;
        let (ns, pod) = (field(c_ns, "namespace")?, field(c_pod, "pod")?);
        let alloc = num(c_alloc, "allocated_gpus", MAX_GPUS)?;
        let used = num(c_used, "used_gpus", MAX_GPUS)?;
        let tokens = match c_tok.and_then(|c| rec.get(c)).map(str::trim) {
            Some(s) if !s.is_empty() => Some(num(c_tok.unwrap_or(0), "tokens_total", 1e18)?),
            _ => None,
        };
        let app = c_app
            .and_then(|c| rec.get(c))
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned);
        each(Row {
            time,
            ns: ns.to_owned(),
            pod: pod.to_owned(),
            alloc,
            used,
            tokens,
            app,
        })?;
    }
}
