//! Files gpuplan writes and reads, as a user and an attacker meet them: modes that follow the
//! umask, devices, FIFOs and links refused, never writing outside `--out`, exact rollback, a
//! render that knows what it wrote before, and outputs that never land on an input.

#![cfg(unix)]

use crate::common;

use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};

fn gpuplan() -> assert_cmd::Command {
    common::gpuplan(Path::new("/nonexistent/gpuplan-test-cache"))
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p).expect("file").permissions().mode() & 0o7777
}

/// The binary under a given umask, through the shell (the umask is the process's own).
fn with_umask(umask: &str, args: &[&str]) -> std::process::Output {
    let bin = assert_cmd::cargo::cargo_bin("gpuplan");
    let mut line = format!("umask {umask}; exec '{}'", bin.display());
    for a in args {
        line.push_str(&format!(" '{a}'"));
    }
    std::process::Command::new("sh")
        .arg("-c")
        .arg(line)
        .current_dir(root())
        .env("GPUPLAN_TODAY", "2026-12-02")
        .env("GPUPLAN_CACHE", "/nonexistent/gpuplan-test-cache")
        .output()
        .expect("runs")
}

fn every_file(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).expect("dir").flatten() {
        let p = e.path();
        if p.is_dir() {
            every_file(&p, out);
        } else {
            out.push(p);
        }
    }
}

#[test]
fn written_files_take_the_umask_and_replaced_ones_keep_their_mode() {
    let dir = tempfile::tempdir().expect("tmp");
    let d = dir.path().display().to_string();
    for (umask, want) in [("022", 0o644), ("077", 0o600), ("002", 0o664)] {
        let out = format!("{d}/render-{umask}");
        let o = with_umask(umask, &["render", "plans/minimal.toml", "--out", &out]);
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        let mut files = Vec::new();
        every_file(Path::new(&out), &mut files);
        assert!(files.len() >= 5, "{files:?}");
        for f in &files {
            assert_eq!(mode(f), want, "{} under umask {umask}", f.display());
        }
        let baseline = format!("{d}/baseline-{umask}.json");
        let o = with_umask(
            umask,
            &["check", "--write-baseline", &baseline, "plans/minimal.toml"],
        );
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert_eq!(mode(Path::new(&baseline)), want);
        let review = format!("{d}/review-{umask}.html");
        let csv = format!("{d}/usage.csv");
        std::fs::write(
            &csv,
            "timestamp,namespace,pod,allocated_gpus,used_gpus\n1767225600,research,nb-1,1,0.5\n1767225660,research,nb-1,1,0.5\n",
        )
        .expect("csv");
        let o = with_umask(
            umask,
            &[
                "review",
                "plans/minimal.toml",
                "--csv",
                &csv,
                "--format",
                "html",
                "--out",
                &review,
            ],
        );
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert_eq!(mode(Path::new(&review)), want);
    }
    // A file that was there keeps the mode its owner gave it, and so does a plan rewritten
    // in place by `--write-plan`.
    let out = format!("{d}/render-022");
    let readme = Path::new(&out).join("README.md");
    std::fs::set_permissions(&readme, std::fs::Permissions::from_mode(0o640)).expect("chmod");
    std::fs::write(&readme, "edited by hand\n").expect("edit");
    let o = with_umask("077", &["render", "plans/minimal.toml", "--out", &out]);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(mode(&readme), 0o640);
    assert_ne!(
        std::fs::read_to_string(&readme).expect("readme"),
        "edited by hand\n"
    );
    let plan = format!("{d}/plan.toml");
    std::fs::copy(root().join("plans/minimal.toml"), &plan).expect("copy");
    std::fs::set_permissions(&plan, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let o = with_umask("077", &["recommend", &plan, "--write-plan", &plan]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(mode(Path::new(&plan)), 0o644);
}

#[test]
fn devices_fifos_sockets_and_links_are_never_replaced() {
    let dir = tempfile::tempdir().expect("tmp");
    let fifo = dir.path().join("fifo");
    assert!(std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo")
        .success());
    let sock_path = dir.path().join("sock");
    let _sock = std::os::unix::net::UnixListener::bind(&sock_path).expect("socket");
    let kept = dir.path().join("kept.json");
    std::fs::write(&kept, "mine").expect("file");
    let link = dir.path().join("link.json");
    std::os::unix::fs::symlink(&kept, &link).expect("link");
    let csv = dir.path().join("usage.csv");
    std::fs::write(
        &csv,
        "timestamp,namespace,pod,allocated_gpus,used_gpus\n1767225600,research,nb-1,1,0.5\n",
    )
    .expect("csv");
    let csv = csv.display().to_string();
    for target in [&fifo, &sock_path, &link, &PathBuf::from("/dev/stdout")] {
        let t = target.display().to_string();
        let runs: [Vec<&str>; 4] = [
            vec!["check", "--write-baseline", &t, "plans/minimal.toml"],
            vec!["review", "plans/minimal.toml", "--csv", &csv, "--out", &t],
            vec!["recommend", "plans/minimal.toml", "--write-plan", &t],
            vec!["init", "--force", &t],
        ];
        for args in runs {
            let o = gpuplan()
                .args(&args)
                .output()
                .expect("runs, and does not hang");
            assert_eq!(o.status.code(), Some(2), "{args:?}");
        }
    }
    assert!(std::fs::metadata(&fifo)
        .expect("fifo")
        .file_type()
        .is_fifo());
    assert!(std::fs::metadata(&sock_path)
        .expect("sock")
        .file_type()
        .is_socket());
    assert!(std::fs::symlink_metadata(&link)
        .expect("link")
        .file_type()
        .is_symlink());
    assert_eq!(std::fs::read_to_string(&kept).expect("kept"), "mine");
    // `-` is standard output itself.
    let o = gpuplan()
        .args(["check", "--write-baseline", "-", "plans/minimal.toml"])
        .output()
        .expect("runs");
    assert_eq!(o.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&o.stdout).contains("gpuplan.baseline"));
    let o = gpuplan().args(["init", "-"]).output().expect("runs");
    assert!(String::from_utf8_lossy(&o.stdout).contains("version = 1"));
}

#[test]
fn no_output_lands_on_one_of_the_commands_inputs() {
    let dir = tempfile::tempdir().expect("tmp");
    let plan = dir.path().join("plan.toml");
    std::fs::copy(root().join("plans/minimal.toml"), &plan).expect("copy");
    let before = std::fs::read(&plan).expect("plan");
    let o = gpuplan()
        .arg("check")
        .arg("--write-baseline")
        .arg(&plan)
        .arg(&plan)
        .output()
        .expect("runs");
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("one of this command's inputs"));
    assert_eq!(std::fs::read(&plan).expect("plan"), before);
}

