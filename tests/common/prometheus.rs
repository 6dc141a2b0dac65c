//! A real Prometheus on 127.0.0.1 (Debian's package) holding an OpenMetrics file, loaded
//! with promtool; and a comparison of two reviews' JSON within float rounding.

#![allow(dead_code)]

use std::path::Path;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

/// A server process the test started, killed when dropped (Prometheus, VictoriaMetrics).
pub struct Server(pub Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Load `openmetrics` into a fresh TSDB under `dir` and serve it.
pub fn start(dir: &Path, openmetrics: &Path) -> (Server, String) {
    let data = dir.join("data");
    let status = Command::new("promtool")
        .args(["tsdb", "create-blocks-from", "openmetrics"])
        .arg(openmetrics)
        .arg(&data)
        .output()
        .expect("promtool (Debian package prometheus; .ci/run installs it)");
    assert!(
        status.status.success(),
        "promtool: {}",
        String::from_utf8_lossy(&status.stderr)
    );
    let cfg = dir.join("prometheus.yml");
    std::fs::write(&cfg, "global:\n  scrape_interval: 1m\n").expect("write");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("port");
    let child = Command::new("prometheus")
        .arg(format!("--config.file={}", cfg.display()))
        .arg(format!("--storage.tsdb.path={}", data.display()))
        .arg("--storage.tsdb.retention.time=100y")
        .arg(format!("--web.listen-address=127.0.0.1:{port}"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("prometheus");
    let server = Server(child);
    let url = format!("http://127.0.0.1:{port}");
    let deadline = Instant::now() + Duration::from_secs(60);
    while ureq::get(&format!("{url}/-/ready")).call().is_err() {
        assert!(Instant::now() < deadline, "prometheus did not become ready");
        std::thread::sleep(Duration::from_millis(200));
    }
    (server, url)
}

/// Equal, numbers within 1e-6 relative (or 0.011 absolute: both sides round to cents).
pub fn assert_close(a: &serde_json::Value, b: &serde_json::Value, at: &str) {
    use serde_json::Value;
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            let (x, y) = (
                x.as_f64().unwrap_or(f64::NAN),
                y.as_f64().unwrap_or(f64::NAN),
            );
            assert!(
                (x - y).abs() <= 0.011_f64.max(1e-6 * x.abs().max(y.abs())),
                "{at}: {x} against {y}"
            );
        }
        (Value::Array(x), Value::Array(y)) => {
            assert_eq!(x.len(), y.len(), "{at}: {a:#} against {b:#}");
            for (i, (p, q)) in x.iter().zip(y).enumerate() {
                assert_close(p, q, &format!("{at}[{i}]"));
            }
        }
        (Value::Object(x), Value::Object(y)) => {
            assert_eq!(
                x.keys().collect::<Vec<_>>(),
                y.keys().collect::<Vec<_>>(),
                "{at}"
            );
            for (k, p) in x {
                assert_close(p, &y[k], &format!("{at}.{k}"));
            }
        }
        _ => assert_eq!(a, b, "{at}"),
    }
}
