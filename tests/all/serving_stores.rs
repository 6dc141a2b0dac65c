//! Issue 61: busy servers and the stores that hold their metrics. A server that has answered
//! millions of requests since it started exports histogram counters past a million; vLLM's
//! V1 metrics logger exports `vllm:gpu_cache_usage_perc` beside `vllm:kv_cache_usage_perc`.
//! Neither stops the review, and the file, Prometheus and VictoriaMetrics give one answer.

use crate::common;
use crate::forecast::NOV7;
use crate::serving_forecast::{vllm_fleet, VLLM_PLAN};

/// The fleet's metrics as a busy V1 server exports them: every TTFT counter 5 million
/// requests along, and each pod that exports `vllm:kv_cache_usage_perc` exporting the same
/// value under `vllm:gpu_cache_usage_perc` too.
fn busy_v1(om: &str) -> String {
    let mut out = String::new();
    let mut twin = String::from("# TYPE vllm:gpu_cache_usage_perc gauge\n");
    for line in om.lines() {
        if line == "# EOF" {
            continue;
        }
        if line.contains("time_to_first_token_seconds_bucket{") {
            let (head, rest) = line.rsplit_once("} ").expect("sample");
            let (v, t) = rest.split_once(' ').expect("value and time");
            let v: f64 = v.parse().expect("value");
            out.push_str(&format!("{head}}} {} {t}\n", v + 5e6));
            continue;
        }
        if let Some(rest) = line.strip_prefix("vllm:kv_cache_usage_perc{") {
            twin.push_str(&format!("vllm:gpu_cache_usage_perc{{{rest}\n"));
        }
        out.push_str(line);
        out.push('\n');
    }
    out + &twin + "# EOF\n"
}

fn review(dir: &std::path::Path, source: &[&str]) -> serde_json::Value {
    crate::serving_sizing::review_with(dir, VLLM_PLAN, source, None)
}

#[test]
fn a_busy_v1_server_reads_as_a_quiet_one_from_a_file() {
    let dir = tempfile::tempdir().expect("tmp");
    let plain = dir.path().join("plain.om");
    let fleet = vllm_fleet(NOV7, 8);
    std::fs::write(&plain, &fleet).expect("om");
    let busy = dir.path().join("busy.om");
    std::fs::write(&busy, busy_v1(&fleet)).expect("om");
    let a = review(dir.path(), &["--metrics", plain.to_str().expect("utf-8")]);
    let b = review(dir.path(), &["--metrics", busy.to_str().expect("utf-8")]);
    assert_eq!(a["serving"], b["serving"]);
}

#[test]
#[ignore = "needs Debian's prometheus and victoria-metrics packages; .ci/run installs them and runs this test"]
fn a_busy_v1_server_reads_the_same_through_prometheus_and_victoria_metrics() {
    let dir = tempfile::tempdir().expect("tmp");
    let om = dir.path().join("busy.om");
    std::fs::write(&om, busy_v1(&vllm_fleet(NOV7, 8))).expect("om");
    let file = review(dir.path(), &["--metrics", om.to_str().expect("utf-8")]);
    assert_eq!(file["serving"].as_array().map(Vec::len), Some(1));
    let prom_dir = dir.path().join("prom");
    std::fs::create_dir_all(&prom_dir).expect("dir");
    let (_p, prom) = common::prometheus::start(&prom_dir, &om);
    let from_prom = review(dir.path(), &["--prometheus", &prom]);
    common::prometheus::assert_close(&from_prom["serving"], &file["serving"], "serving");
    let vm_dir = dir.path().join("vm");
    std::fs::create_dir_all(&vm_dir).expect("dir");
    let (_v, vm) = common::victoria::start(&vm_dir, &om);
    let from_vm = review(dir.path(), &["--prometheus", &vm]);
    common::prometheus::assert_close(&from_vm["serving"], &file["serving"], "serving");
}

