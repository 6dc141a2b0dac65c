//! Telemetry from files, for teams without a reachable Prometheus.
//!
//! **Prometheus text / OpenMetrics** with timestamps (seconds in OpenMetrics, which ends with
//! `# EOF`; milliseconds in the Prometheus text format): the series kube-state-metrics and
//! dcgm-exporter export, with their stock labels (see [`super::query::QUERIES`]). The file is
//! streamed twice (once for its span and sample order, once to evaluate the queries), so
//! memory grows with series × windows, never with the file.
//!
//! **CSV** (header required; extra columns ignored):
//! `timestamp,namespace,pod,allocated_gpus,used_gpus[,tokens_total][,app]`: one row per
//! running pod and sample; `used_gpus` is the engine-active fraction summed over the pod's
//! GPUs (0.5 = half of one GPU busy). Each row is read as kube-state-metrics and dcgm-exporter
//! samples of that pod, so both formats meet the same evaluator.

use std::collections::{BTreeMap, HashMap};
use std::io::BufRead;

use super::query::{wanted, Answers, Collector, Grid};
use super::telemetry::parse_time;
use super::ReviewError;

fn err(file: &str, line: usize, msg: impl std::fmt::Display) -> ReviewError {
    ReviewError::At {
        file: file.to_owned(),
        line,
        column: None,
        message: msg.to_string(),
    }
}

fn err_at(file: &str, line: usize, col: usize, msg: impl std::fmt::Display) -> ReviewError {
    ReviewError::At {
        file: file.to_owned(),
        line,
        column: Some(col),
        message: msg.to_string(),
    }
}

fn read_err(file: &str) -> impl Fn(std::io::Error) -> ReviewError + '_ {
    move |source| ReviewError::Read {
        file: file.to_owned(),
        source,
    }
}

fn file_err(file: &str, message: String) -> ReviewError {
    ReviewError::File {
        file: file.to_owned(),
        message,
    }
}

use super::query::{sample_max, MAX_GPUS};

/// The longest exposition line read: a sample with hundreds of labels is a few KiB.
const MAX_LINE: u64 = 1 << 20;

/// The window the user asked for, before the data's span fills the rest.
#[derive(Debug, Clone, Copy, Default)]
pub struct Window {
    pub from: Option<i64>,
    pub to: Option<i64>,
    pub window: Option<i64>,
    pub step: Option<i64>,
}

/// What a file gave: the queries' answers on their grid.
pub struct Read {
    pub answers: Answers,
    pub grid: Grid,
    pub source: String,
    pub notes: Vec<String>,
}

/// The grid for data spanning `[min_ms, max_ms]` and what the user asked: `--from`/`--to`
/// win; `--window` alone is the last stretch of the data (or before `--to`); the step is
/// `--step`, or the one a Prometheus server would be asked at for that span, and an unset
/// start is aligned to it.
pub(crate) fn grid_for(min_ms: i64, max_ms: i64, w: Window) -> Result<Grid, ReviewError> {
    let data_from = min_ms.div_euclid(1000);
    let data_to = (max_ms + 999).div_euclid(1000) + 1;
    let span = |from: i64, to: i64| {
        if from >= to {
            Err(ReviewError::Window(
                "the window is empty: `--from` must come before `--to`".to_owned(),
            ))
        } else {
            Ok(w.step
                .unwrap_or_else(|| super::prometheus::step_for(to - from)))
        }
    };
    // Bounds the user did not give follow the data, aligned outwards to the step; a
    // `--window` alone is the last stretch of the data.
    let (from, to, step) = match (w.from, w.to, w.window) {
        (Some(f), Some(t), _) => (f, t, span(f, t)?),
        (Some(f), None, Some(win)) => (f, f + win, span(f, f + win)?),
        (None, Some(t), Some(win)) => (t - win, t, span(t - win, t)?),
        (None, None, Some(win)) => {
            let step = span(data_to - win, data_to)?;
            let to = (data_to + step - 1).div_euclid(step) * step;
            (to - win, to, step)
        }
        (Some(f), None, None) => (f, data_to, span(f, data_to)?),
        (None, t, None) => {
            let to = t.unwrap_or(data_to);
            let step = span(data_from, to)?;
            (data_from.div_euclid(step) * step, to, step)
        }
    };
    Grid::new(from, to, step)
}

/// One exposition line, cut into its parts (byte offsets into the line).
struct Line<'a> {
    name: &'a str,
    /// Metric name and label block as written: the series' identity.
    key: &'a str,
    labels: &'a str,
    value: &'a str,
    ts: Option<&'a str>,
}

