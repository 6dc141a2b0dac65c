//! Hostile and careless invocations end in a clean refusal (exit 2 or 1, a clear message)
//! or correct output, never a lie about success: overflowing windows, garbage and empty
//! environment variables, a closed standard output, declared pools that fail `check`, a
//! missing template directory, credentials in an endpoint URL.

use crate::common;

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

/// Output nobody got is no success: a full disk is exit 2. A reader that closed the pipe
/// (`| head`) chose to stop reading, which is not a failure of the run (issue 58: the exit
/// code depended on whether the output fitted the pipe's buffer): the run's own code stands.
#[test]
fn a_full_disk_is_not_success_and_a_closed_pipe_is_the_readers_choice() {
    use std::process::{Command, Stdio};
    // Outputs smaller and larger (3 MB) than a pipe's buffer.
    for args in [
        &[
            "recommend",
            "--format",
            "json",
            "plans/azure-inference.toml",
        ][..],
        &["catalog", "--format", "json"][..],
        &["check", "plans/minimal.toml"][..],
    ] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_gpuplan"))
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .env("GPUPLAN_TODAY", "2026-12-02")
            .env("GPUPLAN_CACHE", "/nonexistent/gpuplan-test-cache")
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn");
        // Read nothing: the pipe closes at once.
        drop(child.stdout.take());
        let out = child.wait_with_output().expect("waits");
        assert_eq!(
            out.status.code(),
            Some(0),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(!String::from_utf8_lossy(&out.stderr).contains("cannot write to standard output"));
    }
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
        assert!(String::from_utf8_lossy(&out.stderr).contains("cannot write to standard output"));
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
            // A plan may come through a pipe; a FIFO nobody writes to reads as empty at once
            // (the open never waits for a writer), so the command ends, refusing it.
            let out = gpuplan()
                .arg("check")
                .arg(&fifo)
                .output()
                .expect("runs, and does not hang");
            assert_eq!(out.status.code(), Some(2));
            // Where a data file is read, a FIFO is refused outright.
            let out = gpuplan()
                .args(["check", "--baseline"])
                .arg(&fifo)
                .arg("plans/minimal.toml")
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

/// Any control character but a line end or a tab, with where it sits.
fn raw_control(text: &str) -> Option<String> {
    let mut lines = text.split('\n');
    lines.find_map(|l| {
        let l = l.strip_suffix('\r').unwrap_or(l);
        l.chars()
            .any(|c| c.is_control() && c != '\t')
            .then(|| format!("{l:?}"))
    })
}

/// A plan whose free text (owner, a decision's reason and signer, an allow's reason and
/// approver), names and keys carry escape sequences, carriage returns and a C1 control, in
/// TOML escapes, and a plan that does not parse has them raw: whatever `check`, `recommend`, `diff` and `render` say
/// about it, in every format, holds none of them raw.
#[test]
fn control_characters_in_a_plan_never_reach_any_output_raw() {
    let evil = r"\u001b]8;;http://x\u0007\u001b[2J\r\u009bforged";
    let valid = format!(
        "version = 1\n[plan]\nname = \"evil\"\nowner = \"me{evil}\"\nprovider = \"azure\"\nregions = [\"eastus\"]\n\n\
         [[workload]]\nname = \"nb\"\nteam = \"t\"\nkind = \"notebook\"\ngpu_fraction = 0.25\nreplicas = 4\n\
         sharing = \"mps\"\nfault_domain = \"nb-shared\"\n\n\
         [[decision]]\nfault_domain = \"nb-shared\"\ndecided_by = \"lead{evil}\"\nreason = \"ok{evil}\"\ndate = 2026-11-01\n\n\
         [[allow]]\nrule = \"GP006\"\nworkload = \"nb\"\nreason = \"why{evil}\"\napproved_by = \"boss{evil}\"\n"
    );
    let invalid = format!(
        "version = 1\n[plan]\nname = \"e{evil}\"\nowner = \"o\"\n\
         provider = \"azure\"\nregions = [\"east{evil}\"]\n\n[[workload]]\nname = \"w{evil}\"\nteam = \"t{evil}\"\n\
         kind = \"inference\"\ngpus = 1\n\"key{evil}\" = 1\n"
    );
    let dir = tempfile::tempdir().expect("tmp");
    let good = dir.path().join("good.toml");
    let bad = dir.path().join("bad.toml");
    let unparsable = dir.path().join("unparsable.toml");
    std::fs::write(&good, &valid).expect("plan");
    std::fs::write(&bad, &invalid).expect("plan");
    std::fs::write(
        &unparsable,
        "version = 1\n# a raw escape \u{1b}[2J in a comment\nname = \"a\u{1b}[2J\"\n",
    )
    .expect("plan");
    let mut runs: Vec<Vec<String>> = Vec::new();
    let p = |x: &Path| x.display().to_string();
    for plan in [&good, &bad, &unparsable] {
        for format in ["human", "json", "sarif", "github", "markdown"] {
            runs.push(vec![
                "check".into(),
                p(plan),
                "--format".into(),
                format.into(),
            ]);
        }
        for format in ["human", "json", "markdown"] {
            runs.push(vec![
                "recommend".into(),
                p(plan),
                "--format".into(),
                format.into(),
            ]);
        }
        runs.push(vec!["diff".into(), p(&good), p(plan)]);
        runs.push(vec![
            "render".into(),
            p(plan),
            "--out".into(),
            p(&dir.path().join("out")),
        ]);
    }
    for args in &runs {
        let out = gpuplan().args(args).output().expect("runs");
        assert!(out.status.code().is_some(), "{args:?} exits");
        for (what, bytes) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
            let text = String::from_utf8_lossy(bytes);
            if let Some(line) = raw_control(&text) {
                panic!("{args:?}: a raw control character on {what}: {line}");
            }
        }
    }
    // The good plan renders; what it wrote is as clean as what it printed.
    let rendered = common::tree(&dir.path().join("out"));
    assert!(!rendered.is_empty(), "the valid plan renders");
    for (name, text) in rendered {
        if let Some(line) = raw_control(&text) {
            panic!("{name}: a raw control character: {line}");
        }
    }
}

