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

/// A cache holding an Azure reservation price, as a refresh writes it, at `dir`.
fn cache_with_reservation(dir: &Path) {
    let embedded = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("providers/azure/prices-retail.csv"),
    )
    .expect("prices");
    common::refresh_cache(
        dir,
        "azure/prices-retail.csv",
        "azure",
        "Azure Retail Prices API (test)",
        &format!("{embedded}Standard_NC24ads_A100_v4,eastus,reservation-1y,19272,1 Hour,2026-12-01,Azure Retail Prices API (Reservation 1 Year)\n"),
    );
}

/// Issue 58 item 8: with cached reservation prices the rendered README and purchase list
/// named the cache by its absolute path, so the same cache elsewhere (a CI runner) showed
/// drift. They name it as the cache's file, wherever the cache sits.
#[test]
fn rendered_files_do_not_depend_on_where_the_cache_is() {
    let dir = tempfile::tempdir().expect("tmp");
    let (a, b) = (
        dir.path().join("here/cache"),
        dir.path().join("elsewhere/c"),
    );
    cache_with_reservation(&a);
    cache_with_reservation(&b);
    let out = dir.path().join("out");
    common::gpuplan(&a)
        .args(["render", "plans/azure-inference.toml", "--out"])
        .arg(&out)
        .assert()
        .code(0);
    let purchases = std::fs::read_to_string(out.join("purchases.json")).expect("purchases");
    let readme = std::fs::read_to_string(out.join("README.md")).expect("readme");
    assert!(
        purchases.contains("cache: azure/prices-retail.csv"),
        "the reservation is priced from the cache: {purchases}"
    );
    for text in [&purchases, &readme] {
        assert!(!text.contains(&dir.path().display().to_string()), "{text}");
    }
    let check = common::gpuplan(&b)
        .args(["render", "plans/azure-inference.toml", "--check", "--out"])
        .arg(&out)
        .output()
        .expect("runs");
    assert_eq!(
        check.status.code(),
        Some(0),
        "{}{}",
        String::from_utf8_lossy(&check.stdout),
        String::from_utf8_lossy(&check.stderr)
    );
}

/// Issue 58 lows: settings that cannot be used are errors naming what was expected, never
/// silently their defaults; a `--cache` that is a file is refused; a relative
/// `XDG_CACHE_HOME` is ignored (the XDG Base Directory Specification).
#[test]
fn unusable_settings_are_refused_never_defaulted() {
    for (k, v) in [
        ("GPUPLAN_LOCK_TIMEOUT", "soon"),
        ("GPUPLAN_LOCK_TIMEOUT", "-1"),
        ("GPUPLAN_REVIEW_MAX_SERIES", "lots"),
        ("GPUPLAN_REVIEW_MAX_SERIES", "0"),
    ] {
        let out = gpuplan()
            .env(k, v)
            .args(["check", "plans/minimal.toml"])
            .output()
            .expect("runs");
        assert_eq!(out.status.code(), Some(2), "{k}={v}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains(&format!("{k}=`{v}`: expected")),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let dir = tempfile::tempdir().expect("tmp");
    let file = dir.path().join("cache-file");
    std::fs::write(&file, "not a cache").expect("file");
    let out = gpuplan()
        .arg("--cache")
        .arg(&file)
        .args(["check", "plans/minimal.toml"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("expected a directory"));
    // A relative XDG_CACHE_HOME names no cache: a damaged cache where it points (which would
    // end the run, exit 2) is never read.
    let planted = dir.path().join("relative-cache/gpuplan");
    std::fs::create_dir_all(&planted).expect("dir");
    std::fs::write(
        planted.join("CACHEDIR.TAG"),
        "Signature: 8a477f597d28d172789f06886806bc55\n# gpuplan\n",
    )
    .expect("tag");
    std::fs::write(planted.join("sources.toml"), "not = [toml").expect("list");
    let out = assert_cmd::Command::cargo_bin("gpuplan")
        .expect("binary")
        .current_dir(dir.path())
        .env_remove("GPUPLAN_CACHE")
        .env("XDG_CACHE_HOME", "relative-cache")
        .env("HOME", dir.path().join("home"))
        .args(["check"])
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("plans/minimal.toml"))
        .output()
        .expect("runs");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Issue 58 item 7: a FIFO whose writer had not opened it yet read as empty (a comment body
/// became "nothing to report", and the writer then blocked forever). Its writer is waited for
/// (as long as a lock is), and a writer that never comes is an error naming the pipe.
#[test]
fn a_pipe_is_read_once_its_writer_comes_and_a_writer_that_never_comes_is_named() {
    let dir = tempfile::tempdir().expect("tmp");
    let fifo = dir.path().join("plan.fifo");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo");
    assert!(made.success());
    let plan =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("plans/minimal.toml"))
            .expect("plan");
    let writer = {
        let fifo = fifo.clone();
        std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(700));
            std::fs::write(&fifo, plan).expect("write the pipe");
        })
    };
    let out = gpuplan()
        .args(["check", "--format", "json"])
        .arg(&fifo)
        .output()
        .expect("runs");
    writer.join().expect("writer");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("\"findings\""));
    let out = gpuplan()
        .env("GPUPLAN_LOCK_TIMEOUT", "1")
        .args(["check"])
        .arg(&fifo)
        .output()
        .expect("runs");
    assert_ne!(out.status.code(), Some(0));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("its writer never opened it"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Issue 58 lows: a read-only command stopped at a directory said "cannot write". It says
/// what it was doing: reading (`render --check`, a command reading the refresh cache), here
/// stopped by a journal gpuplan did not write.
#[test]
fn read_only_commands_say_they_could_not_read() {
    let dir = tempfile::tempdir().expect("tmp");
    let out = dir.path().join("out");
    gpuplan()
        .args(["render", "plans/minimal.toml", "--out"])
        .arg(&out)
        .assert()
        .code(0);
    std::fs::write(out.join(".gpuplan-journal.toml"), "not a journal").expect("plant");
    let run = gpuplan()
        .args(["render", "plans/minimal.toml", "--check", "--out"])
        .arg(&out)
        .output()
        .expect("runs");
    let err = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(2), "{err}");
    assert!(
        err.contains("cannot read") && !err.contains("cannot write"),
        "{err}"
    );
    let cache = dir.path().join("cache");
    std::fs::create_dir_all(&cache).expect("cache");
    std::fs::write(cache.join(".gpuplan-journal.toml"), "not a journal").expect("plant");
    let run = common::gpuplan(&cache)
        .args(["check", "plans/minimal.toml"])
        .output()
        .expect("runs");
    let err = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(2), "{err}");
    assert!(
        err.contains("cannot read") && !err.contains("cannot write"),
        "{err}"
    );
}
