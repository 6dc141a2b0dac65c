//! Telemetry from files, for teams without a reachable Prometheus.
//!
//! **CSV** (header required; extra columns ignored):
//! `timestamp,namespace,pod,allocated_gpus,used_gpus[,tokens_total][,app]`: one row per pod
//! and sample; `timestamp` RFC 3339 or Unix seconds; `used_gpus` is the engine-active
//! fraction summed over the pod's GPUs (0.5 = half of one GPU busy); `tokens_total` a counter.
//!
//! **Prometheus text / OpenMetrics**: samples of
//! `kube_pod_container_resource_requests{resource="nvidia_com_gpu"|"nvidia_com_mig_<profile>",namespace,pod}`,
//! `DCGM_FI_PROF_GR_ENGINE_ACTIVE{exported_namespace|namespace,exported_pod|pod,GPU_I_PROFILE,...}` and
//! `vllm:generation_tokens_total{namespace,pod}`, each with a timestamp (seconds in
//! OpenMetrics, which ends with `# EOF`; milliseconds in the Prometheus text format).
//!
//! A MIG instance (a `nvidia_com_mig_*` request, or DCGM's `GPU_I_PROFILE`) counts as its
//! profile's share of a GPU. Samples are expected at a fixed interval: the step is the smallest gap between two
//! samples of one pod, unless given.

use std::collections::BTreeMap;

use super::telemetry::{parse_time, Telemetry};

fn err(file: &str, line: usize, msg: impl std::fmt::Display) -> String {
    format!("{file}:{line}: {msg}")
}

fn err_at(file: &str, line: usize, col: usize, msg: impl std::fmt::Display) -> String {
    format!("{file}:{line}:{col}: {msg}")
}

/// The largest value a GPU request, allocatable count or usage sample may have: no node holds
/// a million GPUs. A larger one is a broken exporter or a hand-edited file, and would turn
/// every total into nonsense.
const MAX_GPUS: f64 = 1e6;

/// Whether a file's timestamps are seconds. OpenMetrics (ends with `# EOF`) uses seconds,
/// the Prometheus text format milliseconds; a file cut before its `# EOF` is told by its
/// timestamps: a fractional one is seconds, and so are integers between 10^9 and 10^11
/// (2001 to 5138 in seconds, but January 1970 to 1973 in milliseconds).
fn timestamps_in_seconds(text: &str) -> (bool, &'static str) {
    if text.lines().any(|l| l.trim() == "# EOF") {
        return (true, "OpenMetrics");
    }
    let mut seen = false;
    let mut all_plausible_seconds = true;
    for l in text.lines() {
        let l = l.trim();
        if l.is_empty() || l.starts_with('#') {
            continue;
        }
        let Some(ts) = l.rsplit(' ').next() else {
            continue;
        };
        if ts.contains('.') && ts.parse::<f64>().is_ok() {
            return (true, "OpenMetrics (fractional timestamps)");
        }
        if let Ok(v) = ts.parse::<i64>() {
            seen = true;
            if !(1_000_000_000..100_000_000_000).contains(&v) {
                all_plausible_seconds = false;
            }
        }
    }
    if seen && all_plausible_seconds {
        (true, "OpenMetrics (second timestamps, no `# EOF`)")
    } else {
        (false, "Prometheus text")
    }
}