#[test]
fn render_never_writes_outside_out_and_fails_whole() {
    let dir = tempfile::tempdir().expect("tmp");
    let out = dir.path().join("out");
    let elsewhere = dir.path().join("elsewhere");
    std::fs::create_dir_all(&out).expect("out");
    std::fs::create_dir_all(&elsewhere).expect("elsewhere");
    std::fs::write(elsewhere.join("main.tf"), "theirs").expect("tf");
    for sub in ["terraform", "helm", "kueue"] {
        let _ = std::fs::remove_file(out.join("terraform"));
        let _ = std::fs::remove_file(out.join("helm"));
        let _ = std::fs::remove_file(out.join("kueue"));
        std::os::unix::fs::symlink(&elsewhere, out.join(sub)).expect("link");
        // `--overwrite`: past the refusal of a directory gpuplan did not render into, the
        // links themselves are refused.
        let o = gpuplan()
            .args(["render", "plans/minimal.toml", "--overwrite", "--out"])
            .arg(&out)
            .output()
            .expect("runs");
        assert_eq!(o.status.code(), Some(2), "{sub}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("symbolic link"), "{err}");
        assert!(!err.contains(".gpuplan-"), "no temporary name: {err}");
        let names: Vec<_> = std::fs::read_dir(&elsewhere)
            .expect("dir")
            .map(|e| e.expect("e").file_name())
            .collect();
        assert_eq!(names, ["main.tf"], "{sub}");
        assert_eq!(
            std::fs::read_to_string(elsewhere.join("main.tf")).expect("tf"),
            "theirs"
        );
        // Nothing was written into `out` either: the set fails whole.
        assert!(!out.join("README.md").exists());
    }
    // A user's link at a target is neither followed nor replaced.
    let _ = std::fs::remove_file(out.join("kueue"));
    std::os::unix::fs::symlink(elsewhere.join("main.tf"), out.join("README.md")).expect("link");
    let o = gpuplan()
        .args(["render", "plans/minimal.toml", "--out"])
        .arg(&out)
        .output()
        .expect("runs");
    assert_eq!(o.status.code(), Some(2));
    assert!(std::fs::symlink_metadata(out.join("README.md"))
        .expect("l")
        .file_type()
        .is_symlink());
    assert_eq!(
        std::fs::read_to_string(elsewhere.join("main.tf")).expect("tf"),
        "theirs"
    );
}

#[test]
fn render_removes_what_an_earlier_render_wrote_and_check_sees_stale_files() {
    let dir = tempfile::tempdir().expect("tmp");
    let out = dir.path().join("out");
    let render = |extra: &[&str]| {
        gpuplan()
            .args(["render", "plans/aws-training.toml", "--out"])
            .arg(&out)
            .args(extra)
            .output()
            .expect("runs")
    };
    assert_eq!(render(&["--karpenter"]).status.code(), Some(0));
    assert!(out.join("karpenter/karpenter.yaml").is_file());
    // A file of the user's beside gpuplan's is never gpuplan's to remove.
    std::fs::write(out.join("helm/mine.yaml"), "mine").expect("mine");
    let o = render(&["--check"]);
    assert_eq!(o.status.code(), Some(1));
    let listed = String::from_utf8_lossy(&o.stdout);
    assert!(
        listed.contains("karpenter/karpenter.yaml (stale"),
        "{listed}"
    );
    assert!(!listed.contains("mine.yaml"), "{listed}");
    assert_eq!(render(&[]).status.code(), Some(0));
    assert!(
        !out.join("karpenter").exists(),
        "the stale file and its emptied directory go"
    );
    assert_eq!(
        std::fs::read_to_string(out.join("helm/mine.yaml")).expect("mine"),
        "mine"
    );
    assert_eq!(render(&["--check"]).status.code(), Some(0));
    // A manifest edited to name a file outside the render's own is not followed.
    let manifest = out.join(".gpuplan-render.toml");
    let text = std::fs::read_to_string(&manifest).expect("manifest");
    std::fs::write(out.join("keep.txt"), "keep").expect("keep");
    std::fs::write(
        &manifest,
        text.replace(
            "files = [",
            "files = [\n  \"keep.txt\",\n  \"../elsewhere.md\",\n  \".git/config.yaml\",",
        ),
    )
    .expect("tamper");
    assert_eq!(render(&[]).status.code(), Some(0));
    assert_eq!(
        std::fs::read_to_string(out.join("keep.txt")).expect("keep"),
        "keep"
    );
}

#[test]
fn render_check_never_waits_on_a_fifo_and_refuses_a_file_for_out() {
    let dir = tempfile::tempdir().expect("tmp");
    let out = dir.path().join("out");
    let o = gpuplan()
        .args(["render", "plans/minimal.toml", "--out"])
        .arg(&out)
        .output()
        .expect("runs");
    assert_eq!(o.status.code(), Some(0));
    std::fs::remove_file(out.join("README.md")).expect("rm");
    assert!(std::process::Command::new("mkfifo")
        .arg(out.join("README.md"))
        .status()
        .expect("mkfifo")
        .success());
    let o = gpuplan()
        .args(["render", "plans/minimal.toml", "--check", "--out"])
        .arg(&out)
        .output()
        .expect("runs, and does not hang");
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("not a regular file"));
    let file = dir.path().join("file");
    std::fs::write(&file, "x").expect("file");
    for extra in [&["--check"][..], &[][..]] {
        let o = gpuplan()
            .args(["render", "plans/minimal.toml", "--out"])
            .arg(&file)
            .args(extra)
            .output()
            .expect("runs");
        assert_eq!(o.status.code(), Some(2), "{extra:?}");
    }
}