fn cut<'a>(file: &str, line: usize, l: &'a str) -> Result<Line<'a>, ReviewError> {
    let name_end = l
        .bytes()
        .position(|b| b == b'{' || b == b' ' || b == b'\t')
        .unwrap_or(l.len());
    let name = &l[..name_end];
    let (labels, rest_at) = if l.as_bytes().get(name_end) == Some(&b'{') {
        // Only a value and a timestamp follow the label block, so its end is the line's last
        // `}` (a quoted `}` inside a value comes before it); `labels` checks the block when a
        // series is first seen.
        let end = l
            .rfind('}')
            .filter(|e| *e > name_end)
            .ok_or_else(|| err(file, line, "labels: expected {name=\"value\",...}"))?;
        (&l[name_end..=end], end + 1)
    } else {
        ("", name_end)
    };
    let mut parts = l[rest_at..].split_ascii_whitespace();
    let value = parts
        .next()
        .ok_or_else(|| err(file, line, "expected a sample value"))?;
    Ok(Line {
        name,
        key: &l[..rest_at],
        labels,
        value,
        ts: parts.next(),
    })
}

/// Labels of one exposition line: `{a="x",b="y"}`, with `\"`, `\\` and `\n` escapes, as the
/// text format defines them: a name is `[a-zA-Z_][a-zA-Z0-9_]*`, pairs are separated by a
/// comma (one trailing comma allowed), a name appears once, and no other escape exists.
/// `None` for anything else: what Prometheus's own parser refuses is refused here.
fn labels(s: &str) -> Option<BTreeMap<String, String>> {
    let mut out = BTreeMap::new();
    let mut rest = s.strip_prefix('{')?;
    loop {
        rest = rest.trim_start();
        if let Some(after) = rest.strip_prefix('}') {
            return after.trim().is_empty().then_some(out);
        }
        let eq = rest.find('=')?;
        let name = rest[..eq].trim();
        let mut chars = name.chars();
        let first = chars.next()?;
        if !(first.is_ascii_alphabetic() || first == '_')
            || !chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        {
            return None;
        }
        let body = rest[eq + 1..].trim_start();
        let mut it = body.char_indices();
        if it.next()?.1 != '"' {
            return None;
        }
        let mut value = String::new();
        let mut end = None;
        let mut escaped = false;
        for (i, c) in it {
            if escaped {
                value.push(match c {
                    'n' => '\n',
                    '\\' | '"' => c,
                    _ => return None,
                });
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                end = Some(i);
                break;
            } else {
                value.push(c);
            }
        }
        if out.insert(name.to_owned(), value).is_some() {
            return None;
        }
        rest = body[end? + 1..].trim_start();
        match rest.strip_prefix(',') {
            Some(r) => rest = r,
            None if rest.starts_with('}') => {}
            None => return None,
        }
    }
}

/// Lines of a regular file, one at a time, as UTF-8.
fn each_line(
    path: &std::path::Path,
    file: &str,
    mut f: impl FnMut(usize, &str) -> Result<(), ReviewError>,
) -> Result<u64, ReviewError> {
    let fh = crate::fsio::open(path, crate::fsio::Input::Regular)
        .map_err(read_err(file))?
        .file;
    let mut r = std::io::BufReader::with_capacity(1 << 20, fh);
    let mut buf = Vec::new();
    let mut n = 0usize;
    loop {
        buf.clear();
        // A line is bounded, so a file with no newlines (or a device behind a regular-looking
        // path) cannot take the memory the streaming reader saves.
        let got = std::io::Read::take(&mut r, MAX_LINE + 1)
            .read_until(b'\n', &mut buf)
            .map_err(read_err(file))?;
        if got == 0 {
            return Ok(n as u64);
        }
        n += 1;
        if buf.len() as u64 > MAX_LINE {
            return Err(err(
                file,
                n,
                format!(
                    "a line longer than {} KiB: not the exposition format",
                    MAX_LINE >> 10
                ),
            ));
        }
        let s =
            std::str::from_utf8(&buf).map_err(|e| err(file, n, format!("not UTF-8 text ({e})")))?;
        f(n, s.trim())?;
    }
}

/// What the first pass learns: the span of the wanted samples, their time unit, and which
/// series go back in time (so the second pass de-duplicates exactly those).
#[derive(Default)]
struct Scan {
    eof: bool,
    fractional: bool,
    all_plausible_seconds: bool,
    min: f64,
    max: f64,
    /// Where the latest timestamp stands (line, column): a timestamp past 9999 is refused
    /// there.
    max_at: (usize, usize),
    samples: u64,
    /// By series id: its latest time, and whether it ever went back.
    last: Vec<f64>,
    out_of_order: Vec<bool>,
}

