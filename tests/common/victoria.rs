//! A real VictoriaMetrics on 127.0.0.1 (Debian's package `victoria-metrics`), started with
//! its default flags, holding an OpenMetrics file imported through its Prometheus-text
//! endpoint: the store large fleets move to from one Prometheus.

#![allow(dead_code)]

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use super::prometheus::Server;

/// The Prometheus text format of an OpenMetrics file: timestamps in milliseconds (what
/// `/api/v1/import/prometheus` reads), comments and `# EOF` dropped.
fn prometheus_text(openmetrics: &str) -> String {
    let mut out = String::with_capacity(openmetrics.len());
    for line in openmetrics.lines() {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (head, ts) = line.rsplit_once(' ').expect("a sample with a timestamp");
        let secs: f64 = ts.parse().expect("seconds");
        out.push_str(&format!("{head} {}\n", (secs * 1000.0).round() as i64));
    }
    out
}

/// Serve `openmetrics` from a fresh VictoriaMetrics under `dir` (only its data path, listen
/// address and retention set: every search flag at its default).
pub fn start(dir: &Path, openmetrics: &Path) -> (Server, String) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("port");
    let child = Command::new("victoria-metrics")
        .arg(format!(
            "-storageDataPath={}",
            dir.join("vm-data").display()
        ))
        .arg(format!("-httpListenAddr=127.0.0.1:{port}"))
        .arg("-retentionPeriod=100y")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("victoria-metrics (Debian package victoria-metrics; .ci/run installs it)");
    let server = Server(child);
    let url = format!("http://127.0.0.1:{port}");
    let deadline = Instant::now() + Duration::from_secs(60);
    while ureq::get(&format!("{url}/health")).call().is_err() {
        assert!(
            Instant::now() < deadline,
            "victoria-metrics did not become ready"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let text = prometheus_text(&std::fs::read_to_string(openmetrics).expect("openmetrics"));
    ureq::post(&format!("{url}/api/v1/import/prometheus"))
        .send_string(&text)
        .expect("import");
    ureq::get(&format!("{url}/internal/force_flush"))
        .call()
        .expect("flush");
    // Imported samples become searchable once flushed; wait until the last one is.
    let want = text.lines().count();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let got: serde_json::Value = ureq::get(&format!("{url}/api/v1/series/count"))
            .call()
            .ok()
            .and_then(|r| r.into_string().ok())
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or_default();
        if got["data"][0].as_u64().is_some_and(|n| n > 0) || want == 0 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "imported data never became searchable"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    std::thread::sleep(Duration::from_secs(1));
    (server, url)
}
