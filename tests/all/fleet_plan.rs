//! Issue 61 item 6: a fleet-wide next plan keeps pools and workloads together. Reviewed with
//! `--all-clusters`, a workload whose pools span two regions grows from both clusters' pods;
//! the pools it runs on grow with it, or it is held and the review says which pool left it.

use crate::forecast::NOV7;
use crate::forecast::{chat_in_two_regions, fleet, in_cluster, line, openmetrics};

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