/// Series ids by their text (metric name and label block as written), in order of first
/// appearance, under a keyed hash (a hostile file cannot make it collide).
struct Ids {
    map: HashMap<Box<str>, usize, ahash::RandomState>,
}

impl Ids {
    fn new() -> Self {
        Ids {
            map: HashMap::with_hasher(ahash::RandomState::new()),
        }
    }

    /// The id of `key`, and whether it is new.
    fn id(&mut self, key: &str) -> (usize, bool) {
        if let Some(id) = self.map.get(key) {
            return (*id, false);
        }
        let n = self.map.len();
        self.map.insert(key.into(), n);
        (n, true)
    }
}

/// `tok` as a finite number from 0 to `max`; `None` otherwise (the caller names where).
fn bounded(tok: &str, max: f64) -> Option<f64> {
    tok.parse::<f64>()
        .ok()
        .filter(|v| v.is_finite() && (0.0..=max).contains(v))
}

fn value_of(file: &str, line: usize, raw: &str, tok: &str, max: f64) -> Result<f64, ReviewError> {
    bounded(tok, max).ok_or_else(|| {
        err_at(
            file,
            line,
            col_of(raw, tok),
            format!("sample `{tok}`: expected a number from 0 to {max:e}"),
        )
    })
}

/// 1-based character column of `tok` (a slice of `raw`).
fn col_of(raw: &str, tok: &str) -> usize {
    let at = (tok.as_ptr() as usize).saturating_sub(raw.as_ptr() as usize);
    raw.get(..at).map_or(1, |s| s.chars().count() + 1)
}

