//! The fourth hardening round: a token a server echoes is never printed in part, `render`
//! writes only where it owns the files, and arguments or variables that are not UTF-8 are
//! bytes, never a panic.

use crate::common;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::Path;

fn gpuplan() -> assert_cmd::Command {
    common::gpuplan(Path::new("/nonexistent/gpuplan-test-cache"))
}

/// A server on 127.0.0.1 that answers each of `n` requests with HTTP 400 and `body`.
fn echoing(body: String, n: usize) -> String {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = l.local_addr().expect("addr");
    std::thread::spawn(move || {
        for stream in l.incoming().take(n) {
            let Ok(mut s) = stream else { continue };
            let _ = s.set_read_timeout(Some(std::time::Duration::from_secs(5)));
            let mut buf = [0u8; 8192];
            let _ = s.read(&mut buf);
            let _ = write!(
                s,
                "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    format!("http://{addr}/")
}

#[test]
fn an_echoed_token_is_never_printed_in_part_whatever_its_offset() {
    let token = "gpuplanTESTtokenABCDEFGHIJKLMNOPQRSTUVWXYZ01";
    // Every offset from wholly inside the 200-character excerpt to wholly past it.
    for offset in (150..=205).step_by(5) {
        let body = format!("{}{token}{}", "x".repeat(offset), "y".repeat(40));
        let url = echoing(body, 8);
        let out = gpuplan()
            .args(["review", "plans/minimal.toml", "--prometheus", &url])
            .args(["--bearer-token", token, "--window", "1h", "--timeout", "5"])
            .output()
            .expect("runs");
        assert_eq!(out.status.code(), Some(2), "offset {offset}");
        let all = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        // No eight characters of the token in a row, anywhere.
        let chars: Vec<char> = token.chars().collect();
        for w in chars.windows(8) {
            let piece: String = w.iter().collect();
            assert!(!all.contains(&piece), "offset {offset}: `{piece}` in {all}");
        }
    }
}

#[test]
fn render_writes_only_into_a_directory_it_owns() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("deploy");
    std::fs::create_dir_all(out.join("terraform")).expect("dirs");
    std::fs::write(out.join("README.md"), "hand-written\n").expect("readme");
    std::fs::write(out.join("terraform/main.tf"), "# mine\n").expect("tf");
    let render = |extra: &[&str]| {
        gpuplan()
            .args(["render", "plans/minimal.toml", "--out"])
            .arg(&out)
            .args(extra)
            .output()
            .expect("runs")
    };
    let r = render(&[]);
    assert_eq!(r.status.code(), Some(2));
    let err = String::from_utf8_lossy(&r.stderr);
    assert!(
        err.contains("did not render") && err.contains("--overwrite"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(out.join("README.md")).unwrap(),
        "hand-written\n"
    );
    assert_eq!(
        std::fs::read_to_string(out.join("terraform/main.tf")).unwrap(),
        "# mine\n"
    );
    // A render's own directory renders again; a file someone added at a target is theirs.
    let own = dir.path().join("own");
    let r = gpuplan()
        .args(["render", "plans/minimal.toml", "--out"])
        .arg(&own)
        .output()
        .expect("runs");
    assert_eq!(
        r.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&r.stderr)
    );
    let again = gpuplan()
        .args(["render", "plans/minimal.toml", "--out"])
        .arg(&own)
        .output()
        .expect("runs");
    assert_eq!(again.status.code(), Some(0));
    // An empty directory is anyone's to render into.
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).expect("dir");
    gpuplan()
        .args(["render", "plans/minimal.toml", "--out"])
        .arg(&empty)
        .assert()
        .code(0);
    // `--overwrite` takes a foreign directory over.
    let r = render(&["--overwrite"]);
    assert_eq!(
        r.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&r.stderr)
    );
    assert_ne!(
        std::fs::read_to_string(out.join("terraform/main.tf")).unwrap(),
        "# mine\n"
    );
}

#[cfg(unix)]
#[test]
fn arguments_and_variables_that_are_not_utf8_never_panic() {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;
    let bad = OsStr::from_bytes(b"caf\xe9");
    // A variable gpuplan never reads, one it reads, and an argument.
    let runs: [(&str, Option<&OsStr>); 3] = [
        ("UNRELATED_VARIABLE", None),
        ("GPUPLAN_CACHE", None),
        ("ARG", Some(bad)),
    ];
    for (var, arg) in runs {
        let mut c = gpuplan();
        c.args(["check", "plans/minimal.toml"]);
        match arg {
            Some(a) => {
                c.arg(a);
            }
            None => {
                c.env(var, bad);
            }
        }
        let out = c.output().expect("runs");
        let code = out.status.code();
        assert!(
            matches!(code, Some(0..=2)),
            "{var}: exit {code:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(!String::from_utf8_lossy(&out.stderr).contains("panicked"));
    }
}