/// A copy of the embedded catalog in `dir`, with `edit` applied to one of its files.
fn catalog_with(dir: &Path, file: &str, edit: impl Fn(&str) -> String) -> std::path::PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("providers");
    let cat = dir.join("catalog");
    for entry in ["", "azure", "aws"] {
        std::fs::create_dir_all(cat.join(entry)).expect("dir");
    }
    for sub in ["", "azure", "aws"] {
        for e in std::fs::read_dir(root.join(sub))
            .expect("providers")
            .flatten()
        {
            if e.path().is_file() {
                std::fs::copy(e.path(), cat.join(sub).join(e.file_name())).expect("copy");
            }
        }
    }
    let p = cat.join(file);
    let text = std::fs::read_to_string(&p).expect("file");
    std::fs::write(&p, edit(&text)).expect("edit");
    cat
}

#[test]
fn names_from_catalog_data_never_become_code() {
    let dir = tempfile::tempdir().expect("tmp");
    let payloads = [
        "T4\nresource \"null_resource\" \"pwned\" {}",
        "T4\"",
        "T4\r\n---",
        "T4 <<EOF",
        "T4|evil|row",
        "T4`x",
    ];
    for (i, payload) in payloads.iter().enumerate() {
        let d = dir.path().join(format!("c{i}"));
        let escaped = payload
            .replace('\\', "\\\\")
            .replace('"', "\\\"")
            .replace('\n', "\\n")
            .replace('\r', "\\r");
        let cat = catalog_with(&d, "gpus.toml", |t| {
            t.replacen("name = \"T4\"", &format!("name = \"{escaped}\""), 1)
        });
        let out = gpuplan()
            .arg("--catalog")
            .arg(&cat)
            .args(["render", "plans/minimal.toml", "--out"])
            .arg(d.join("out"))
            .output()
            .expect("runs");
        assert_eq!(out.status.code(), Some(2), "{payload:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("is not a catalog name"), "{payload:?}: {err}");
        assert!(err.contains("gpus.toml:"), "located: {err}");
        assert!(!d.join("out").exists(), "{payload:?}: nothing rendered");
    }
    // A SKU name that would add a row to the README's table.
    let d = dir.path().join("sku");
    let cat = catalog_with(&d, "azure/skus.toml", |t| {
        t.replacen(
            "name = \"Standard_NC4as_T4_v3\"",
            "name = \"Standard_NC4as_T4_v3 | x | y\"",
            1,
        )
    });
    let out = gpuplan()
        .arg("--catalog")
        .arg(&cat)
        .args(["recommend", "plans/minimal.toml"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("is not a catalog name"));
}

#[test]
fn a_hostile_plan_file_name_stays_text_in_every_pr_format() {
    let dir = tempfile::tempdir().expect("tmp");
    let name = "x](javascript:alert(1)) \u{1b}[31m`|.toml";
    let plan = dir.path().join(name);
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("plans/mixed-estate.toml"),
        &plan,
    )
    .expect("plan");
    for format in ["github", "markdown"] {
        let out = gpuplan()
            .args(["check", "--format", format])
            .arg(&plan)
            .output()
            .expect("runs");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(!text.is_empty(), "{format}");
        assert!(!text.contains('\u{1b}'), "{format}: raw escape in {text}");
        if format == "markdown" {
            // Outside code (where Markdown reads no link), no link to the payload forms, and
            // no unescaped `|` can end a table cell.
            let outside = common::md_outside_code(&text);
            assert!(!outside.contains("](javascript"), "{text}");
            assert!(
                text.lines()
                    .all(|l| l.replace("\\`", "").matches('`').count() % 2 == 0),
                "{text}"
            );
        }
    }
}

#[test]
fn a_custom_template_cannot_render_without_bound() {
    let dir = tempfile::tempdir().expect("tmp");
    let mut plan = String::from(
        "version = 1\n[plan]\nname = \"many\"\nowner = \"o\"\nprovider = \"azure\"\nregions = [\"eastus\"]\n",
    );
    for i in 0..1500 {
        plan.push_str(&format!(
            "[[workload]]\nname=\"w{i}\"\nteam=\"t\"\nkind=\"inference\"\ngpus=1\n"
        ));
    }
    let p = dir.path().join("many.toml");
    std::fs::write(&p, plan).expect("plan");
    let t = dir.path().join("templates/workloads");
    std::fs::create_dir_all(&t).expect("dir");
    // Every workload inside every workload: 2.25M names, far past what the file should be.
    std::fs::write(
        t.join("values.yaml.hbs"),
        "{{#each workloads}}{{#each ../workloads}}{{workload}} {{namespace}} {{gpu_resource}} {{/each}}{{/each}}\n",
    )
    .expect("template");
    let out = gpuplan()
        .arg("render")
        .arg(&p)
        .arg("--templates")
        .arg(dir.path().join("templates"))
        .arg("--out")
        .arg(dir.path().join("out"))
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("the limit for this rendered file"), "{err}");
    assert!(!dir.path().join("out").exists(), "nothing written");
}