#[test]
fn plans_are_read_from_a_pipe_and_standard_input() {
    let text = std::fs::read_to_string(root().join("plans/minimal.toml")).expect("plan");
    let o = gpuplan()
        .args(["check", "-"])
        .write_stdin(text.clone())
        .output()
        .expect("runs");
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // `gpuplan diff <(cat base) head`, as a shell hands it over: a pipe under /dev/fd.
    let bin = assert_cmd::cargo::cargo_bin("gpuplan");
    let o = std::process::Command::new("bash")
        .arg("-c")
        .arg(format!(
            "exec '{}' diff <(cat plans/minimal.toml) plans/minimal.toml",
            bin.display()
        ))
        .current_dir(root())
        .env("GPUPLAN_TODAY", "2026-12-02")
        .env("GPUPLAN_CACHE", "/nonexistent/gpuplan-test-cache")
        .output()
        .expect("runs");
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // The size limit holds for a pipe as for a file.
    let big = format!("{text}\n#{}\n", "x".repeat(9 << 20));
    let o = gpuplan()
        .args(["check", "-"])
        .write_stdin(big)
        .output()
        .expect("runs");
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("larger than 8 MiB"));
}

/// Another process holding `dir`'s lock for `secs` seconds (util-linux `flock`, as a second
/// gpuplan run would hold it), returned once it holds it.
fn hold_lock(dir: &Path, secs: u32) -> std::process::Child {
    let holder = std::process::Command::new("flock")
        .arg(dir)
        .args(["sleep", &secs.to_string()])
        .spawn()
        .expect("flock");
    // Until the holder has the lock, a non-blocking attempt succeeds.
    while std::process::Command::new("flock")
        .args(["-n"])
        .arg(dir)
        .arg("true")
        .status()
        .expect("flock -n")
        .success()
    {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    holder
}

#[test]
fn two_renders_into_one_directory_never_interleave() {
    // Another writer holds the directory's lock (as a second `gpuplan render` would): this
    // render waits for it and then writes its whole set.
    let dir = tempfile::tempdir().expect("tmp");
    let out = dir.path().join("out");
    std::fs::create_dir_all(&out).expect("out");
    let mut holder = hold_lock(&out, 3);
    let bin = assert_cmd::cargo::cargo_bin("gpuplan");
    let mut render = std::process::Command::new(bin)
        .current_dir(root())
        .env("GPUPLAN_TODAY", "2026-12-02")
        .env("GPUPLAN_CACHE", "/nonexistent/gpuplan-test-cache")
        .args(["--quiet", "render", "plans/minimal.toml", "--out"])
        .arg(&out)
        .spawn()
        .expect("render");
    std::thread::sleep(std::time::Duration::from_millis(800));
    assert!(
        !out.join("README.md").exists(),
        "the render waits for the lock"
    );
    holder.wait().expect("holder");
    assert!(render.wait().expect("render").success());
    assert!(out.join("README.md").is_file());
}

/// Every file under `dir` (hidden ones too) relative to it, with its bytes.
fn contents(dir: &Path) -> std::collections::BTreeMap<String, Vec<u8>> {
    let mut files = Vec::new();
    every_file(dir, &mut files);
    files
        .into_iter()
        .map(|p| {
            let rel = p
                .strip_prefix(dir)
                .expect("under")
                .to_string_lossy()
                .into_owned();
            let bytes = std::fs::read(&p).expect("read");
            (rel, bytes)
        })
        .collect()
}

/// The files the manifest names, and the manifest itself.
fn manifest_names(dir: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(dir.join(".gpuplan-render.toml")).expect("manifest");
    let v: toml::Table = toml::from_str(&text).expect("toml");
    let mut names: Vec<String> = v["files"]
        .as_array()
        .expect("files")
        .iter()
        .map(|f| f.as_str().expect("str").to_owned())
        .collect();
    names.push(".gpuplan-render.toml".into());
    names.sort();
    names
}

fn spawn_render(plan: &str, out: &Path) -> std::process::Child {
    std::process::Command::new(assert_cmd::cargo::cargo_bin("gpuplan"))
        .current_dir(root())
        .env("GPUPLAN_TODAY", "2026-12-02")
        .env("GPUPLAN_CACHE", "/nonexistent/gpuplan-test-cache")
        .args(["--quiet", "render", plan, "--out"])
        .arg(out)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("render")
}

const PLANS: [&str; 3] = [
    "plans/minimal.toml",
    "plans/azure-inference.toml",
    "plans/aws-training.toml",
];

/// Issue 43: two `render --out SAME` of different plans at once left a file the manifest
/// did not name in 34 of 100 runs. Each render now holds the directory from reading the
/// manifest to writing the new one.
#[test]
fn renders_of_different_plans_at_once_leave_exactly_what_the_manifest_names() {
    let dir = tempfile::tempdir().expect("tmp");
    for round in 0..12 {
        let out = dir.path().join(format!("out{round}"));
        let kids: Vec<_> = (0..3)
            .map(|i| spawn_render(PLANS[(round + i) % 3], &out))
            .collect();
        for k in kids {
            let o = k.wait_with_output().expect("render");
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        }
        let on_disk: Vec<String> = contents(&out).into_keys().collect();
        assert_eq!(on_disk, manifest_names(&out), "round {round}");
        // The set is one plan's, whole: `render --check` of that plan passes.
        let whole = PLANS.iter().any(|p| {
            gpuplan()
                .args(["--quiet", "render", p, "--check", "--out"])
                .arg(&out)
                .output()
                .expect("check")
                .status
                .success()
        });
        assert!(
            whole,
            "round {round}: no plan's render is whole in the directory"
        );
    }
}

/// Issue 43: a render killed while it renamed files into place left a mix of old and new
/// files and hidden temporary files no later run removed. Killed at random moments, the
/// next run finds the old set or the new set and nothing else.
#[test]
fn a_render_killed_at_any_moment_leaves_the_old_set_or_the_new_one() {
    let dir = tempfile::tempdir().expect("tmp");
    let (old_plan, new_plan) = ("plans/azure-inference.toml", "plans/aws-training.toml");
    let render_into = |plan: &str, out: &Path| {
        let o = spawn_render(plan, out).wait_with_output().expect("render");
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    };
    let (old_dir, new_dir) = (dir.path().join("old"), dir.path().join("new"));
    render_into(old_plan, &old_dir);
    let started = std::time::Instant::now();
    render_into(new_plan, &new_dir);
    let took = started.elapsed().as_micros() as u64;
    let (old, new) = (contents(&old_dir), contents(&new_dir));
    let (mut olds, mut news) = (0, 0);
    // A cheap, repeatable spread of moments over the whole run (and a little past it).
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    for run in 0..40 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let out = dir.path().join(format!("kill{run}"));
        copy_tree(&old_dir, &out);
        let mut k = spawn_render(new_plan, &out);
        std::thread::sleep(std::time::Duration::from_micros(x % (took + took / 4 + 1)));
        let _ = k.kill();
        let _ = k.wait();
        // The next run that touches the directory completes or undoes the set.
        let _ = gpuplan()
            .args(["--quiet", "render", old_plan, "--check", "--out"])
            .arg(&out)
            .output()
            .expect("check");
        let after = contents(&out);
        if after == old {
            olds += 1;
        } else if after == new {
            news += 1;
        } else {
            panic!(
                "run {run}: neither set: {:?}",
                after.keys().collect::<Vec<_>>()
            );
        }
    }
    eprintln!("killed renders: {olds} left the old set, {news} the new one");
}

