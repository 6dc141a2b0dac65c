//! How gpuplan is installed in CI: the release workflow, the composite action, the Dockerfile
//! and the CI examples parse, say what they must, and the action's script really installs a
//! release (from a local server speaking the release-download paths), checksum verified.

#![cfg(unix)]

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn yaml(rel: &str) -> serde_yaml::Value {
    let text = std::fs::read_to_string(root().join(rel)).expect(rel);
    serde_yaml::from_str(&text).unwrap_or_else(|e| panic!("{rel} is not YAML: {e}"))
}

#[test]
fn the_release_builds_static_binaries_with_checksums_and_an_image() {
    let w = yaml(".github/workflows/release.yml");
    assert!(w["on"]["push"]["tags"].as_sequence().is_some(), "{w:?}");
    let targets: Vec<&str> = w["jobs"]["binaries"]["strategy"]["matrix"]["target"]
        .as_sequence()
        .expect("a target matrix")
        .iter()
        .filter_map(|t| t.as_str())
        .collect();
    assert_eq!(
        targets,
        ["x86_64-unknown-linux-musl", "aarch64-unknown-linux-musl"]
    );
    let steps = format!("{:?}", w["jobs"]["binaries"]["steps"]);
    assert!(
        steps.contains("--locked") && steps.contains("sha256sum"),
        "{steps}"
    );
    assert!(format!("{:?}", w["jobs"]["image"]).contains("docker/build-push-action"));
}

#[test]
fn the_action_is_composite_and_the_examples_install_without_compiling() {
    let a = yaml("action.yml");
    assert_eq!(a["runs"]["using"].as_str(), Some("composite"));
    assert!(a["inputs"]["version"]["default"].as_str().is_some());
    for rel in ["examples/github-actions.yml", "examples/gitlab-ci.yml"] {
        let v = yaml(rel);
        let text = std::fs::read_to_string(root().join(rel)).expect(rel);
        assert!(
            !text.contains("cargo install"),
            "{rel} compiles gpuplan on every run"
        );
        assert!(v.as_mapping().is_some_and(|m| !m.is_empty()), "{rel}");
    }
    let gh = std::fs::read_to_string(root().join("examples/github-actions.yml")).expect("gh");
    assert!(
        gh.contains("uses: your-org/gpuplan@v1"),
        "the example uses the action"
    );
    // One comment per pull or merge request, kept by `gpuplan comment` (tests/all/comment.rs).
    let gl = std::fs::read_to_string(root().join("examples/gitlab-ci.yml")).expect("gl");
    assert!(
        gl.contains("gpuplan comment gitlab --body comment.md"),
        "{gl}"
    );
    assert!(
        gh.contains("gpuplan comment github --body comment.md"),
        "{gh}"
    );
}

/// Every `uses:` value, wherever it sits in a workflow or action (steps, jobs, composite runs).
fn uses_of(v: &serde_yaml::Value, out: &mut Vec<String>) {
    match v {
        serde_yaml::Value::Mapping(m) => {
            for (k, x) in m {
                if k.as_str() == Some("uses") {
                    out.push(x.as_str().map_or_else(|| format!("{x:?}"), str::to_owned));
                } else {
                    uses_of(x, out);
                }
            }
        }
        serde_yaml::Value::Sequence(s) => s.iter().for_each(|x| uses_of(x, out)),
        _ => {}
    }
}

