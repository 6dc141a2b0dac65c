//! Costs a person checks with a calculator: small plans whose truth is one line of arithmetic
//! on the embedded catalog's prices (g6.xlarge in us-east-1: $0.8048/h on-demand, $0.5239/h
//! as a 1-year standard no-upfront Reserved Instance, $0.3694/h for 3 years).

mod common;

use serde_json::Value;
use std::path::Path;

const HEAD: &str = "version = 1\n\n[plan]\nname = \"hand\"\nowner = \"me\"\nprovider = \"aws\"\nregions = [\"us-east-1\"]\n";

fn recommend(dir: &Path, text: &str) -> Value {
    let plan = dir.join("plan.toml");
    std::fs::write(&plan, text).expect("plan");
    let out = common::gpuplan(Path::new("/nonexistent/gpuplan-test-cache"))
        .args(["recommend", "--format", "json"])
        .arg(&plan)
        .output()
        .expect("runs");
    assert!(
        out.status.code() == Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("json")
}

fn workload(name: &str, team: &str, replicas: u32, hours: Option<u32>) -> String {
    let h = hours.map_or(String::new(), |h| format!("hours_per_month = {h}\n"));
    format!("\n[[workload]]\nname = \"{name}\"\nteam = \"{team}\"\nkind = \"batch\"\ngpus = 1\nreplicas = {replicas}\n{h}skus = [\"g6.xlarge\"]\n")
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 0.011
}

#[test]
fn a_shared_pool_pays_each_burst_node_hour_once() {
    // 10 replicas x 30 h and 1 replica x 700 h share g6.xlarge nodes (0-11): the node-hours
    // are 10 x 30 + 700 = 1,000, so the pool costs 1,000 x $0.8048 = $804.80 (it was billed
    // 11 x 700 h = $6,196.96), and each team pays its own node-hours.
    let dir = tempfile::tempdir().expect("tmp");
    let text = format!(
        "{HEAD}{}{}",
        workload("short", "a", 10, Some(30)),
        workload("long", "b", 1, Some(700))
    );
    let v = recommend(dir.path(), &text);
    let pools = v["pools"].as_array().expect("pools");
    assert_eq!(pools.len(), 1, "{v:#}");
    assert_eq!(pools[0]["sku"], "g6.xlarge");
    assert!(
        close(pools[0]["monthly_cost_usd"].as_f64().unwrap(), 804.80),
        "{:#}",
        pools[0]
    );
    let team = |t: &str| {
        v["teams"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["team"] == t)
            .and_then(|x| x["monthly_cost_usd"].as_f64())
            .unwrap()
    };
    assert!(close(team("a"), 300.0 * 0.8048), "{}", team("a"));
    assert!(close(team("b"), 700.0 * 0.8048), "{}", team("b"));

    // The same pool declared by hand is priced by the same rule: the comparison shows no
    // saving, and each declared pool's delta adds up to the total.
    let declared = format!(
        "{text}\n[[pool]]\nname = \"l4\"\nsku = \"g6.xlarge\"\nregion = \"us-east-1\"\nnodes = {{ min = 0, max = 11 }}\nworkloads = [\"short\", \"long\"]\n"
    );
    let v = recommend(dir.path(), &declared);
    let c = &v["comparison"];
    assert!(
        close(c["today_monthly_cost_usd"].as_f64().unwrap(), 804.80),
        "{c:#}"
    );
    assert!(close(c["saving_usd"].as_f64().unwrap(), 0.0), "{c:#}");
}

#[test]
fn steady_batch_is_reserved_for_the_plans_term() {
    // 8 fixed replicas all month: 8 x 730 h x $0.5239 = $3,059.58 (the catalog's rate has
    // more digits: $3,059.69), where on-demand is 8 x 730 x $0.8048 = $4,700.03.
    let dir = tempfile::tempdir().expect("tmp");
    let v = recommend(
        dir.path(),
        &format!("{HEAD}{}", workload("scorer", "a", 8, None)),
    );
    let p = &v["pools"][0];
    assert_eq!(p["capacity"], "reserved-1y", "{p:#}");
    let cost = p["monthly_cost_usd"].as_f64().unwrap();
    assert!(close(cost, 3059.69), "{cost}");
    assert!(cost < 8.0 * 730.0 * 0.8048);
    assert!(
        p["why"].as_str().unwrap().contains("a 3-year term at"),
        "{p:#}"
    );

    // A recorded 3-year term takes the 3-year rate; "none" reserves nothing.
    let three = HEAD.replace("regions", "reservation_term = \"3y\"\nregions");
    let v = recommend(
        dir.path(),
        &format!("{three}{}", workload("scorer", "a", 8, None)),
    );
    assert_eq!(v["pools"][0]["capacity"], "reserved-3y");
    let none = HEAD.replace("regions", "reservation_term = \"none\"\nregions");
    let v = recommend(
        dir.path(),
        &format!("{none}{}", workload("scorer", "a", 8, None)),
    );
    assert_eq!(v["pools"][0]["capacity"], "on-demand");
    assert!(close(
        v["pools"][0]["monthly_cost_usd"].as_f64().unwrap(),
        8.0 * 730.0 * 0.8048
    ));

    // Work that does not run all month has no floor to reserve.
    let v = recommend(
        dir.path(),
        &format!("{HEAD}{}", workload("scorer", "a", 8, Some(300))),
    );
    assert_eq!(v["pools"][0]["capacity"], "on-demand");
    assert!(close(
        v["pools"][0]["monthly_cost_usd"].as_f64().unwrap(),
        8.0 * 300.0 * 0.8048
    ));
}

#[test]
fn a_declared_spot_pool_carries_the_same_waste_as_a_recommended_one() {
    // One interruptible, checkpointed job on spot: the recommended pool and the same pool
    // declared by hand cost the same, restart waste included.
    let dir = tempfile::tempdir().expect("tmp");
    let w = "\n[[workload]]\nname = \"job\"\nteam = \"a\"\nkind = \"batch\"\ngpus = 1\nreplicas = 4\ninterruptible = true\ncheckpoint_minutes = 30\nskus = [\"g6.xlarge\"]\n";
    let v = recommend(dir.path(), &format!("{HEAD}{w}"));
    let p = &v["pools"][0];
    assert_eq!(p["capacity"], "spot", "{p:#}");
    let recommended = p["monthly_cost_usd"].as_f64().unwrap();
    let raw = p["usd_per_node_hour"].as_f64().unwrap() * 4.0 * 730.0;
    assert!(recommended > raw, "waste is priced: {recommended} vs {raw}");
    let declared = format!(
        "{HEAD}{w}\n[[pool]]\nname = \"s\"\nsku = \"g6.xlarge\"\nregion = \"us-east-1\"\nnodes = 4\ncapacity = \"spot\"\nworkloads = [\"job\"]\n"
    );
    let v = recommend(dir.path(), &declared);
    let today = v["comparison"]["today_monthly_cost_usd"].as_f64().unwrap();
    assert!(
        close(today, recommended),
        "declared {today} vs recommended {recommended}"
    );
}

#[test]
fn unknown_quota_is_named_where_another_region_knows_it() {
    let dir = tempfile::tempdir().expect("tmp");
    let text = "version = 1\n\n[plan]\nname = \"q\"\nowner = \"me\"\nprovider = \"azure\"\nregions = [\"eastus\", \"westus3\"]\n\n[[workload]]\nname = \"api\"\nteam = \"a\"\nkind = \"inference\"\ngpus = 1\nreplicas = 6\ngpu_models = [\"A100-80GB\"]\n\n[[quota]]\nregion = \"eastus\"\nfamily = \"standardNCADSA100v4Family\"\nvcpus = 48\n";
    let v = recommend(dir.path(), text);
    let p = &v["pools"][0];
    assert_eq!(p["region"], "westus3", "{p:#}");
    assert!(
        p["why"]
            .as_str()
            .unwrap()
            .contains("quota unknown in westus3 for `standardNCADSA100v4Family`"),
        "{p:#}"
    );
}
