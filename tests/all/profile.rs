//! Issue 57: demand over time. An autoscaled workload's `typical_replicas` says what it runs
//! on average; the expected cost follows it, the at-maximum cost stays at `max`, and the
//! reservation `recommend` makes is the one GP023 accepts.

use crate::common;

use std::path::Path;

/// One user-facing chat service on g6.xlarge (L4), autoscaled 2..=6, at 730 hours.
fn plan(typical: Option<&str>) -> String {
    let t = typical.map_or(String::new(), |t| format!("typical_replicas = {t}\n"));
    format!(
        "version = 1\n\n[plan]\nname = \"auto\"\nowner = \"platform\"\nprovider = \"aws\"\nregions = [\"us-east-1\"]\n\n\
         [[workload]]\nname = \"chat\"\nteam = \"web\"\nkind = \"inference\"\nuser_facing = true\nreplicas = {{ min = 2, max = 6 }}\n{t}gpus = 1\nskus = [\"g6.xlarge\"]\n"
    )
}

fn offline() -> &'static Path {
    Path::new("/nonexistent/gpuplan-test-cache")
}

fn recommend(path: &Path) -> serde_json::Value {
    let out = common::gpuplan(offline())
        .args(["recommend", "--format", "json"])
        .arg(path)
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    common::contract(&out.stdout).expect("json")
}

#[test]
fn expected_cost_follows_the_typical_replicas_and_the_maximum_stays_the_ceiling() {
    let dir = tempfile::tempdir().expect("tmp");
    let write = |name: &str, text: String| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).expect("plan");
        p
    };
    let peak = recommend(&write("peak.toml", plan(None)));
    let typical = recommend(&write("typical.toml", plan(Some("3"))));
    let at_max = peak["total_monthly_cost_at_max_usd"].as_f64().expect("max");
    // Without a profile every replica is taken to run all its hours.
    assert_eq!(peak["total_monthly_cost_usd"].as_f64(), Some(at_max));
    assert_eq!(
        typical["total_monthly_cost_at_max_usd"].as_f64(),
        Some(at_max)
    );
    // 2 reserved-1y g6.xlarge all month ($0.5239/h), and 4 replicas above them on-demand
    // ($0.8048/h) for a quarter of the hours each: (3 - 2) / (6 - 2) of 730.
    let pool = &typical["pools"][0];
    assert_eq!(pool["capacity"], "reserved-1y", "{pool}");
    assert_eq!(pool["reserved_nodes"], 2, "{pool}");
    let by_hand = 2.0 * 730.0 * 0.5239 + 4.0 * 730.0 * 0.25 * 0.8048;
    let expected = typical["total_monthly_cost_usd"]
        .as_f64()
        .expect("expected");
    assert!((expected - by_hand).abs() < 0.05, "{expected} vs {by_hand}");
    assert!(expected < at_max);
    // At its floor the profile is the floor: only the reserved nodes.
    let floor = recommend(&write("floor.toml", plan(Some("2"))));
    let at_floor = floor["total_monthly_cost_usd"].as_f64().expect("floor");
    assert!((at_floor - 2.0 * 730.0 * 0.5239).abs() < 0.05, "{at_floor}");

    // The written plan prices its declared pool as recommend priced it, and GP023 does not
    // call the reservation recommend made idle.
    let written = dir.path().join("written.toml");
    let out = common::gpuplan(offline())
        .args(["recommend", "--write-plan"])
        .arg(&written)
        .arg(dir.path().join("typical.toml"))
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&written).expect("written");
    assert!(text.contains("typical_replicas = 3"), "{text}");
    let out = common::gpuplan(offline())
        .args(["diff", "--format", "json"])
        .arg(dir.path().join("typical.toml"))
        .arg(&written)
        .output()
        .expect("runs");
    let d = common::contract(&out.stdout).expect("json");
    let declared = d["head"]["declared_monthly_cost_usd"]
        .as_f64()
        .expect("declared");
    assert!((declared - expected).abs() < 0.02, "{d}");
    let out = common::gpuplan(offline())
        .args(["check", "--format", "json"])
        .arg(&written)
        .output()
        .expect("runs");
    let v = common::contract(&out.stdout).expect("json");
    let gp023 = v["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .any(|f| f["rule"] == "GP023");
    assert!(!gp023, "{v}");
}

#[test]
fn a_typical_count_outside_the_range_is_an_error_at_its_place() {
    let dir = tempfile::tempdir().expect("tmp");
    let p = dir.path().join("bad.toml");
    std::fs::write(&p, plan(Some("7.5"))).expect("plan");
    let out = common::gpuplan(offline())
        .arg("check")
        .arg(&p)
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("`typical_replicas = 7.5` is outside the replicas' range 2..=6")
            && err.contains("bad.toml:15:20"),
        "{err}"
    );
}