/// Issue 44: GitHub evaluates no expression in `uses:` (a `${{ }}` there makes the workflow
/// invalid before any step runs; "Workflow syntax for GitHub Actions", `jobs.<job_id>.steps[*].uses`),
/// so every one is a literal `owner/repo[/path]@ref`, `./path` or `docker://image`. The
/// schemas (`check-jsonschema --builtin-schema vendor.github-workflows`) run in `.ci/run`;
/// a schema cannot see this.
#[test]
fn every_uses_is_a_literal_reference() {
    let literal = |u: &str| {
        if u.contains("${{") || u.contains(char::is_whitespace) {
            return false;
        }
        if let Some(path) = u.strip_prefix("./") {
            return !path.is_empty();
        }
        if let Some(image) = u.strip_prefix("docker://") {
            return !image.is_empty();
        }
        let Some((repo, reference)) = u.split_once('@') else {
            return false;
        };
        let parts: Vec<&str> = repo.split('/').collect();
        parts.len() >= 2 && parts.iter().all(|p| !p.is_empty()) && !reference.is_empty()
    };
    let mut files = vec!["action.yml".to_owned()];
    for dir in ["examples", ".github/workflows"] {
        let mut names: Vec<String> = std::fs::read_dir(root().join(dir))
            .expect(dir)
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".yml") && !n.starts_with("gitlab"))
            .map(|n| format!("{dir}/{n}"))
            .collect();
        names.sort();
        files.extend(names);
    }
    let mut seen = 0;
    for rel in &files {
        let mut uses = Vec::new();
        uses_of(&yaml(rel), &mut uses);
        for u in uses {
            assert!(literal(&u), "{rel}: `uses: {u}` is not a literal reference");
            seen += 1;
        }
    }
    assert!(seen >= 4, "{files:?}: {seen} uses");
    // And the check itself tells the broken spelling apart.
    assert!(!literal("${{ vars.GPUPLAN_REPO }}@v1") && literal("actions/checkout@v4"));
}

#[test]
fn the_dockerfile_ships_the_binary_its_build_stage_makes() {
    let text = std::fs::read_to_string(root().join("Dockerfile")).expect("Dockerfile");
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .collect();
    let froms: Vec<&str> = lines
        .iter()
        .filter(|l| l.starts_with("FROM "))
        .copied()
        .collect();
    assert_eq!(froms.len(), 2, "a build stage and a final one: {froms:?}");
    assert!(froms[0].ends_with(" AS build"), "{froms:?}");
    assert!(
        froms[1].contains("distroless") || froms[1].contains("scratch"),
        "{froms:?}"
    );
    // The build stage makes /gpuplan with the locked lockfile; the final stage copies that
    // path and runs where it put it.
    assert!(lines
        .iter()
        .any(|l| l.starts_with("RUN cargo build --release --locked")));
    assert!(lines
        .iter()
        .any(|l| l.contains("cp target/release/gpuplan /gpuplan")));
    let copy = lines
        .iter()
        .find(|l| l.starts_with("COPY --from=build "))
        .expect("a COPY from the build stage");
    let parts: Vec<&str> = copy.split_whitespace().collect();
    assert_eq!(parts[2], "/gpuplan");
    let entry = lines
        .iter()
        .find(|l| l.starts_with("ENTRYPOINT"))
        .expect("an entrypoint");
    assert!(entry.contains(parts[3]), "{entry} runs {}", parts[3]);
}