pub fn read_csv(file: &str, text: &str, step: Option<i64>) -> Result<Telemetry, String> {
    let mut rdr = csv::ReaderBuilder::new()
        .flexible(true)
        .from_reader(text.as_bytes());
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
    let mut t = Telemetry {
        source: format!("CSV {file}"),
        ..Telemetry::default()
    };
    for rec in rdr.records() {
        let rec = rec.map_err(|e| {
            let line = e.position().map_or(0, |p| p.line() as usize);
            err(file, line, format!("not CSV: {e}"))
        })?;
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
        let num = |c: usize, what: &str| -> Result<f64, String> {
            let s = field(c, what)?;
            s.parse::<f64>()
                .ok()
                .filter(|v| v.is_finite() && *v >= 0.0)
                .filter(|v| {
                    *v <= if what == "tokens_total" {
                        1e18
                    } else {
                        MAX_GPUS
                    }
                })
                .ok_or_else(|| {
                    err_at(
                        file,
                        line,
                        col(c),
                        format!(
                            "`{what}` = `{s}`: expected a number from 0 to {:e}",
                            if what == "tokens_total" {
                                1e18
                            } else {
                                MAX_GPUS
                            }
                        ),
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
        let (alloc, used) = (num(c_alloc, "allocated_gpus")?, num(c_used, "used_gpus")?);
        let tokens = match c_tok.and_then(|c| rec.get(c)).map(str::trim) {
            Some(s) if !s.is_empty() => Some(num(c_tok.unwrap_or(0), "tokens_total")?),
            _ => None,
        };
        let app = c_app
            .and_then(|c| rec.get(c))
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned);
        let p = t.pod_mut(ns, pod);
        *p.allocated.entry(time).or_default() += alloc;
        *p.used.entry(time).or_default() += used;
        if let Some(tok) = tokens {
            *p.tokens.entry(time).or_default() += tok;
        }
        if app.is_some() {
            p.app = app;
        }
    }
    finish(t, file, step)
}

/// Labels of one exposition line: `{a="x",b="y"}`, with `\"`, `\\` and `\n` escapes.
fn labels(s: &str) -> Option<(BTreeMap<String, String>, &str)> {
    let mut out = BTreeMap::new();
    let mut rest = s.strip_prefix('{')?;
    loop {
        rest = rest.trim_start_matches([' ', ',']);
        if let Some(r) = rest.strip_prefix('}') {
            return Some((out, r));
        }
        let eq = rest.find('=')?;
        let name = rest[..eq].trim().to_owned();
        let mut chars = rest[eq + 1..].trim_start().char_indices();
        let body = rest[eq + 1..].trim_start();
        if chars.next()?.1 != '"' {
            return None;
        }
        let mut value = String::new();
        let mut end = None;
        let mut escaped = false;
        for (i, c) in chars {
            if escaped {
                value.push(match c {
                    'n' => '\n',
                    other => other,
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
        rest = &body[end? + 1..];
        out.insert(name, value);
    }
}

pub fn read_exposition(
    file: &str,
    text: &str,
    step: Option<i64>,
    catalog: &crate::catalog::Catalog,
) -> Result<Telemetry, String> {
    let (seconds, format) = timestamps_in_seconds(text);
    let mut t = Telemetry {
        source: format!("{format} {file}"),
        ..Telemetry::default()
    };
    // Each series' samples by time: a duplicate line (two scrapes of one exporter merged, a
    // file concatenated twice) is counted once, and a conflicting one is reported.
    let mut seen: std::collections::HashMap<(String, i64), f64> = std::collections::HashMap::new();
    let (mut duplicates, mut conflicts, mut unlabelled) = (0usize, 0usize, 0usize);
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let l = raw.trim();
        if l.is_empty() || l.starts_with('#') {
            continue;
        }
        let name_end = l.find(['{', ' ']).unwrap_or(l.len());
        let name = &l[..name_end];
        let (labels, rest) = if l[name_end..].starts_with('{') {
            labels(&l[name_end..])
                .ok_or_else(|| err(file, line, "labels: expected {name=\"value\",...}"))?
        } else {
            (BTreeMap::new(), &l[name_end..])
        };
        let (kind, weight) = match name {
            "kube_pod_container_resource_requests" | "kube_node_status_allocatable" => {
                // GPUs, or MIG instances at their profile's share of a GPU; other resources
                // (CPU, memory) are not the review's.
                let resource = labels.get("resource").map_or("", String::as_str);
                if resource != "nvidia_com_gpu" && !resource.starts_with("nvidia_com_mig_") {
                    continue;
                }
                let w = super::telemetry::resource_share(catalog, resource).ok_or_else(|| {
                    err(
                        file,
                        line,
                        format!("resource `{resource}`: no such MIG profile in the catalog"),
                    )
                })?;
                (
                    if name == "kube_node_status_allocatable" {
                        3
                    } else {
                        0
                    },
                    w,
                )
            }
            "DCGM_FI_PROF_GR_ENGINE_ACTIVE" => {
                // On a MIG instance the activity is of the instance, not the GPU.
                let w = match labels.get("GPU_I_PROFILE").filter(|p| !p.is_empty()) {
                    Some(p) => super::telemetry::mig_share(catalog, p).ok_or_else(|| {
                        err(
                            file,
                            line,
                            format!("GPU_I_PROFILE `{p}`: no such MIG profile in the catalog"),
                        )
                    })?,
                    None => 1.0,
                };
                (1, w)
            }
            "vllm:generation_tokens_total" | "vllm_generation_tokens_total" => (2, 1.0),
            "kube_node_labels" => (4, 1.0),
            _ => continue,
        };
        let mut parts = rest.split_whitespace();
        // Columns are 1-based characters of the raw line, for the value and the timestamp.
        let col_of = |tok: &str| {
            let at = tok.as_ptr() as usize - raw.as_ptr() as usize;
            raw[..at].chars().count() + 1
        };
        let value_tok = parts
            .next()
            .ok_or_else(|| err(file, line, "expected a sample value"))?;
        let max = if kind == 2 { 1e18 } else { MAX_GPUS };
        let value: f64 = value_tok
            .parse()
            .ok()
            .filter(|v: &f64| v.is_finite() && (0.0..=max).contains(v))
            .ok_or_else(|| {
                err_at(
                    file,
                    line,
                    col_of(value_tok),
                    format!("sample `{value_tok}`: expected a number from 0 to {max:e}"),
                )
            })?;
        let ts = parts.next().ok_or_else(|| {
            err(
                file,
                line,
                "expected a timestamp after the value (the review needs time series)",
            )
        })?;
        let secs = ts
            .parse::<f64>()
            .ok()
            .map(|v| if seconds { v } else { v / 1000.0 })
            .filter(|v| v.is_finite() && (0.0..=super::telemetry::MAX_TIME as f64).contains(v))
            .ok_or_else(|| {
                err_at(
                    file,
                    line,
                    col_of(ts),
                    format!(
                        "timestamp `{ts}`: expected a time from 1970 to 9999 ({})",
                        if seconds { "seconds" } else { "milliseconds" }
                    ),
                )
            })?;
        let time = secs.floor() as i64;
        let series = format!("{name}{labels:?}");
        match seen.get(&(series.clone(), time)) {
            Some(v) if *v == value => {
                duplicates += 1;
                continue;
            }
            Some(_) => {
                conflicts += 1;
                continue;
            }
            None => {
                seen.insert((series, time), value);
            }
        }
        if kind >= 3 {
            let node = labels
                .get("node")
                .ok_or_else(|| err(file, line, format!("`{name}` without a `node` label")))?;
            let n = t.node_mut(node);
            if kind == 3 {
                *n.capacity.entry(time).or_default() += value.max(0.0) * weight;
            } else if let Some(pool) = super::telemetry::POOL_LABELS
                .iter()
                .find_map(|k| labels.get(*k).filter(|v| !v.is_empty()))
            {
                n.pool = Some(pool.clone());
            }
            continue;
        }
        // Requests carry the node their pod runs on (kube-state-metrics 2.x).
        if kind == 0 {
            if let Some(node) = labels.get("node").filter(|n| !n.is_empty()) {
                *t.node_mut(node).allocated.entry(time).or_default() += value.max(0.0) * weight;
            }
        }
        // DCGM's own namespace/pod labels name the exporter when exported_* are present.
        let (Some(ns), Some(pod)) = (
            labels
                .get("exported_namespace")
                .or_else(|| labels.get("namespace")),
            labels.get("exported_pod").or_else(|| labels.get("pod")),
        ) else {
            // A GPU no pod holds (DCGM without pod attribution): counted, not fatal.
            unlabelled += 1;
            continue;
        };
        let (ns, pod) = (ns.clone(), pod.clone());
        let p = t.pod_mut(&ns, &pod);
        if let Some(app) = labels.get("label_app_kubernetes_io_name") {
            p.app = Some(app.clone());
        }
        let m = match kind {
            0 => &mut p.allocated,
            1 => &mut p.used,
            _ => &mut p.tokens,
        };
        *m.entry(time).or_default() += value.max(0.0) * weight;
    }
    if duplicates > 0 {
        t.notes.push(format!(
            "{file}: {duplicates} duplicate sample(s) of the same series and time counted once"
        ));
    }
    if conflicts > 0 {
        t.notes.push(format!("{file}: {conflicts} sample(s) contradict an earlier one of the same series and time; the first was kept"));
    }
    if unlabelled > 0 {
        t.notes.push(format!("{file}: {unlabelled} sample(s) without namespace/pod labels skipped (GPUs no pod holds)"));
    }
    finish(t, file, step)
}

/// Infer the step and window, or say why the data cannot be reviewed.
fn finish(mut t: Telemetry, file: &str, step: Option<i64>) -> Result<Telemetry, String> {
    let times: Vec<i64> = t
        .pods
        .values()
        .flat_map(|p| p.allocated.keys().chain(p.used.keys()).copied())
        .collect();
    let (Some(&min), Some(&max)) = (times.iter().min(), times.iter().max()) else {
        let also = if t.notes.is_empty() {
            String::new()
        } else {
            format!("; {}", t.notes.join("; "))
        };
        return Err(format!(
            "{file}: no GPU samples (kube_pod_container_resource_requests for nvidia_com_gpu, or DCGM_FI_PROF_GR_ENGINE_ACTIVE){also}"
        ));
    };
    let inferred = t
        .pods
        .values()
        .flat_map(|p| {
            p.allocated
                .keys()
                .zip(p.allocated.keys().skip(1))
                .map(|(a, b)| b - a)
        })
        .filter(|d| *d > 0)
        .min();
    // The data's own interval integrates the samples: a `--step` unlike it would scale
    // every total, so it is only a fallback for series of single samples.
    t.step = match (step, inferred) {
        (Some(s), Some(i)) => {
            if s != i {
                t.notes.push(format!(
                    "{file}: `--step {s}s` ignored: the samples are {i}s apart, and that is what each stands for"
                ));
            }
            i
        }
        (None, Some(s)) | (Some(s), None) => s,
        (None, None) => {
            return Err(format!(
                "{file}: every pod has a single sample: give the sampling interval with `--step`"
            ))
        }
    };
    t.from = min;
    t.to = max + t.step;
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_and_exposition_agree() {
        let csv = "timestamp,namespace,pod,allocated_gpus,used_gpus\n\
                   0,ml,chat-1,1,0.5\n60,ml,chat-1,1,0.25\n";
        let a = read_csv("t.csv", csv, None).expect("csv");
        let om = "# TYPE kube_pod_container_resource_requests gauge\n\
                  kube_pod_container_resource_requests{namespace=\"ml\",pod=\"chat-1\",resource=\"nvidia_com_gpu\"} 1 0\n\
                  kube_pod_container_resource_requests{namespace=\"ml\",pod=\"chat-1\",resource=\"nvidia_com_gpu\"} 1 60\n\
                  DCGM_FI_PROF_GR_ENGINE_ACTIVE{exported_namespace=\"ml\",exported_pod=\"chat-1\",namespace=\"gpu-operator\",pod=\"dcgm-x\",gpu=\"0\"} 0.5 0\n\
                  DCGM_FI_PROF_GR_ENGINE_ACTIVE{exported_namespace=\"ml\",exported_pod=\"chat-1\",namespace=\"gpu-operator\",pod=\"dcgm-x\",gpu=\"0\"} 0.25 60\n\
                  # EOF\n";
        let b = read_exposition("t.om", om, None, catalog()).expect("openmetrics");
        assert_eq!(a.pods, b.pods);
        assert_eq!((a.from, a.to, a.step), (0, 120, 60));
    }

    #[test]
    fn bad_rows_name_the_line() {
        let e = read_csv(
            "t.csv",
            "timestamp,namespace,pod,allocated_gpus,used_gpus\n0,ml,p,x,0\n",
            None,
        )
        .expect_err("bad");
        assert!(e.starts_with("t.csv:2:"), "{e}");
        let e = read_csv("t.csv", "time,namespace\n", None).expect_err("bad");
        assert!(e.contains("no `timestamp` column"), "{e}");
        let e = read_exposition(
            "t.prom",
            "DCGM_FI_PROF_GR_ENGINE_ACTIVE{pod=\"p\",namespace=\"n\"} 0.5\n",
            None,
            catalog(),
        )
        .expect_err("no timestamp");
        assert!(e.starts_with("t.prom:1:"), "{e}");
        assert!(read_exposition("t.prom", "# nothing\n", None, catalog()).is_err());
    }

    fn catalog() -> &'static crate::catalog::Catalog {
        static C: std::sync::OnceLock<crate::catalog::Catalog> = std::sync::OnceLock::new();
        C.get_or_init(|| crate::catalog::Catalog::embedded(&[]).expect("catalog"))
    }

    #[test]
    fn mig_instances_count_as_their_share_of_a_gpu() {
        let om = "kube_pod_container_resource_requests{namespace=\"ml\",pod=\"e-1\",resource=\"nvidia_com_mig_3g_40gb\"} 1 0\n\
                  kube_pod_container_resource_requests{namespace=\"ml\",pod=\"e-1\",resource=\"nvidia_com_mig_3g_40gb\"} 1 60\n\
                  DCGM_FI_PROF_GR_ENGINE_ACTIVE{exported_namespace=\"ml\",exported_pod=\"e-1\",GPU_I_PROFILE=\"3g.40gb\"} 0.5 0\n\
                  DCGM_FI_PROF_GR_ENGINE_ACTIVE{exported_namespace=\"ml\",exported_pod=\"e-1\",GPU_I_PROFILE=\"3g.40gb\"} 0.5 60\n\
                  # EOF\n";
        let t = read_exposition("t.om", om, None, catalog()).expect("openmetrics");
        let p = &t.pods[&("ml".to_owned(), "e-1".to_owned())];
        assert!((p.allocated[&0] - 3.0 / 7.0).abs() < 1e-12);
        assert!((p.used[&60] - 1.5 / 7.0).abs() < 1e-12);
        let bad = om.replace("3g_40gb", "9g_99gb");
        let e = read_exposition("t.om", &bad, None, catalog()).expect_err("unknown profile");
        assert!(e.contains("no such MIG profile"), "{e}");
    }
}

#[cfg(test)]
mod hostile {
    use super::*;

    fn catalog() -> &'static crate::catalog::Catalog {
        static C: std::sync::OnceLock<crate::catalog::Catalog> = std::sync::OnceLock::new();
        C.get_or_init(|| crate::catalog::Catalog::embedded(&[]).expect("catalog"))
    }

    const T0: i64 = 1_764_547_200; // 2025-12-01T00:00:00Z

    fn om(lines: &[(f64, i64)]) -> String {
        lines
            .iter()
            .map(|(v, t)| {
                format!("kube_pod_container_resource_requests{{namespace=\"ml\",pod=\"p\",resource=\"nvidia_com_gpu\"}} {v} {t}\n")
            })
            .collect()
    }

    #[test]
    fn openmetrics_cut_before_its_eof_keeps_second_timestamps() {
        let text = om(&[(2.0, T0), (2.0, T0 + 60), (2.0, T0 + 120)]);
        let t = read_exposition("t.om", &text, None, catalog()).expect("reads");
        assert_eq!((t.from, t.step), (T0, 60), "seconds, not milliseconds");
        let ms: String = om(&[(2.0, T0 * 1000), (2.0, (T0 + 60) * 1000)]);
        let t = read_exposition("t.prom", &ms, None, catalog()).expect("reads");
        assert_eq!((t.from, t.step), (T0, 60));
    }

    #[test]
    fn a_user_step_never_scales_file_totals() {
        let text = om(&[(2.0, T0), (2.0, T0 + 60), (2.0, T0 + 120)]);
        let t = read_exposition("t.om", &text, Some(3600), catalog()).expect("reads");
        assert_eq!(t.step, 60);
        assert!(t.notes.iter().any(|n| n.contains("--step 3600s` ignored")));
    }

    #[test]
    fn duplicate_series_count_once_and_conflicts_are_reported() {
        let mut text = om(&[(2.0, T0), (2.0, T0 + 60)]);
        text.push_str(&om(&[(2.0, T0), (4.0, T0 + 60)]));
        let t = read_exposition("t.om", &text, None, catalog()).expect("reads");
        let p = &t.pods[&("ml".to_owned(), "p".to_owned())];
        assert_eq!(p.allocated[&T0], 2.0);
        assert_eq!(p.allocated[&(T0 + 60)], 2.0);
        assert!(t.notes.iter().any(|n| n.contains("1 duplicate")));
        assert!(t.notes.iter().any(|n| n.contains("1 sample(s) contradict")));
    }

    #[test]
    fn bad_values_are_refused_at_their_column() {
        for (v, t) in [
            ("-1", "1764547200"),
            ("1e308", "1764547200"),
            ("NaN", "1764547200"),
            ("1", "NaN"),
            ("1", "-5"),
        ] {
            let line = format!("kube_pod_container_resource_requests{{namespace=\"ml\",pod=\"p\",resource=\"nvidia_com_gpu\"}} {v} {t}\n");
            let e = read_exposition("t.om", &line, None, catalog()).expect_err("refused");
            let col = if e.contains("sample") {
                line.find(&format!(" {v} ")).expect("value") + 2
            } else {
                line.rfind(t).expect("ts") + 1
            };
            assert!(e.starts_with(&format!("t.om:1:{col}: ")), "{e}");
        }
    }

    #[test]
    fn a_series_without_pod_labels_is_skipped_not_fatal() {
        let mut text = om(&[(1.0, T0), (1.0, T0 + 60)]);
        text.push_str(&format!(
            "DCGM_FI_PROF_GR_ENGINE_ACTIVE{{gpu=\"0\",Hostname=\"n1\"}} 0.5 {T0}\n"
        ));
        let t = read_exposition("t.om", &text, None, catalog()).expect("reads");
        assert!(t
            .notes
            .iter()
            .any(|n| n.contains("without namespace/pod labels")));
    }
}

#[cfg(test)]
mod csv_columns {
    #[test]
    fn csv_errors_name_line_and_column() {
        let head = "timestamp,namespace,pod,allocated_gpus,used_gpus\n";
        for (row, col) in [
            ("1764547200,ml,p,x,0", 17),
            ("1764547200,ml,p,1,1e308", 19),
            ("NaN,ml,p,1,0", 1),
            ("1764547200,ml,,1,0", 15),
        ] {
            let e = super::read_csv("t.csv", &format!("{head}{row}\n"), None).expect_err(row);
            assert!(e.starts_with(&format!("t.csv:2:{col}: ")), "{row}: {e}");
        }
    }
}