/// Read an exposition file in two streaming passes.
pub fn read_exposition(
    path: &std::path::Path,
    w: Window,
    cluster: Option<&str>,
) -> Result<Read, ReviewError> {
    let file = path.display().to_string();
    let max_series = super::telemetry::max_series();
    let mut scan = Scan {
        all_plausible_seconds: true,
        min: f64::INFINITY,
        max: f64::NEG_INFINITY,
        ..Scan::default()
    };
    let mut ids = Ids::new();
    each_line(path, &file, |n, l| {
        if l.is_empty() {
            return Ok(());
        }
        if l.starts_with('#') {
            scan.eof |= l == "# EOF";
            return Ok(());
        }
        let c = cut(&file, n, l)?;
        if !wanted(c.name) {
            return Ok(());
        }
        let ts = c.ts.ok_or_else(|| {
            err(
                &file,
                n,
                "expected a timestamp after the value (the review needs time series)",
            )
        })?;
        let v: f64 = ts
            .parse()
            .ok()
            .filter(|v: &f64| v.is_finite() && *v >= 0.0)
            .ok_or_else(|| {
                err_at(
                    &file,
                    n,
                    col_of(l, ts),
                    format!("timestamp `{ts}`: expected a time from 1970 to 9999"),
                )
            })?;
        if ts.contains('.') {
            scan.fractional = true;
        }
        if !(1e9..1e11).contains(&v) {
            scan.all_plausible_seconds = false;
        }
        scan.min = scan.min.min(v);
        if v > scan.max {
            scan.max = v;
            scan.max_at = (n, col_of(l, ts));
        }
        scan.samples += 1;
        let (id, new) = ids.id(c.key);
        if new && id >= max_series {
            return Err(err_at(
                &file,
                n,
                1,
                super::telemetry::too_many_series("the file"),
            ));
        }
        if new {
            scan.last.push(v);
            scan.out_of_order.push(false);
        } else {
            if v <= scan.last[id] {
                scan.out_of_order[id] = true;
            }
            scan.last[id] = scan.last[id].max(v);
        }
        Ok(())
    })?;
    // OpenMetrics (ends with `# EOF`) uses seconds, the Prometheus text format milliseconds; a
    // file cut before its `# EOF` is told by its timestamps: a fractional one is seconds, and
    // so are integers between 10^9 and 10^11 (2001 to 5138 in seconds, but January 1970 to
    // 1973 in milliseconds).
    let (seconds, format) = if scan.eof {
        (true, "OpenMetrics")
    } else if scan.fractional {
        (true, "OpenMetrics (fractional timestamps)")
    } else if scan.samples > 0 && scan.all_plausible_seconds {
        (true, "OpenMetrics (second timestamps, no `# EOF`)")
    } else {
        (false, "Prometheus text")
    };
    if scan.samples == 0 {
        return Err(file_err(&file, "no GPU samples (kube_pod_container_resource_requests for nvidia_com_gpu, or DCGM_FI_PROF_GR_ENGINE_ACTIVE)".to_owned()));
    }
    let to_ms = |v: f64| -> f64 {
        if seconds {
            v * 1000.0
        } else {
            v
        }
    };
    let limit = super::telemetry::MAX_TIME as f64 * 1000.0;
    if to_ms(scan.max) > limit {
        // A millisecond time in a file of seconds (OpenMetrics), or a garbled one: refused
        // where it stands.
        return Err(err_at(
            &file,
            scan.max_at.0,
            scan.max_at.1,
            format!(
                "timestamp `{}` is past the year 9999 read as {} ({format}): expected {}",
                scan.max,
                if seconds { "seconds" } else { "milliseconds" },
                if seconds {
                    "Unix seconds (OpenMetrics)"
                } else {
                    "Unix milliseconds"
                }
            ),
        ));
    }
    let grid = grid_for(
        to_ms(scan.min).round() as i64,
        to_ms(scan.max).round() as i64,
        w,
    )?;
    let mut c = Collector::new(grid, cluster.map(str::to_owned));
    // Pass-one id -> the collector's series (None: no query wants it), registered once.
    let mut series: Vec<Option<Option<usize>>> = vec![None; scan.last.len()];
    each_line(path, &file, |n, l| {
        if l.is_empty() || l.starts_with('#') {
            return Ok(());
        }
        let cut = cut(&file, n, l)?;
        if !wanted(cut.name) {
            return Ok(());
        }
        let (first, _) = ids.id(cut.key);
        let id = match series.get(first).copied().flatten() {
            Some(Some(id)) => id,
            Some(None) => return Ok(()),
            None => {
                let parse = || {
                    if cut.labels.is_empty() {
                        Some(BTreeMap::new())
                    } else {
                        labels(cut.labels)
                    }
                };
                let ooo = scan.out_of_order.get(first).copied().unwrap_or(true);
                let got = c
                    .register(cut.name, parse, ooo)
                    .map_err(|_| err(&file, n, "labels: expected {name=\"value\",...}"))?;
                if let Some(slot) = series.get_mut(first) {
                    *slot = Some(got);
                }
                match got {
                    Some(id) => id,
                    None => return Ok(()),
                }
            }
        };
        let v = value_of(&file, n, l, cut.value, sample_max(cut.name))?;
        let ts = cut.ts.unwrap_or("0");
        let ms = to_ms(ts.parse::<f64>().unwrap_or(0.0)).round() as i64;
        c.sample(id, ms, v);
        Ok(())
    })?;
    let mut notes = Vec::new();
    if c.duplicates > 0 {
        notes.push(format!(
            "{file}: {} duplicate sample(s) of the same series and time counted once",
            c.duplicates
        ));
    }
    if c.conflicts > 0 {
        notes.push(format!("{file}: {} sample(s) contradict an earlier one of the same series and time; the first was kept", c.conflicts));
    }
    Ok(Read {
        answers: c.finish(),
        grid,
        source: format!("{format} {file}"),
        notes,
    })
}

/// Read the CSV format as the samples kube-state-metrics and dcgm-exporter would have given.
/// Read the CSV format as the samples kube-state-metrics and dcgm-exporter would have given,
/// streamed twice (the times first, for the grid; then the samples): memory grows with the
/// pods and windows, not with the file.
pub(crate) fn read_csv(path: &std::path::Path, w: Window) -> Result<Read, ReviewError> {
    let file = path.display().to_string();
    let max_series = super::telemetry::max_series();
    let (mut min, mut max) = (i64::MAX, i64::MIN);
    csv_rows(path, &file, |r| {
        min = min.min(r.time);
        max = max.max(r.time);
        Ok(())
    })?;
    if min > max {
        return Err(file_err(&file, "no rows".to_owned()));
    }
    let grid = grid_for(min * 1000, max * 1000, w)?;
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
                super::telemetry::too_many_series("the file"),
            ));
        }
        Ok(())
    })?;
    let mut answers = c.finish();
    answers.gpus_as_given = true;
    for ((k, ns, pod), app) in apps {
        answers.add(
            super::query::Q::PodLabels,
            &[String::new(), ns, pod, app],
            k,
            1.0,
        );
    }
    Ok(Read {
        answers,
        grid,
        source: format!("CSV {file}"),
        notes: Vec::new(),
    })
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