/// The toolchain the crate and its image build with is one the locked dependencies accept:
/// every locked package whose manifest is on this machine (those this platform builds: the
/// registry sources cargo unpacked) states a `rust-version` at most the crate's own, and the
/// Dockerfile's build image is that version.
#[test]
fn the_pinned_toolchain_builds_the_locked_dependencies() {
    let parse = |s: &str| -> Vec<u32> { s.split('.').map(|p| p.parse().unwrap_or(0)).collect() };
    let field = |text: &str, key: &str| {
        text.lines().find_map(|l| {
            l.trim()
                .strip_prefix(key)?
                .trim()
                .strip_prefix('=')?
                .trim()
                .strip_prefix('"')?
                .split('"')
                .next()
                .map(str::to_owned)
        })
    };
    let ours = field(
        &std::fs::read_to_string(root().join("Cargo.toml")).expect("Cargo.toml"),
        "rust-version",
    )
    .expect("gpuplan states a rust-version");
    let lock = std::fs::read_to_string(root().join("Cargo.lock")).expect("Cargo.lock");
    let home = std::env::var("CARGO_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|_| {
            PathBuf::from(std::env::var("HOME").unwrap_or_default()).join(".cargo")
        });
    let registries: Vec<PathBuf> = std::fs::read_dir(home.join("registry/src"))
        .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    let mut checked = 0;
    let mut needed: Option<(String, String)> = None;
    for block in lock.split("[[package]]").skip(1) {
        let (Some(name), Some(version)) = (field(block, "name"), field(block, "version")) else {
            continue;
        };
        let Some(text) = registries.iter().find_map(|r| {
            std::fs::read_to_string(r.join(format!("{name}-{version}/Cargo.toml"))).ok()
        }) else {
            continue;
        };
        checked += 1;
        if let Some(rv) = field(&text, "rust-version") {
            if needed.as_ref().is_none_or(|(_, n)| parse(&rv) > parse(n)) {
                needed = Some((name, rv));
            }
        }
    }
    assert!(
        checked > 100,
        "only {checked} locked packages found unpacked"
    );
    let (who, rv) = needed.expect("some dependency states a rust-version");
    assert!(
        parse(&rv) <= parse(&ours),
        "`{who}` needs Rust {rv}; Cargo.toml says {ours}"
    );
    let docker = std::fs::read_to_string(root().join("Dockerfile")).expect("Dockerfile");
    assert!(
        docker.contains(&format!("FROM rust:{ours}-")),
        "the Dockerfile builds with Rust {ours}"
    );
}

/// A server on 127.0.0.1 that answers `GET {path}` with the bytes of `files[path]`, 404
/// otherwise; `requests` many.
fn server(files: Vec<(String, Vec<u8>)>, requests: usize) -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    std::thread::spawn(move || {
        for _ in 0..requests {
            let Ok((mut c, _)) = listener.accept() else {
                break;
            };
            let mut buf = [0u8; 4096];
            let n = c.read(&mut buf).unwrap_or(0);
            let req = String::from_utf8_lossy(&buf[..n]).into_owned();
            let path = req.split_whitespace().nth(1).unwrap_or("").to_owned();
            match files.iter().find(|(p, _)| *p == path) {
                Some((_, body)) => {
                    let _ = write!(
                        c,
                        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                        body.len()
                    );
                    let _ = c.write_all(body);
                }
                None => {
                    let _ = c.write_all(
                        b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                    );
                }
            }
        }
    });
    url
}

/// The action's install step as a shell script.
fn action_script() -> String {
    let a = yaml("action.yml");
    let steps = a["runs"]["steps"].as_sequence().expect("steps");
    let install = steps
        .iter()
        .find(|s| s["id"].as_str() == Some("install"))
        .expect("the install step");
    install["run"].as_str().expect("a run script").to_owned()
}

fn run_action(server: &str, version: &str, tmp: &Path) -> std::process::Output {
    run_action_from(server, version, tmp, "acme/gpuplan", "")
}

/// The install step with the `repository` input `repo` (empty: the default) and the
/// runner's `GITHUB_ACTION_PATH`.
fn run_action_from(
    server: &str,
    version: &str,
    tmp: &Path,
    repo: &str,
    action_path: &str,
) -> std::process::Output {
    std::fs::create_dir_all(tmp.join("runner")).expect("runner");
    std::process::Command::new("bash")
        .arg("-c")
        .arg(action_script())
        .env("VERSION", version)
        .env("REPO", repo)
        .env("GITHUB_ACTION_PATH", action_path)
        .env("SERVER", server)
        .env("RUNNER_TEMP", tmp.join("runner"))
        .env("GITHUB_PATH", tmp.join("path.txt"))
        .env("GITHUB_OUTPUT", tmp.join("output.txt"))
        .output()
        .expect("bash")
}