/// Issue 58: a first render killed before it wrote anything left an empty directory. The
/// first set is staged beside the directory and renamed into place whole: killed at any
/// moment, the directory is absent or complete, and the next render leaves no staging behind.
#[test]
fn a_first_render_killed_at_any_moment_leaves_no_directory_or_the_whole_set() {
    let dir = tempfile::tempdir().expect("tmp");
    let plan = "plans/azure-inference.toml";
    let whole_dir = dir.path().join("whole");
    let started = std::time::Instant::now();
    let o = spawn_render(plan, &whole_dir)
        .wait_with_output()
        .expect("render");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let took = started.elapsed().as_micros() as u64;
    let whole = contents(&whole_dir);
    let (mut absent, mut complete) = (0, 0);
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    for run in 0..30 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let parent = dir.path().join(format!("p{run}"));
        std::fs::create_dir(&parent).expect("mkdir");
        let out = parent.join("new/out");
        let mut k = spawn_render(plan, &out);
        std::thread::sleep(std::time::Duration::from_micros(x % (took + took / 4 + 1)));
        let _ = k.kill();
        let _ = k.wait();
        match std::fs::symlink_metadata(parent.join("new")) {
            Err(_) => absent += 1,
            Ok(_) => {
                assert_eq!(contents(&out), whole, "run {run}: a partial first render");
                complete += 1;
            }
        }
        // Whatever the killed run left, the next render of the same directory is whole and
        // leaves nothing else beside it.
        let o = spawn_render(plan, &out).wait_with_output().expect("render");
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        assert_eq!(contents(&out), whole, "run {run}");
        let beside: Vec<String> = std::fs::read_dir(&parent)
            .expect("read")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(beside, ["new"], "run {run}: left beside the directory");
    }
    eprintln!("killed first renders: {absent} left no directory, {complete} the whole set");
}

fn copy_tree(from: &Path, to: &Path) {
    for (rel, bytes) in contents(from) {
        let p = to.join(rel);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(p, bytes).expect("write");
    }
}

#[test]
fn a_render_that_cannot_get_the_directory_says_why_and_changes_nothing() {
    let dir = tempfile::tempdir().expect("tmp");
    let out = dir.path().join("out");
    std::fs::create_dir_all(&out).expect("out");
    std::fs::write(out.join("keep.txt"), "k").expect("keep");
    let mut holder = hold_lock(&out, 4);
    let o = gpuplan()
        .env("GPUPLAN_LOCK_TIMEOUT", "1")
        .args(["render", "plans/minimal.toml", "--out"])
        .arg(&out)
        .output()
        .expect("render");
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("waiting for another gpuplan run"), "{err}");
    assert!(err.contains("GPUPLAN_LOCK_TIMEOUT"), "{err}");
    assert_eq!(contents(&out).into_keys().collect::<Vec<_>>(), ["keep.txt"]);
    let _ = holder.kill();
    let _ = holder.wait();
}
