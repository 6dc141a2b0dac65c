//! Prometheus text and OpenMetrics files, read in two streaming passes.

use std::collections::{BTreeMap, HashMap};
use std::io::BufRead;

use super::source::{bounded, err, err_at, file_err, grid_for, read_err, Read, Window, MAX_LINE};
use crate::review::noticed::Noticed;
use crate::review::query::{sample_max, wanted, Collector};
use crate::review::ReviewError;

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
    let (scan, mut ids) = scan(path, &file)?;
    if scan.samples == 0 {
        return Err(file_err(&file, "no GPU samples (kube_pod_container_resource_requests for nvidia_com_gpu, or DCGM_FI_PROF_GR_ENGINE_ACTIVE)".to_owned()));
    }
    let unit = Unit::of(&scan);
    unit.check_latest(&file, &scan)?;
    let (grid, tail) = grid_for(
        unit.to_ms(scan.min).round() as i64,
        unit.to_ms(scan.max).round() as i64,
        w,
    )?;
    let mut c = Collector::new(grid, cluster.map(str::to_owned));
    collect(path, &file, &scan, &mut ids, unit, &mut c)?;
    let mut notes: Vec<Noticed> = tail.into_iter().collect();
    if c.duplicates > 0 {
        notes.push(Noticed::Duplicates {
            file: file.clone(),
            samples: c.duplicates,
        });
    }
    if c.conflicts > 0 {
        notes.push(Noticed::Conflicts {
            file: file.clone(),
            samples: c.conflicts,
        });
    }
    Ok(Read {
        answers: c.finish(),
        grid,
        source: format!("{} {file}", unit.format),
        notes,
    })
}

/// The first pass: the span of the wanted samples, their time unit's clues, and which series
/// go back in time.
fn scan(path: &std::path::Path, file: &str) -> Result<(Scan, Ids), ReviewError> {
    let max_series = crate::review::telemetry::max_series();
    let mut scan = Scan {
        all_plausible_seconds: true,
        min: f64::INFINITY,
        max: f64::NEG_INFINITY,
        ..Scan::default()
    };
    let mut ids = Ids::new();
    each_line(path, file, |n, l| {
        if l.is_empty() {
            return Ok(());
        }
        if l.starts_with('#') {
            scan.eof |= l == "# EOF";
            return Ok(());
        }
        let c = cut(file, n, l)?;
        if !wanted(c.name) {
            return Ok(());
        }
        let ts = c.ts.ok_or_else(|| {
            err(
                file,
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
                    file,
                    n,
                    col_of(l, ts),
                    format!("timestamp `{ts}`: expected a time from 1970 to 9999"),
                )
            })?;
        let (id, new) = ids.id(c.key);
        if new && id >= max_series {
            return Err(err_at(
                file,
                n,
                1,
                crate::review::telemetry::too_many_series("the file"),
            ));
        }
        scan.sample(id, new, v, ts, || (n, col_of(l, ts)));
        Ok(())
    })?;
    Ok((scan, ids))
}

impl Scan {
    /// One wanted sample at time `v` (as written, `ts`) of series `id`; `at` says where it
    /// stands, worked out only for a new latest time (it counts the line's characters).
    fn sample(
        &mut self,
        id: usize,
        new: bool,
        v: f64,
        ts: &str,
        at: impl FnOnce() -> (usize, usize),
    ) {
        if ts.contains('.') {
            self.fractional = true;
        }
        if !(1e9..1e11).contains(&v) {
            self.all_plausible_seconds = false;
        }
        self.min = self.min.min(v);
        if v > self.max {
            self.max = v;
            self.max_at = at();
        }
        self.samples += 1;
        if new {
            self.last.push(v);
            self.out_of_order.push(false);
        } else {
            if v <= self.last[id] {
                self.out_of_order[id] = true;
            }
            self.last[id] = self.last[id].max(v);
        }
    }
}

/// The file's time unit, and the format that implies.
#[derive(Clone, Copy)]
struct Unit {
    seconds: bool,
    format: &'static str,
}

impl Unit {
    /// OpenMetrics (ends with `# EOF`) uses seconds, the Prometheus text format milliseconds;
    /// a file cut before its `# EOF` is told by its timestamps: a fractional one is seconds,
    /// and so are integers between 10^9 and 10^11 (2001 to 5138 in seconds, but January 1970
    /// to 1973 in milliseconds).
    fn of(scan: &Scan) -> Unit {
        let (seconds, format) = if scan.eof {
            (true, "OpenMetrics")
        } else if scan.fractional {
            (true, "OpenMetrics (fractional timestamps)")
        } else if scan.samples > 0 && scan.all_plausible_seconds {
            (true, "OpenMetrics (second timestamps, no `# EOF`)")
        } else {
            (false, "Prometheus text")
        };
        Unit { seconds, format }
    }

    fn to_ms(self, v: f64) -> f64 {
        if self.seconds {
            v * 1000.0
        } else {
            v
        }
    }

    /// A millisecond time in a file of seconds (OpenMetrics), or a garbled one, is refused
    /// where it stands.
    fn check_latest(self, file: &str, scan: &Scan) -> Result<(), ReviewError> {
        let limit = crate::review::telemetry::MAX_TIME as f64 * 1000.0;
        if self.to_ms(scan.max) <= limit {
            return Ok(());
        }
        Err(err_at(
            file,
            scan.max_at.0,
            scan.max_at.1,
            format!(
                "timestamp `{}` is past the year 9999 read as {} ({}): expected {}",
                scan.max,
                if self.seconds {
                    "seconds"
                } else {
                    "milliseconds"
                },
                self.format,
                if self.seconds {
                    "Unix seconds (OpenMetrics)"
                } else {
                    "Unix milliseconds"
                }
            ),
        ))
    }
}

/// The second pass: every wanted sample into the collector, each series registered once.
fn collect(
    path: &std::path::Path,
    file: &str,
    scan: &Scan,
    ids: &mut Ids,
    unit: Unit,
    c: &mut Collector,
) -> Result<(), ReviewError> {
    // Pass-one id -> the collector's series (None: no query wants it), registered once.
    let mut series: Vec<Option<Option<usize>>> = vec![None; scan.last.len()];
    each_line(path, file, |n, l| {
        if l.is_empty() || l.starts_with('#') {
            return Ok(());
        }
        let cut = cut(file, n, l)?;
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
                    .map_err(|_| err(file, n, "labels: expected {name=\"value\",...}"))?;
                if let Some(slot) = series.get_mut(first) {
                    *slot = Some(got);
                }
                match got {
                    Some(id) => id,
                    None => return Ok(()),
                }
            }
        };
        let v = value_of(file, n, l, cut.value, sample_max(cut.name))?;
        let ts = cut.ts.unwrap_or("0");
        let ms = unit.to_ms(ts.parse::<f64>().unwrap_or(0.0)).round() as i64;
        c.sample(id, ms, v);
        Ok(())
    })?;
    Ok(())
}