#[test]
fn the_action_installs_a_release_and_refuses_a_bad_checksum() {
    let arch = std::process::Command::new("uname")
        .arg("-m")
        .output()
        .expect("uname");
    let target = format!(
        "{}-unknown-linux-musl",
        String::from_utf8_lossy(&arch.stdout).trim()
    );
    let dir = tempfile::tempdir().expect("tmp");
    // A release archive as the workflow packs it, of the binary under test.
    let name = format!("gpuplan-{target}");
    let pack = dir.path().join("pack");
    std::fs::create_dir_all(pack.join(&name)).expect("pack");
    std::fs::copy(
        assert_cmd::cargo::cargo_bin("gpuplan"),
        pack.join(&name).join("gpuplan"),
    )
    .expect("binary");
    let tar = std::process::Command::new("tar")
        .current_dir(&pack)
        .args(["czf", &format!("{name}.tar.gz"), &name])
        .status()
        .expect("tar");
    assert!(tar.success());
    let archive = std::fs::read(pack.join(format!("{name}.tar.gz"))).expect("archive");
    let sum = std::process::Command::new("sha256sum")
        .current_dir(&pack)
        .arg(format!("{name}.tar.gz"))
        .output()
        .expect("sha256sum");
    let files = |sum: Vec<u8>| {
        vec![
            (
                format!("/acme/gpuplan/releases/download/v9.9.9/{name}.tar.gz"),
                archive.clone(),
            ),
            (
                format!("/acme/gpuplan/releases/download/v9.9.9/{name}.tar.gz.sha256"),
                sum,
            ),
        ]
    };
    let url = server(files(sum.stdout.clone()), 2);
    let out = run_action(&url, "v9.9.9", dir.path());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let path = std::fs::read_to_string(dir.path().join("path.txt")).expect("GITHUB_PATH");
    let installed = Path::new(path.trim()).join("gpuplan");
    let v = std::process::Command::new(&installed)
        .arg("--version")
        .output()
        .expect("runs");
    assert!(String::from_utf8_lossy(&v.stdout).starts_with("gpuplan "));
    let output = std::fs::read_to_string(dir.path().join("output.txt")).expect("output");
    assert!(output.starts_with("version=gpuplan "), "{output}");
    // Issue 75 item 13: with no `repository` input, the release comes from the repository
    // the runner downloaded the action from (`_actions/OWNER/NAME/REF`), not from
    // `github.action_repository`, which a composite action is not promised.
    let a = yaml("action.yml");
    assert_eq!(a["inputs"]["repository"]["default"].as_str(), Some(""));
    let url = server(files(sum.stdout.clone()), 2);
    let from_path = dir.path().join("from-path");
    let out = run_action_from(
        &url,
        "v9.9.9",
        &from_path,
        "",
        "/home/runner/work/_actions/acme/gpuplan/v1",
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // A local action (`uses: ./`) cannot tell: it says what to set.
    let out = run_action_from(
        &url,
        "v9.9.9",
        &dir.path().join("local"),
        "",
        "/home/runner/work/r/r",
    );
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("set 'repository: OWNER/NAME'"));
    // A checksum that does not match the archive: nothing installed.
    let bad = dir.path().join("bad");
    let mut wrong = sum.stdout.clone();
    wrong[0] = if wrong[0] == b'0' { b'1' } else { b'0' };
    let url = server(files(wrong), 2);
    let out = run_action(&url, "v9.9.9", &bad);
    assert!(!out.status.success());
    assert!(!bad.join("path.txt").exists());
}