/// The arrivals, service times and batch slots of the simulated services read the same
/// through a real Prometheus and a real VictoriaMetrics as from the file, and so do the sizes.
#[test]
#[ignore = "needs Debian's prometheus and victoria-metrics packages; .ci/run installs them and runs this test"]
fn arrivals_read_the_same_through_prometheus_and_victoria_metrics() {
    use crate::serving_sizing::{fleet, review, review_from};
    let dir = tempfile::tempdir().expect("tmp");
    let text = fleet(60.0);
    let file = review(dir.path(), &text, "file");
    let om = dir.path().join("file.om");
    let size = |v: &serde_json::Value| -> Vec<serde_json::Value> {
        v["next_quarter"]["workloads"]
            .as_array()
            .expect("workloads")
            .iter()
            .map(|w| w["proposed"].clone())
            .collect()
    };
    let prom_dir = dir.path().join("prom");
    std::fs::create_dir_all(&prom_dir).expect("dir");
    let (_p, prom) = common::prometheus::start(&prom_dir, &om);
    let from_prom = review_from(dir.path(), &["--prometheus", &prom], "prom");
    common::prometheus::assert_close(&from_prom["serving"], &file["serving"], "prom");
    assert_eq!(size(&from_prom), size(&file), "prom");
    let vm_dir = dir.path().join("vm");
    std::fs::create_dir_all(&vm_dir).expect("dir");
    let (_v, vm) = common::victoria::start(&vm_dir, &om);
    let from_vm = review_from(dir.path(), &["--prometheus", &vm], "vm");
    common::prometheus::assert_close(&from_vm["serving"], &file["serving"], "vm");
    assert_eq!(size(&from_vm), size(&file), "vm");
}

/// A store refuses a query with HTTP 422 for what it is (two series of one labelset), not
/// its size: the review names it and does not split the query in pieces that cannot help.
#[test]
fn a_422_that_is_not_a_limit_is_named_for_what_it_says() {
    use common::mock::Resp;
    let m = crate::review::mock_prometheus_with(
        crate::review::one_pod("chat-api-1", "assistants", "nvidia_com_gpu", None, 0.5),
        |_, r| {
            (r.target.contains("query_range") && r.target.contains("kube_pod_status_phase")).then(|| {
                Resp::new(
                    422,
                    "application/json",
                    "{\"status\":\"error\",\"errorType\":\"execution\",\"error\":\"vector cannot contain metrics with the same labelset\"}",
                )
            })
        },
    );
    let err = crate::review::review_against(&m.url, &[], 2);
    assert!(
        err.contains("vector cannot contain metrics with the same labelset")
            && err.contains("not its size")
            && !err.contains("in pieces down to"),
        "{err}"
    );
    // Never asked for a shorter stretch: every request starts where the window does.
    let starts: std::collections::BTreeSet<String> = m
        .requests()
        .into_iter()
        .filter(|r| r.target.contains("query_range"))
        .filter_map(|r| {
            r.target
                .split(['?', '&'])
                .find_map(|kv| kv.strip_prefix("start=").map(str::to_owned))
        })
        .collect();
    assert_eq!(starts.len(), 1, "{starts:?}");
}

/// The review of one pod from a store that answers every query at once: what a slow or
/// tight store must read the same.
fn answered_at_once() -> serde_json::Value {
    common::contract(crate::review::review_against(
        &crate::review::mock_prometheus_with(
            crate::review::one_pod("chat-api-1", "assistants", "nvidia_com_gpu", None, 0.5),
            |_, _| None,
        )
        .url,
        &[],
        0,
    ))
    .expect("json")
}

/// An empty matrix answered after 3 s: past the review's `--timeout 2`.
fn slow_empty_answer() -> common::mock::Resp {
    let mut slow = common::mock::Resp::json(
        "{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\",\"result\":[]}}",
    );
    slow.delay = Some(std::time::Duration::from_secs(3));
    slow
}

/// A store slow on each query's first answer and fast on the same query again (its caches):
/// each request that runs out of time is asked again as it was, and the review's figures are
/// those of a store that answered at once.
#[test]
fn a_store_slow_on_first_answers_is_asked_the_same_again() {
    use std::sync::{Arc, Mutex};
    let whole = answered_at_once();
    let seen: Arc<Mutex<std::collections::BTreeSet<String>>> = Arc::default();
    let first = Arc::clone(&seen);
    let m = crate::review::mock_prometheus_with(
        crate::review::one_pod("chat-api-1", "assistants", "nvidia_com_gpu", None, 0.5),
        move |_, r| {
            let new = r.target.contains("query_range")
                && first
                    .lock()
                    .map(|mut s| s.insert(r.target.clone()))
                    .unwrap_or(false);
            // Past the review's `--timeout 2`.
            new.then(slow_empty_answer)
        },
    );
    let out = crate::review::review_command(&m.url)
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    // Never waited on in silence: each wait is said as it happens.
    assert!(
        stderr.contains("note: the store did not answer")
            && stderr.contains("asking the same again"),
        "{stderr}"
    );
    let v: serde_json::Value = common::contract(&out.stdout).expect("json");
    for key in ["teams", "workloads", "pools"] {
        common::prometheus::assert_close(&v[key], &whole[key], key);
    }
    let targets: Vec<String> = m
        .requests()
        .into_iter()
        .filter(|r| r.target.contains("query_range"))
        .map(|r| r.target)
        .collect();
    let distinct: std::collections::BTreeSet<&String> = targets.iter().collect();
    assert_eq!(
        targets.len(),
        2 * distinct.len(),
        "each asked twice, the same both times"
    );
}

