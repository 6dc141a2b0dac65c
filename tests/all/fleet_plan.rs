//! Issue 61 item 6: a fleet-wide next plan keeps pools and workloads together. Reviewed with
//! `--all-clusters`, a workload whose pools span two regions grows from both clusters' pods;
//! the pools it runs on grow with it, or it is held and the review says which pool left it.

use crate::common;
use crate::forecast::NOV7;
use crate::forecast::{
    chat_in_two_regions, fleet, forecast, gpuplan, in_cluster, line, openmetrics,
};

#[test]
fn a_fleet_plan_grows_the_pools_its_workloads_outgrow() {
    let dir = tempfile::tempdir().expect("tmp");
    // two pools of 32 one-GPU nodes: 64 GPUs for chat across the fleet
    std::fs::write(dir.path().join("plan.toml"), chat_in_two_regions(32)).expect("plan");
    let one = openmetrics(NOV7, 28, &fleet(0.25));
    let tagged = |c: &str| in_cluster(&one, c).replace("# EOF\n", "");
    let om = dir.path().join("fleet.om");
    std::fs::write(&om, tagged("east") + &tagged("west") + "# EOF\n").expect("om");
    let out = crate::common::gpuplan(std::path::Path::new("/nonexistent/gpuplan-test-cache"))
        .arg("review")
        .arg(dir.path().join("plan.toml"))
        .arg("--metrics")
        .arg(&om)
        .args(["--all-clusters", "--format", "json", "--write-plan"])
        .arg(dir.path().join("next.toml"))
        .output()
        .expect("run");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    let next = std::fs::read_to_string(dir.path().join("next.toml")).expect("next");
    let v = crate::common::contract(&out.stdout).expect("json");
    let max = |text: &str| -> i64 {
        let l = text.split("max = ").nth(1).expect("a max");
        l.split([' ', '}'])
            .next()
            .and_then(|n| n.parse().ok())
            .expect("a number")
    };
    let chat = max(line(&next, "chat", "replicas").expect("chat replicas"));
    // one GPU a replica on one-GPU nodes: the two pools hold every replica of the new max
    let pools: i64 = ["chat-east", "chat-west"]
        .iter()
        .map(|p| {
            let at = next.find(&format!("name = \"{p}\"")).expect("pool");
            max(next[at..]
                .lines()
                .find(|l| l.starts_with("nodes ="))
                .expect("nodes"))
        })
        .sum();
    assert!(chat > 64, "the fleet's demand outgrew the 64 GPUs: {chat}");
    assert!(
        pools >= chat,
        "chat max {chat} on pools of {pools} nodes:\n{next}\n{stderr}"
    );
    assert!(stderr.contains("pool `chat-east`: nodes was"), "{stderr}");
    // the report's row is the plan's line
    let row = &crate::forecast::forecast(&v, "chat")["proposed"];
    assert_eq!(row["max"], chat, "{row:#}");
    assert_eq!(
        crate::forecast::forecast(&v, "chat")["written"],
        "as_proposed"
    );
}

/// Issue 42 item 4: next quarter's plan from the whole fleet. Two clusters each run the same
/// fleet; `--all-clusters` (or `--cluster` once per cluster) reviews them as one: the
/// workload whose pools span both regions is proposed from both clusters' pods (twice one
/// cluster's demand), never from one; a cluster the data does not hold is refused.
#[test]
fn the_fleet_proposes_next_quarter_from_every_cluster() {
    let dir = tempfile::tempdir().expect("tmp");
    let plan = chat_in_two_regions(60);
    std::fs::write(dir.path().join("plan.toml"), &plan).expect("plan");
    let one = openmetrics(NOV7, 28, &fleet(0.25));
    let tagged = |c: &str| in_cluster(&one, c).replace("# EOF\n", "");
    let om = dir.path().join("fleet.om");
    std::fs::write(&om, tagged("east") + &tagged("west") + "# EOF\n").expect("om");
    let run = |extra: &[&str], next: &str| -> (serde_json::Value, String, String) {
        let out = gpuplan()
            .arg("review")
            .arg(dir.path().join("plan.toml"))
            .arg("--metrics")
            .arg(&om)
            .args(["--format", "json"])
            .args(extra)
            .arg("--write-plan")
            .arg(dir.path().join(next))
            .output()
            .expect("run");
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{stderr}");
        (
            crate::common::contract(&out.stdout).expect("json"),
            std::fs::read_to_string(dir.path().join(next)).expect("next"),
            stderr,
        )
    };
    let (east, east_plan, east_err) = run(&["--cluster", "east"], "east.toml");
    let (all, all_plan, all_err) = run(&["--all-clusters"], "all.toml");
    let (both, both_plan, _) = run(&["--cluster", "east", "--cluster", "west"], "both.toml");
    assert_eq!(all_plan, both_plan);
    common::prometheus::assert_close(&all["next_quarter"], &both["next_quarter"], "fleet");
    // one cluster leaves the two-region workload alone; the fleet proposes it
    assert!(
        east_err.contains("`chat` was left as written"),
        "{east_err}"
    );
    assert!(!all_err.contains("left as written: its pools"), "{all_err}");
    assert!(
        line(&all_plan, "chat", "replicas").is_some_and(|l| l.contains("gpuplan review")),
        "{all_plan}"
    );
    let _ = east_plan;
    // the fleet holds both clusters' replicas: twice one cluster's
    let projected = |v: &serde_json::Value| {
        forecast(v, "chat")["projected_replicas"]
            .as_f64()
            .expect("projected")
    };
    let (e, a) = (projected(&east), projected(&all));
    assert!((a / e - 2.0).abs() < 0.05, "one cluster {e}, the fleet {a}");
    let teams = |v: &serde_json::Value| -> f64 {
        v["teams"]
            .as_array()
            .expect("teams")
            .iter()
            .map(|t| t["allocated_gpu_seconds"].as_f64().unwrap_or(0.0))
            .sum()
    };
    assert!((teams(&all) / teams(&east) - 2.0).abs() < 1e-6);
    // a cluster the data does not hold
    let out = gpuplan()
        .arg("review")
        .arg(dir.path().join("plan.toml"))
        .arg("--metrics")
        .arg(&om)
        .args(["--cluster", "east", "--cluster", "north"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("`--cluster north`") && err.contains("east, west"),
        "{err}"
    );
}