/// Issues 58 and 75: the example's verdict step, run by bash as the workflow runs it (the
/// step's own script, `${{ }}` expressions filled as GitHub fills them), in a repository made
/// for it with this gpuplan on PATH. The pull request that first adds the plan, on a main
/// branch with no plan and no baseline, is green, its comment says why (both notes); an edit
/// that doubles the replicas is red, and its comment's headline names the 10% limit.
#[test]
fn the_github_verdict_is_green_on_the_first_pull_request_and_names_the_limit_on_a_rise() {
    let gh = yaml("examples/github-actions.yml");
    let steps = gh["jobs"]["gpuplan"]["steps"].as_sequence().expect("steps");
    let step = steps
        .iter()
        .find(|s| s["id"].as_str() == Some("verdict"))
        .expect("a verdict step");
    let script = step["run"]
        .as_str()
        .expect("run")
        .replace("${{ github.server_url }}", "https://github.com")
        .replace("${{ github.repository }}", "o/r")
        .replace("${{ github.event.pull_request.head.sha }}", "abc");
    assert!(!script.contains("${{"), "{script}");
    let repo = tempfile::tempdir().expect("tempdir");
    let git = |args: &[&str]| {
        let o = std::process::Command::new("git")
            .current_dir(repo.path())
            .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
            .args(args)
            .output()
            .expect("git runs");
        assert!(
            o.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    };
    git(&["init", "-q", "-b", "main"]);
    std::fs::write(repo.path().join("README.md"), "x\n").expect("readme");
    git(&["add", "."]);
    git(&["commit", "-q", "-m", "base"]);
    git(&["checkout", "-q", "-b", "pr"]);
    std::fs::create_dir(repo.path().join("plans")).expect("plans");
    let plan = std::fs::read_to_string(root().join("plans/minimal.toml")).expect("plan");
    std::fs::write(repo.path().join("plans/platform.toml"), &plan).expect("plan");
    git(&["add", "."]);
    git(&["commit", "-q", "-m", "add the plan"]);
    let bin = assert_cmd::cargo::cargo_bin("gpuplan");
    let path = format!(
        "{}:{}",
        bin.parent().expect("bin dir").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let outputs = repo.path().join("github-output");
    let run = |base: &str| {
        let _ = std::fs::remove_file(&outputs);
        let o = std::process::Command::new("bash")
            .current_dir(repo.path())
            .args(["-e", "-c", &script])
            .env("PATH", &path)
            .env("PLAN", "plans/platform.toml")
            .env("BASE", base)
            .env("GITHUB_OUTPUT", &outputs)
            .env("GPUPLAN_CACHE", "/nonexistent/gpuplan-test-cache")
            .env("GPUPLAN_TODAY", "2026-12-02")
            .output()
            .expect("bash runs");
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let code = std::fs::read_to_string(&outputs).expect("the step's output");
        let comment = std::fs::read_to_string(repo.path().join("comment.md")).expect("comment");
        (code.trim().to_owned(), comment)
    };
    // The first pull request: main has neither the plan nor a baseline.
    let (code, comment) = run("main");
    assert_eq!(code, "code=0", "{comment}");
    let headline = comment.lines().next().unwrap_or("");
    assert!(headline.contains(":white_check_mark:"), "{comment}");
    assert!(comment.contains("no baseline at"), "{comment}");
    assert!(comment.contains("the plan is new"), "{comment}");
    assert_eq!(
        comment.matches("**Recommended monthly cost:**").count(),
        1,
        "one cost line per figure: {comment}"
    );
    // An edit pull request that doubles the replicas: past the 10% limit.
    git(&["checkout", "-q", "main"]);
    git(&["merge", "-q", "--ff-only", "pr"]);
    git(&["checkout", "-q", "-b", "grow"]);
    let grown = if plan.contains("replicas = 2") {
        plan.replace("replicas = 2", "replicas = 3")
    } else {
        plan.replace("gpus = 1", "gpus = 1\nreplicas = 2")
    };
    assert_ne!(grown, plan, "the edit changes the plan");
    std::fs::write(repo.path().join("plans/platform.toml"), &grown).expect("plan");
    git(&["commit", "-q", "-am", "grow"]);
    let (code, comment) = run("main");
    assert_eq!(code, "code=1", "{comment}");
    let headline = comment.lines().next().unwrap_or("");
    assert!(headline.contains(":x:"), "{comment}");
    assert!(headline.contains("--fail-on-increase 10%"), "{comment}");
    assert!(!comment.contains("the plan is new"), "{comment}");
}