/// Issue 75 item 12: a store both slow and tight (a piece's first answer past `--timeout`,
/// then HTTP 422 for its size when asked again) stopped the review at the first halving; a
/// tight store alone is split further and read. Both now read the same figures as a store
/// that answered at once.
#[test]
fn a_store_both_slow_and_tight_is_split_until_it_answers() {
    use common::mock::Resp;
    use std::sync::{Arc, Mutex};
    let span = |r: &common::mock::Req| r.span();
    let whole = answered_at_once();
    let seen: Arc<Mutex<std::collections::BTreeSet<String>>> = Arc::default();
    let first = Arc::clone(&seen);
    let m = crate::review::mock_prometheus_with(
        crate::review::one_pod("chat-api-1", "assistants", "nvidia_com_gpu", None, 0.5),
        move |_, r| {
            if !r.target.contains("query_range") || span(r) <= 300.0 {
                return None;
            }
            let new = first
                .lock()
                .map(|mut s| s.insert(r.target.clone()))
                .unwrap_or(false);
            // The halves (ten steps: 540 s from the first evaluation to the last) are slow
            // the first time, past the review's `--timeout 2`. Every piece over five
            // minutes is refused for its size.
            if new && span(r) == 540.0 {
                return Some(slow_empty_answer());
            }
            Some(Resp::new(
                422,
                "application/json",
                "{\"status\":\"error\",\"errorType\":\"422\",\"error\":\"too many points for the given step=60000, start and end; the maximum number of points is 6 (see -search.maxPointsPerTimeseries)\"}",
            ))
        },
    );
    let out = crate::review::review_command(&m.url)
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let v: serde_json::Value = common::contract(&out.stdout).expect("json");
    for key in ["teams", "workloads", "pools"] {
        common::prometheus::assert_close(&v[key], &whole[key], key);
    }
    // Once a piece ran out of time and was then refused, no later request asks for as much:
    // one half was asked twice (slow, then refused), and no other.
    let halves = m.count(|r| r.target.contains("query_range") && span(r) == 540.0);
    assert_eq!(halves, 2, "ten-step pieces asked");
    drop(seen);
}

/// Issue 61: a server whose GPU counters look idle (1% active) but that runs requests all
/// along is serving, not stalled; a pod that serves nothing at that activity still is.
#[test]
fn a_pod_that_served_requests_is_never_stalled() {
    let dir = tempfile::tempdir().expect("tmp");
    let quiet: String = vllm_fleet(NOV7, 8)
        .lines()
        .map(|l| {
            if l.starts_with("DCGM_FI_PROF_GR_ENGINE_ACTIVE{") {
                let (head, rest) = l.rsplit_once("} ").expect("sample");
                let (_, t) = rest.split_once(' ').expect("value and time");
                format!("{head}}} 0.01 {t}\n")
            } else {
                format!("{l}\n")
            }
        })
        .collect();
    let om = dir.path().join("quiet.om");
    std::fs::write(&om, quiet).expect("om");
    let v = review(dir.path(), &["--metrics", om.to_str().expect("utf-8")]);
    let stalled: Vec<String> = v["recommendations"]
        .as_array()
        .expect("advice")
        .iter()
        .filter(|a| a["kind"] == "reap-stalled")
        .map(|a| a.to_string())
        .collect();
    assert!(!stalled.iter().any(|a| a.contains("chat-")), "{stalled:#?}");
    assert!(
        stalled.iter().any(|a| a.contains("summarize-")),
        "{stalled:#?}"
    );
}