#[test]
fn a_base_from_git_is_held_to_the_plan_size_limit_and_tiny_rates_are_refused() {
    let dir = tempfile::tempdir().expect("tmp");
    let git = |args: &[&str]| {
        let s = std::process::Command::new("git")
            .args(args)
            .current_dir(dir.path())
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@x")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@x")
            .status()
            .expect("git");
        assert!(s.success(), "{args:?}");
    };
    git(&["init", "-q"]);
    let plan = dir.path().join("plan.toml");
    let minimal =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("plans/minimal.toml"))
            .expect("plan");
    std::fs::write(&plan, format!("{minimal}\n#{}\n", "x".repeat(9 << 20))).expect("big");
    git(&["add", "plan.toml"]);
    git(&["commit", "-qm", "big"]);
    std::fs::write(&plan, &minimal).expect("small");
    let out = gpuplan()
        .args(["diff", "--base-ref", "HEAD"])
        .arg(&plan)
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("larger than 8 MiB"));
    // A throughput that would price a million tokens at infinity is refused at its line.
    let tiny = dir.path().join("tiny.toml");
    std::fs::write(
        &tiny,
        "version = 1\n[plan]\nname = \"t\"\nowner = \"o\"\nprovider = \"azure\"\nregions = [\"eastus\"]\n[[workload]]\nname = \"w\"\nteam = \"t\"\nkind = \"inference\"\ntokens_per_second = 1e-300\n",
    )
    .expect("plan");
    let out = gpuplan()
        .arg("recommend")
        .arg(&tiny)
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("tokens_per_second"));
}

