//! Issue 75 (the fifth hardening round) and issue 71 item 3: each case failed before its
//! change.

use std::path::Path;

use crate::common;

const NO_CACHE: &str = "/nonexistent/gpuplan-test-cache";

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Issue 71 item 3: a workload's hours above the plan's month are refused where they are
/// written, so `check` (GP036's block length), `recommend` and the cost of a declared pool
/// cannot read two different figures for them.
#[test]
fn hours_past_the_plan_month_are_refused_where_written() {
    let dir = tempfile::tempdir().expect("tmp");
    let plan = dir.path().join("plan.toml");
    std::fs::write(
        &plan,
        "version = 1\n[plan]\nname = \"hours\"\nowner = \"ml\"\nprovider = \"aws\"\nregions = [\"us-east-1\"]\nhours_per_month = 200\n\n\
         [[workload]]\nname = \"pretrain\"\nteam = \"foundation\"\nkind = \"training\"\nnodes = 2\ngpus = 8\nskus = [\"p5.48xlarge\"]\nhours_per_month = 300\n",
    )
    .expect("plan");
    for cmd in ["check", "recommend"] {
        let out = common::gpuplan(Path::new(NO_CACHE))
            .arg(cmd)
            .arg(&plan)
            .output()
            .expect("run");
        assert_eq!(out.status.code(), Some(2), "{cmd}: {}", stderr(&out));
        let err = stderr(&out);
        assert!(err.contains("plan.toml:16:"), "{cmd}: {err}");
        assert!(
            err.contains("more than the plan's month of 200 hours"),
            "{err}"
        );
    }
    // at the month it is the month
    let ok = std::fs::read_to_string(&plan)
        .expect("plan")
        .replace("hours_per_month = 300", "hours_per_month = 200");
    std::fs::write(&plan, ok).expect("plan");
    let out = common::gpuplan(Path::new(NO_CACHE))
        .arg("recommend")
        .arg(&plan)
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

/// Issue 75 item 7: `render --out -` names no directory (render writes files, not a stream);
/// a `--write-plan` into a directory that does not exist says so, not "entity not found".
#[test]
fn outputs_that_cannot_be_written_say_why() {
    let dir = tempfile::tempdir().expect("tmp");
    let out = common::gpuplan(Path::new(NO_CACHE))
        .current_dir(dir.path())
        .args([
            "render",
            concat!(env!("CARGO_MANIFEST_DIR"), "/plans/minimal.toml"),
        ])
        .args(["--out", "-"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("writes a directory of files"),
        "{}",
        stderr(&out)
    );
    assert!(!dir.path().join("-").exists());
    let missing = dir.path().join("no-such-dir").join("next.toml");
    let out = common::gpuplan(Path::new(NO_CACHE))
        .args([
            "recommend",
            concat!(env!("CARGO_MANIFEST_DIR"), "/plans/minimal.toml"),
        ])
        .arg("--write-plan")
        .arg(&missing)
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("its directory does not exist"), "{err}");
    assert!(!err.contains("entity not found"), "{err}");
}

/// Issue 75 item 7: a closed standard output is output nobody got: exit 2, not 0.
#[test]
fn a_closed_stdout_is_not_success() {
    let bin = assert_cmd::cargo::cargo_bin("gpuplan");
    let run = |redirect: &str| {
        std::process::Command::new("sh")
            .arg("-c")
            .arg(format!(
                "\"$0\" recommend {}/plans/minimal.toml {redirect}",
                env!("CARGO_MANIFEST_DIR")
            ))
            .arg(&bin)
            .env("GPUPLAN_CACHE", NO_CACHE)
            .output()
            .expect("sh")
    };
    let closed = run(">&-");
    assert_eq!(closed.status.code(), Some(2), "{}", stderr(&closed));
    assert!(
        stderr(&closed).contains("standard output is closed"),
        "{}",
        stderr(&closed)
    );
    assert_eq!(run(">/dev/null").status.code(), Some(0));
}

/// Issue 75 item 3: with an empty `HOME` (and no other cache setting) there is no cache, not
/// `./.cache/gpuplan`: a checked-out repository holding one supplies no prices, and a refresh
/// refuses rather than writing into the checkout.
#[test]
fn an_empty_home_is_no_cache_in_the_working_directory() {
    let dir = tempfile::tempdir().expect("tmp");
    let plan = concat!(env!("CARGO_MANIFEST_DIR"), "/plans/minimal.toml");
    let honest = common::gpuplan(Path::new(NO_CACHE))
        .args(["recommend", "--format", "json", plan])
        .output()
        .expect("run");
    let honest = common::ok_json(honest);
    // a repository that carries a cache of its own, with the plan's sizes at a cent an hour
    let planted = dir.path().join(".cache").join("gpuplan");
    let mut rows =
        String::from("armSkuName,armRegionName,kind,retailPrice,unitOfMeasure,captured,source\n");
    for sku in [
        "Standard_NC4as_T4_v3",
        "Standard_NV36ads_A10_v5",
        "Standard_NC24ads_A100_v4",
        "Standard_NC40ads_H100_v5",
    ] {
        rows.push_str(&format!(
            "{sku},eastus,consumption,0.01,1 Hour,2026-12-06,planted\n"
        ));
    }
    common::refresh_cache(
        &planted,
        "azure/prices-retail.csv",
        "azure",
        "planted",
        &rows,
    );
    let run = |args: &[&str]| {
        let mut c = assert_cmd::Command::cargo_bin("gpuplan").expect("binary");
        c.current_dir(dir.path())
            .env_remove("GPUPLAN_CACHE")
            .env_remove("XDG_CACHE_HOME")
            .env("HOME", "")
            .env("NO_COLOR", "1")
            .args(args);
        c.output().expect("run")
    };
    let out = run(&["recommend", "--format", "json", plan]);
    let v = common::ok_json(out);
    assert_eq!(v["summary"], honest["summary"]);
    let out = run(&[
        "catalog",
        "refresh",
        "--provider",
        "azure",
        "--region",
        "eastus",
        "--only",
        "prices",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("no cache directory"),
        "{}",
        stderr(&out)
    );
    assert_eq!(
        common::tree(&planted).len(),
        3,
        "nothing written into the checkout"
    );
}

/// Issue 75 item 4: a finite but absurd price (1e306 $/h) in a cache is refused at its line,
/// never priced into a fleet of i64::MAX cents.
#[test]
fn an_absurd_price_is_refused_where_it_is_written() {
    let dir = tempfile::tempdir().expect("tmp");
    let cache = dir.path().join("cache");
    common::refresh_cache(
        &cache,
        "azure/prices-retail.csv",
        "azure",
        "hostile price server",
        "armSkuName,armRegionName,kind,retailPrice,unitOfMeasure,captured,source\nStandard_NC4as_T4_v3,eastus,consumption,1e306,1 Hour,2026-12-01,test\n",
    );
    let out = common::gpuplan(&cache)
        .args([
            "recommend",
            concat!(env!("CARGO_MANIFEST_DIR"), "/plans/azure-inference.toml"),
        ])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("past any machine's price"), "{err}");
    assert!(err.contains("prices-retail.csv:2"), "{err}");
    assert!(!String::from_utf8_lossy(&out.stdout).contains("92,233,720"));
}

/// Issue 75 item 2: `GPUPLAN_PROMETHEUS_BASIC_AUTH` is the `--basic-auth` flag's variable:
/// its password is a secret whoever echoes it, as the flag's is.
#[test]
fn the_basic_auth_variable_is_a_secret_too() {
    use common::mock::{Mock, Resp};
    let m = Mock::start(|r, _| {
        // a store that echoes what it was sent
        let auth = r.header("authorization").unwrap_or("").to_owned();
        Resp::new(
            400,
            "application/json",
            format!(
                "{{\"status\":\"error\",\"errorType\":\"bad_data\",\"error\":\"bad credentials {auth} (password s3cr3t-pw-77)\"}}"
            ),
        )
    });
    let dir = tempfile::tempdir().expect("tmp");
    let plan = concat!(env!("CARGO_MANIFEST_DIR"), "/plans/minimal.toml");
    let out = common::gpuplan(Path::new(NO_CACHE))
        .current_dir(dir.path())
        .env("GPUPLAN_PROMETHEUS_BASIC_AUTH", "admin:s3cr3t-pw-77")
        .args(["review", plan, "--prometheus", &m.url, "--window", "7d"])
        .output()
        .expect("run");
    let all = format!("{}{}", String::from_utf8_lossy(&out.stdout), stderr(&out));
    assert_ne!(out.status.code(), Some(0), "{all}");
    assert!(
        m.count(|r| r.header("authorization").is_some()) > 0,
        "the store was asked with it"
    );
    assert!(!all.contains("s3cr3t-pw-77"), "{all}");
    assert!(!all.contains("YWRtaW46czNjcjN0LXB3LTc3"), "{all}");
}
