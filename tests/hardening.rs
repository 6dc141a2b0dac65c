//! Hostile and careless invocations end in a clean refusal (exit 2 or 1, a clear message)
//! or correct output, never a lie about success: overflowing windows, garbage and empty
//! environment variables, a closed standard output, declared pools that fail `check`, a
//! missing template directory, credentials in an endpoint URL.

mod common;

use std::path::Path;

fn gpuplan() -> assert_cmd::Command {
    common::gpuplan(Path::new("/nonexistent/gpuplan-test-cache"))
}

/// `gpuplan review` against a port nothing listens on, with `flag value`.
fn review_with(flag: &str, value: &str) -> std::process::Output {
    gpuplan()
        .args([
            "review",
            "plans/minimal.toml",
            "--prometheus",
            "http://127.0.0.1:9/",
        ])
        .args([flag, value])
        .output()
        .expect("runs")
}

#[test]
fn windows_and_times_out_of_range_are_refused() {
    for w in ["9223372036854775807s", "99999999999999d", "3661d"] {
        let out = review_with("--window", w);
        assert_eq!(out.status.code(), Some(2), "--window {w}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("at most 3660d"), "{err}");
    }
    let out = review_with("--from", "-99999999999999");
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn garbage_in_gpuplan_today_is_an_error_and_empty_variables_are_unset() {
    let out = gpuplan()
        .env("GPUPLAN_TODAY", "garbage")
        .args(["check", "plans/minimal.toml"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("GPUPLAN_TODAY"));
    for var in ["GPUPLAN_CACHE", "GPUPLAN_CATALOG", "GPUPLAN_TODAY"] {
        gpuplan()
            .env(var, "")
            .env("HOME", "/nonexistent")
            .args(["check", "plans/minimal.toml"])
            .assert()
            .code(0);
    }
}

#[test]
fn a_closed_standard_output_is_not_success() {
    use std::process::{Command, Stdio};
    let mut child = Command::new(env!("CARGO_BIN_EXE_gpuplan"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("GPUPLAN_TODAY", "2026-12-02")
        .env("GPUPLAN_CACHE", "/nonexistent/gpuplan-test-cache")
        .args([
            "recommend",
            "--format",
            "json",
            "plans/azure-inference.toml",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    drop(child.stdout.take());
    let out = child.wait_with_output().expect("waits");
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot write to standard output"));
    if Path::new("/dev/full").exists() {
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .expect("/dev/full");
        let out = Command::new(env!("CARGO_BIN_EXE_gpuplan"))
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .env("GPUPLAN_TODAY", "2026-12-02")
            .env("GPUPLAN_CACHE", "/nonexistent/gpuplan-test-cache")
            .args(["check", "--format", "json", "plans/minimal.toml"])
            .stdout(full)
            .output()
            .expect("runs");
        assert_eq!(out.status.code(), Some(2));
    }
}

#[test]
fn render_declared_refuses_a_plan_check_fails_unless_forced() {
    let dir = tempfile::tempdir().expect("tmp");
    let out_dir = dir.path().join("out");
    let out = gpuplan()
        .args(["render", "--declared", "plans/mixed-estate.toml", "--out"])
        .arg(&out_dir)
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("fails `gpuplan check`"));
    assert!(!out_dir.exists(), "nothing rendered");
    gpuplan()
        .args([
            "render",
            "--declared",
            "--force",
            "plans/mixed-estate.toml",
            "--out",
        ])
        .arg(&out_dir)
        .assert()
        .code(0);
    assert!(out_dir.join("terraform/main.tf").is_file());
}

#[test]
fn a_missing_template_directory_is_an_error() {
    let dir = tempfile::tempdir().expect("tmp");
    let out = gpuplan()
        .args([
            "render",
            "plans/minimal.toml",
            "--templates",
            "/nonexistent/templates",
            "--out",
        ])
        .arg(dir.path().join("out"))
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no such directory"));
}

#[test]
fn credentials_in_a_prometheus_url_are_never_printed() {
    let out = gpuplan()
        .args([
            "review",
            "plans/minimal.toml",
            "--prometheus",
            "http://admin:hunter2@127.0.0.1:9/",
            "--window",
            "1h",
            "--timeout",
            "2",
        ])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!all.contains("hunter2"), "{all}");
    assert!(!all.contains("admin:"), "{all}");
}

#[test]
fn custom_templates_cannot_exhaust_the_stack() {
    let dir = tempfile::tempdir().expect("tmp");
    let t = dir.path().join("templates");
    std::fs::create_dir_all(t.join("serving")).expect("dir");
    let cases = [
        (
            "{{#*inline \"p\"}}{{> p}}{{/inline}}{{> p}}".to_owned(),
            "partials are not supported",
        ),
        (
            "{{#if plan}}".repeat(20_000) + &"{{/if}}".repeat(20_000),
            "nested more than 64 deep",
        ),
    ];
    for (text, expect) in cases {
        std::fs::write(t.join("serving/values.yaml.hbs"), &text).expect("template");
        let out = gpuplan()
            .args(["render", "plans/minimal.toml", "--templates"])
            .arg(&t)
            .arg("--out")
            .arg(dir.path().join("out"))
            .output()
            .expect("runs");
        assert_eq!(
            out.status.code(),
            Some(2),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(String::from_utf8_lossy(&out.stderr).contains(expect));
    }
}

#[test]
fn a_pipe_or_a_device_is_refused_where_a_file_is_needed() {
    let out = gpuplan()
        .args(["check", "--baseline", "/dev/zero", "plans/minimal.toml"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a regular file"));
    let out = gpuplan()
        .args(["review", "plans/minimal.toml", "--metrics", "/dev/zero"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    #[cfg(unix)]
    {
        let dir = tempfile::tempdir().expect("tmp");
        let fifo = dir.path().join("plan.toml");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        if made.is_ok_and(|s| s.success()) {
            let out = gpuplan()
                .arg("check")
                .arg(&fifo)
                .output()
                .expect("runs, and does not hang");
            assert_eq!(out.status.code(), Some(2));
            assert!(String::from_utf8_lossy(&out.stderr).contains("not a regular file"));
        }
    }
}

#[test]
fn control_characters_in_a_path_never_reach_the_terminal_raw() {
    let dir = tempfile::tempdir().expect("tmp");
    let name = "evil\u{1b}[2J\nplan.toml";
    let plan = dir.path().join(name);
    std::fs::write(&plan, "version = 1\n[plan]\nname = \"Bad Name\"\n").expect("plan");
    let out = gpuplan().arg("check").arg(&plan).output().expect("runs");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains('\u{1b}'), "{err:?}");
    assert!(err.contains("evil\\u{1b}[2J\\nplan.toml"), "{err}");
}