/// Issue 43: `diff --base-ref ''` read git's staged copy (`git show :./plan.toml`), so the
/// cost guardrail compared the plan with itself and passed. An empty, blank, option-like or
/// path-bearing ref, or one with a control character, is refused with exit 2 and shown
/// escaped; git is never asked.
#[test]
fn a_base_ref_that_is_no_revision_is_refused() {
    for r in [
        "",
        " ",
        "-p",
        "--output=/tmp/x",
        "HEAD:other.toml",
        "main\n::set-env name=X::1",
    ] {
        let out = gpuplan()
            .args(["diff", "--fail-on-increase", "10%"])
            .arg(format!("--base-ref={r}"))
            .arg("plans/minimal.toml")
            .output()
            .expect("runs");
        assert_eq!(out.status.code(), Some(2), "{r:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("is not a git revision"), "{r:?}: {err}");
        assert!(
            !err.lines().any(|l| l.starts_with("::")),
            "{r:?}: a workflow command reached stderr: {err}"
        );
    }
}

/// Issue 43: refusing a 7 MiB plan name printed 41 MB (the message quoted it whole and the
/// snippet printed its line). Messages quote a bounded excerpt and a line too long to show
/// is located by file:line:column, in every format.
#[test]
fn a_huge_name_is_refused_in_a_few_lines() {
    let dir = tempfile::tempdir().expect("tmp");
    let minimal =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("plans/minimal.toml"))
            .expect("plan");
    let name_line = minimal
        .lines()
        .find(|l| l.starts_with("name = "))
        .expect("a name line")
        .to_owned();
    let huge = minimal.replacen(
        &name_line,
        &format!("name = \"{}\"", "a".repeat(7 << 20)),
        1,
    );
    let plan = dir.path().join("huge.toml");
    std::fs::write(&plan, huge).expect("plan");
    // Rule documentation is most of a SARIF file (every rule's help): 200 KB at most.
    for (format, bound) in [
        ("human", 4_000),
        ("json", 8_000),
        ("github", 4_000),
        ("markdown", 8_000),
        ("sarif", 200_000),
    ] {
        let out = gpuplan()
            .args(["check", "--format", format])
            .arg(&plan)
            .output()
            .expect("runs");
        assert_eq!(out.status.code(), Some(2), "{format}");
        let all = out.stdout.len() + out.stderr.len();
        assert!(all < bound, "{format}: {all} bytes");
        let text = String::from_utf8_lossy(&out.stdout).to_string()
            + &String::from_utf8_lossy(&out.stderr);
        assert!(text.contains("7340032 characters"), "{format}: {text}");
    }
    let out = gpuplan().arg("check").arg(&plan).output().expect("runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("huge.toml:5:8"), "{err}");
}

/// Whether any line of `text` is one a CI runner would obey or a terminal would be steered
/// by: GitHub's `::command` (after blanks) or `##[command]`, a raw control character other
/// than a tab or colour, an invisible bidi or zero-width character.
fn obeyed_line(text: &str) -> Option<String> {
    text.split('\n').find_map(|l| {
        let bad = l.trim_start().starts_with("::")
            || l.contains("##[")
            || l.chars().any(|c| {
                (c.is_control() && c != '\t' && c != '\u{1b}')
                    || matches!(c, '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{feff}')
            });
        bad.then(|| format!("{l:?}"))
    })
}

/// Issue 43: text from a price API was printed raw by `catalog --sku` (a line starting
/// `::set-env`, NUL, a right-to-left override), and a Prometheus error body kept its
/// newline, so a line starting `::` reached stderr. Data now reaches neither raw, in any
/// format, while JSON still reads back the very characters.
#[test]
fn text_from_data_never_reaches_a_ci_log_as_a_command_or_raw() {
    let dir = tempfile::tempdir().expect("tmp");
    let hostile = "x\n::set-env name=PATH::/tmp/evil\n##[add-mask]y\u{0}\u{202e}exe.txt\u{200b}";
    let cat = catalog_with(dir.path(), "azure/prices-retail.csv", |t| {
        t.replacen(
            "\"Azure Retail Prices API capture (productName 'Virtual Machines NDsr H100 v5 Series', meterName 'ND96isrH100v5')\"",
            &format!("\"{hostile}\""),
            1,
        )
    });
    for format in ["human", "json"] {
        let out = gpuplan()
            .arg("--catalog")
            .arg(&cat)
            .args([
                "catalog",
                "--sku",
                "Standard_ND96isr_H100_v5",
                "--region",
                "eastus",
                "--format",
                format,
                "--verbose",
            ])
            .output()
            .expect("runs");
        let (stdout, stderr) = (
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        );
        assert!(out.status.success(), "{format}: {stderr}");
        assert!(
            stdout.contains("set-env"),
            "{format}: the source is shown: {stdout}"
        );
        for (name, text) in [("stdout", &stdout), ("stderr", &stderr)] {
            if let Some(l) = obeyed_line(text) {
                panic!("{format} {name}: {l}");
            }
        }
        if format == "json" {
            let v: serde_json::Value = crate::common::contract(stdout.as_bytes()).expect("json");
            assert!(
                v.to_string().contains("\\u0000") || stdout.contains("\\u0000"),
                "{stdout}"
            );
        }
    }
    // A Prometheus error body with a workflow command on its own line.
    let server = common::mock::Mock::start(|_, _| {
        common::mock::Resp::new(
            400,
            "application/json",
            "{\"status\":\"error\",\"errorType\":\"bad_data\",\"error\":\"bad\\n::set-env name=A::b\\n##[error]x\\u202e\"}",
        )
    });
    let out = gpuplan()
        .args([
            "review",
            "plans/azure-inference.toml",
            "--window",
            "1h",
            "--prometheus",
        ])
        .arg(&server.url)
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("set-env"), "the body is quoted: {stderr}");
    if let Some(l) = obeyed_line(&stderr) {
        panic!("review stderr: {l}");
    }
    // A ref naming a workflow command on its next line, and a zero-width character in a name.
    let out = gpuplan()
        .args([
            "diff",
            "--base-ref",
            "main\n::set-env name=A::b",
            "plans/minimal.toml",
        ])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    if let Some(l) = obeyed_line(&String::from_utf8_lossy(&out.stderr)) {
        panic!("diff stderr: {l}");
    }
    let plan = dir.path().join("zw.toml");
    let text =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("plans/minimal.toml"))
            .expect("plan");
    let first = text.find("name = \"").expect("a name") + "name = \"".len();
    std::fs::write(
        &plan,
        format!("{}\u{200b}{}", &text[..first], &text[first..]),
    )
    .expect("write");
    let out = gpuplan().arg("check").arg(&plan).output().expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("\\u{200b}") || stderr.contains("\\u200b"),
        "shown escaped: {stderr}"
    );
    if let Some(l) = obeyed_line(&stderr) {
        panic!("check stderr: {l}");
    }
}

