#[allow(dead_code)]
pub mod gen;
#[allow(dead_code)]
pub mod k8s;
pub mod mock;
pub mod prometheus;
pub mod victoria;

/// The binary run from the project root on a fixed date, without colour, on the embedded
/// catalog with `cache` as its refresh cache.
#[allow(dead_code)]
pub fn gpuplan(cache: &std::path::Path) -> assert_cmd::Command {
    let mut c = assert_cmd::Command::cargo_bin("gpuplan").expect("binary");
    c.current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("GPUPLAN_TODAY", "2026-12-02")
        .env("NO_COLOR", "1")
        .env_remove("GPUPLAN_CATALOG")
        .env("GPUPLAN_CACHE", cache);
    c
}

/// Every file under `dir` with its text, sorted: what a failed refresh must leave unchanged.
#[allow(dead_code)]
pub fn tree(dir: &std::path::Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                out.extend(tree(&p));
            } else {
                out.push((
                    p.display().to_string(),
                    std::fs::read_to_string(&p).unwrap_or_default(),
                ));
            }
        }
    }
    out.sort();
    out
}

/// A refresh (`run(cache, server)`) that succeeds against `good`, then fails against `bad`:
/// its error names `expect`, says the cache is unchanged, shows none of `secrets`, and every
/// cached file is as it was.
#[allow(dead_code)]
pub fn fails_and_keeps(
    run: impl Fn(&std::path::Path, &mock::Mock) -> assert_cmd::assert::Assert,
    good: mock::Mock,
    bad: mock::Mock,
    expect: &str,
    secrets: &[&str],
) {
    let dir = tempfile::tempdir().expect("tmp");
    let cache = dir.path().join("cache");
    run(&cache, &good).code(0);
    let before = tree(&cache);
    let out = run(&cache, &bad).code(2).get_output().clone();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(expect), "expected `{expect}` in: {err}");
    assert!(err.contains("the cache is unchanged"), "{err}");
    // No temporary name: the staged copy and the files being swapped in are gpuplan's
    // business, the cache is the user's.
    assert!(
        !err.contains("gpuplan-stage") && !err.contains(".gpuplan-"),
        "{err}"
    );
    for s in secrets {
        assert!(!err.contains(s), "{err}");
    }
    assert_eq!(tree(&cache), before);
}

/// A JSON document gpuplan printed, parsed; one whose `schema` names a published output
/// (`gpuplan schema --output NAME`) is held to that schema, so every test that reads a JSON
/// output also checks the contract a consumer validates against.
#[allow(dead_code)]
pub fn contract(bytes: impl AsRef<[u8]>) -> Result<serde_json::Value, serde_json::Error> {
    use gpuplan::report::schemas::{schema, Output};
    use std::collections::BTreeMap;
    use std::sync::{Mutex, OnceLock};
    static SCHEMAS: OnceLock<Mutex<BTreeMap<&'static str, serde_json::Value>>> = OnceLock::new();
    let v: serde_json::Value = serde_json::from_slice(bytes.as_ref())?;
    let Some(output) = v["schema"].as_str().and_then(Output::of_id) else {
        return Ok(v);
    };
    let s = SCHEMAS
        .get_or_init(Default::default)
        .lock()
        .expect("schemas")
        .entry(output.id())
        .or_insert_with(|| schema(output))
        .clone();
    let validator = jsonschema::validator_for(&s).expect("a valid schema");
    let errors: Vec<String> = validator
        .iter_errors(&v)
        .take(10)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "{} output breaks its schema:\n{}",
        output.id(),
        errors.join("\n")
    );
    Ok(v)
}

/// A run asserted to have succeeded (its standard error shown when it did not).
#[allow(dead_code)]
pub fn ok(out: std::process::Output) -> std::process::Output {
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// A successful run's JSON output, held to its schema ([`contract`]).
#[allow(dead_code)]
pub fn ok_json(out: std::process::Output) -> serde_json::Value {
    contract(ok(out).stdout).expect("json")
}

/// `plan_text` rendered (with `extra` flags) into a fresh directory, asserted to succeed: the
/// temporary directory (dropped, it goes) and the output directory in it.
#[allow(dead_code)]
pub fn rendered(plan_text: &str, extra: &[&str]) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let plan = dir.path().join("plan.toml");
    std::fs::write(&plan, plan_text).expect("plan");
    let out = dir.path().join("out");
    let run = gpuplan(std::path::Path::new("/nonexistent/gpuplan-test-cache"))
        .arg("render")
        .arg(&plan)
        .args(extra)
        .arg("--out")
        .arg(&out)
        .output()
        .expect("runs");
    assert_eq!(
        run.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    (dir, out)
}

/// A refresh cache at `dir` as `catalog refresh` leaves it: gpuplan's tag, and one data file
/// at `path` (`azure/prices-retail.csv`) holding `text`, dated in its `sources.toml`.
#[allow(dead_code)]
pub fn refresh_cache(dir: &std::path::Path, path: &str, provider: &str, source: &str, text: &str) {
    let file = dir.join(path);
    std::fs::create_dir_all(file.parent().expect("a file in a directory")).expect("cache dir");
    std::fs::write(
        dir.join("CACHEDIR.TAG"),
        "Signature: 8a477f597d28d172789f06886806bc55\n# This file is a cache directory tag created by gpuplan.\n",
    )
    .expect("tag");
    std::fs::write(
        dir.join("sources.toml"),
        format!("[[file]]\npath = \"{path}\"\nkind = \"prices\"\nprovider = \"{provider}\"\nas_of = \"2026-12-01\"\nsource = \"{source}\"\nlicence = \"test\"\n"),
    )
    .expect("sources");
    std::fs::write(file, text).expect("prices");
}

/// Markdown `text` with its code removed, what is left being what Markdown reads as text:
/// each `<code>` element (`md_code`'s form for a value a backquoted span cannot hold) checked
/// to hold no unescaped `[`, `]`, backquote or `|`, then the backquoted spans.
pub fn md_outside_code(text: &str) -> String {
    let mut text = text.to_owned();
    while let Some(at) = text.find("<code>") {
        let end = text[at..]
            .find("</code>")
            .map_or(text.len(), |e| at + e + 7);
        let code = &text[at + 6..end.saturating_sub(7).max(at + 6)];
        let bare = code
            .replace("\\\\", "")
            .replace("\\[", "")
            .replace("\\]", "")
            .replace("\\`", "")
            .replace("\\|", "");
        assert!(
            !bare.contains(['[', ']', '`', '|']),
            "unescaped in a code element: {code}"
        );
        text.replace_range(at..end, "CODE");
    }
    text.split('`').step_by(2).collect::<Vec<_>>().join(" ")
}

/// A 16-node p4d.24xlarge training gang allowed on spot, in us-east-1 with no reservation
/// term: the capacity risk of issue 74.
pub const SPOT_GANG_PLAN: &str = "version = 1\n[plan]\nname = \"gang\"\nowner = \"platform\"\nprovider = \"aws\"\nregions = [\"us-east-1\"]\nreservation_term = \"none\"\n\n[[workload]]\nname = \"pretrain\"\nteam = \"research\"\nkind = \"training\"\nnodes = 16\ngpus = 8\ncheckpoint_minutes = 60\ninterruptible = true\nskus = [\"p4d.24xlarge\"]\n";