/// Issue 43, the smaller cases: a SARIF URI held a raw newline and `<`/`>`; an `@mention`
/// in an allow reason pinged in the Markdown PR comment; a baseline with a BOM was refused
/// while plans with one load; `--write-plan` turned CRLF into LF and dropped the BOM.
#[test]
fn smaller_cases_uris_mentions_boms_and_line_endings() {
    let dir = tempfile::tempdir().expect("tmp");
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("plans/mixed-estate.toml"),
    )
    .expect("plan")
    .replace(
        "reason = \"labeling spikes",
        "reason = \"ask @platform-team or @octocat: labeling spikes",
    )
    .replace("expires = 2026-10-31 ", "expires = 2027-10-31 ");
    let plan = dir.path().join("a\n<b> #1.toml");
    std::fs::write(&plan, &text).expect("plan");
    let out = gpuplan()
        .args(["check", "--format", "sarif"])
        .arg(&plan)
        .output()
        .expect("runs");
    let sarif: serde_json::Value = crate::common::contract(&out.stdout).expect("sarif");
    let uri = sarif["runs"][0]["results"][0]["locations"][0]["physicalLocation"]
        ["artifactLocation"]["uri"]
        .as_str()
        .expect("uri")
        .to_owned();
    assert!(!uri.contains(['\n', '<', '>', ' ', '#']), "{uri}");
    let base = url::Url::parse("file:///src/").expect("base");
    let joined = base.join(&uri).expect("a relative reference");
    assert!(
        joined.path().ends_with("a%0A%3Cb%3E%20%231.toml"),
        "{joined}"
    );
    let out = gpuplan()
        .args(["check", "--format", "markdown"])
        .arg(&plan)
        .output()
        .expect("runs");
    let md = String::from_utf8_lossy(&out.stdout);
    assert!(md.contains("platform-team"), "the reason is shown: {md}");
    for who in ["@platform-team", "@octocat"] {
        assert!(!md.contains(who), "{who} would be pinged: {md}");
    }
    // A baseline written, then saved by an editor with a BOM, is still a baseline.
    let base_file = dir.path().join("baseline.json");
    gpuplan()
        .args(["check", "plans/mixed-estate.toml", "--write-baseline"])
        .arg(&base_file)
        .assert()
        .code(0);
    let written = std::fs::read_to_string(&base_file).expect("baseline");
    let doc = crate::common::contract(&written).expect("baseline json");
    assert!(doc["findings"].as_array().is_some_and(|f| !f.is_empty()));
    let with_bom = format!("\u{feff}{written}");
    std::fs::write(&base_file, with_bom).expect("bom");
    let out = gpuplan()
        .args(["check", "plans/mixed-estate.toml", "--baseline"])
        .arg(&base_file)
        .output()
        .expect("runs");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // `--write-plan` keeps a Windows plan's BOM and CRLF line endings.
    let win = dir.path().join("win.toml");
    let minimal =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("plans/minimal.toml"))
            .expect("plan");
    std::fs::write(&win, format!("\u{feff}{}", minimal.replace('\n', "\r\n"))).expect("win");
    gpuplan()
        .arg("recommend")
        .arg(&win)
        .arg("--write-plan")
        .arg(&win)
        .assert()
        .code(0);
    let after = std::fs::read_to_string(&win).expect("after");
    assert!(after.starts_with('\u{feff}'), "BOM kept");
    assert!(after.contains("[[pool]]"), "{after}");
    assert_eq!(
        after.matches('\n').count(),
        after.matches("\r\n").count(),
        "every line CRLF"
    );
    gpuplan().arg("check").arg(&win).assert().code(0);
}
