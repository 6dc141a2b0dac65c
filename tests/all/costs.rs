//! Costs a person checks with a calculator: small plans whose truth is one line of arithmetic
//! on the embedded catalog's prices (g6.xlarge in us-east-1: $0.8048/h on-demand, $0.5239/h
//! as a 1-year standard no-upfront Reserved Instance, $0.3694/h for 3 years).

use crate::common;

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
    crate::common::contract(&out.stdout).expect("json")
}

/// `check --format json` of `text` written to `dir/plan.toml`: its exit code and report.
fn check(dir: &Path, text: &str) -> (Option<i32>, Value) {
    let plan = dir.join("plan.toml");
    std::fs::write(&plan, text).expect("plan");
    let out = common::gpuplan(Path::new("/nonexistent/gpuplan-test-cache"))
        .args(["check", "--format", "json"])
        .arg(&plan)
        .output()
        .expect("runs");
    (
        out.status.code(),
        crate::common::contract(&out.stdout).expect("json"),
    )
}

fn workload(name: &str, team: &str, replicas: u32, hours: Option<u32>) -> String {
    let h = hours.map_or(String::new(), |h| format!("hours_per_month = {h}\n"));
    format!("\n[[workload]]\nname = \"{name}\"\nteam = \"{team}\"\nkind = \"batch\"\ngpus = 1\nreplicas = {replicas}\n{h}skus = [\"g6.xlarge\"]\n")
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 0.011
}

fn team(v: &Value, t: &str) -> f64 {
    v["teams"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["team"] == t)
        .and_then(|x| x["monthly_cost_usd"].as_f64())
        .unwrap()
}

fn declared_l4(text: &str, max: u32, capacity: &str, workloads: &str) -> String {
    format!(
        "{text}\n[[pool]]\nname = \"l4\"\nsku = \"g6.xlarge\"\nregion = \"us-east-1\"\ncapacity = \"{capacity}\"\nnodes = {{ min = 0, max = {max} }}\nworkloads = [{workloads}]\n"
    )
}

#[test]
fn a_shared_pool_pays_each_burst_node_hour_once() {
    // 10 replicas x 30 h and 1 replica x 400 h share g6.xlarge nodes (0-11): the node-hours
    // are 10 x 30 + 400 = 700, so the pool costs 700 x $0.8048 = $563.36 (billing every
    // burst node for the longest member's hours gave 11 x 400 h = $3,541.12), and each team
    // pays its own node-hours. 400 h is under the 1-year break-even (0.5239 / 0.8048 = 65%,
    // 475 h), so nothing is reserved.
    let dir = tempfile::tempdir().expect("tmp");
    let text = format!(
        "{HEAD}{}{}",
        workload("short", "a", 10, Some(30)),
        workload("long", "b", 1, Some(400))
    );
    let v = recommend(dir.path(), &text);
    let pools = v["pools"].as_array().expect("pools");
    assert_eq!(pools.len(), 1, "{v:#}");
    assert_eq!(pools[0]["sku"], "g6.xlarge");
    assert_eq!(pools[0]["capacity"], "on-demand");
    assert!(
        close(pools[0]["monthly_cost_usd"].as_f64().unwrap(), 563.36),
        "{:#}",
        pools[0]
    );
    assert!(close(team(&v, "a"), 300.0 * 0.8048), "{}", team(&v, "a"));
    assert!(close(team(&v, "b"), 400.0 * 0.8048), "{}", team(&v, "b"));

    // The same pool declared by hand is priced by the same rule: the comparison shows no
    // saving.
    let v = recommend(
        dir.path(),
        &declared_l4(&text, 11, "on-demand", "\"short\", \"long\""),
    );
    let c = &v["comparison"];
    assert!(
        close(c["today_monthly_cost_usd"].as_f64().unwrap(), 563.36),
        "{c:#}"
    );
    assert!(close(c["saving_usd"].as_f64().unwrap(), 0.0), "{c:#}");
}

#[test]
fn a_node_that_runs_past_the_break_even_is_reserved_whatever_the_kind() {
    // The pair: 10 x 30 h and 1 x 700 h. The 700-hour node runs 96% of the month,
    // past the 65% break-even, so it is reserved: $0.5239 x 730 = $382.45 (the catalog's rate
    // has more digits) instead of 700 x $0.8048 = $563.36; the 30-hour replicas stay
    // on-demand at $241.44. Each team pays its own.
    let dir = tempfile::tempdir().expect("tmp");
    let text = format!(
        "{HEAD}{}{}",
        workload("short", "a", 10, Some(30)),
        workload("long", "b", 1, Some(700))
    );
    let v = recommend(dir.path(), &text);
    let total = v["total_monthly_cost_usd"].as_f64().unwrap();
    assert!(close(total, 241.44 + 382.45), "{total}");
    assert!(close(team(&v, "a"), 241.44), "{}", team(&v, "a"));
    assert!(close(team(&v, "b"), 382.45), "{}", team(&v, "b"));
    let long = v["pools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["workloads"][0] == "long")
        .expect("long's pool");
    assert_eq!(long["capacity"], "reserved-1y", "{long:#}");
    assert_eq!(long["nodes"]["min"], 1);
    let why = long["why"].as_str().unwrap();
    assert!(
        why.to_string().contains("breaks even at 65% utilisation"),
        "{why}"
    );
    assert!(
        why.to_string().contains("the reserved nodes run 96%"),
        "{why}"
    );

    // Declared as one on-demand pool it costs each node-hour once, $804.80; the saving is
    // the reservation's, and the per-pool delta is the total's.
    let v = recommend(
        dir.path(),
        &declared_l4(&text, 11, "on-demand", "\"short\", \"long\""),
    );
    let c = &v["comparison"];
    assert!(
        close(c["today_monthly_cost_usd"].as_f64().unwrap(), 804.80),
        "{c:#}"
    );
    assert!(
        close(c["saving_usd"].as_f64().unwrap(), 804.80 - 623.89),
        "{c:#}"
    );
    assert!(close(
        c["changes"][0]["saving_usd"].as_f64().unwrap(),
        c["saving_usd"].as_f64().unwrap()
    ));

    // Eight fixed replicas for 600 h (82%) are reserved though the work is batch and does not
    // run all month: 8 x $382.45 = $3,059.69 against 8 x 600 x $0.8048 = $3,863.04.
    let v = recommend(
        dir.path(),
        &format!("{HEAD}{}", workload("scorer", "a", 8, Some(600))),
    );
    let p = &v["pools"][0];
    assert_eq!(p["capacity"], "reserved-1y", "{p:#}");
    assert_eq!(p["nodes"]["min"], 8);
    assert!(
        close(p["monthly_cost_usd"].as_f64().unwrap(), 3059.69),
        "{p:#}"
    );

    // A peak is not a promise to run: 4 to 8 replicas all month reserve the 4, and the 4
    // above them stay on-demand (a reservation covers steady work, never the peak).
    let ranged =
        workload("scorer", "a", 8, None).replace("replicas = 8", "replicas = { min = 4, max = 8 }");
    let v = recommend(dir.path(), &format!("{HEAD}{ranged}"));
    let p = &v["pools"][0];
    assert_eq!(p["capacity"], "reserved-1y", "{p:#}");
    assert_eq!(
        (p["nodes"]["min"].as_u64(), p["nodes"]["max"].as_u64()),
        (Some(4), Some(8))
    );
    let want = 4.0 * 3059.69 / 8.0 + 4.0 * 730.0 * 0.8048;
    assert!(
        close(p["monthly_cost_usd"].as_f64().unwrap(), want),
        "{p:#} vs {want}"
    );
    assert!(
        p["why"].as_str().unwrap().contains("4 x 100% (peak)"),
        "{p:#}"
    );
}

#[test]
fn gp023_holds_a_declared_reservation_to_the_same_break_even() {
    // A reservation of 8 g6.xlarge for 8 replicas that run 600 h is what `recommend` itself
    // writes: no finding. For 300 h (41%, under the 65% break-even) the 8 nodes are idle
    // reservations, named with their cost.
    let dir = tempfile::tempdir().expect("tmp");
    let check = |hours: u32| {
        let text = declared_l4(
            &format!("{HEAD}{}", workload("scorer", "a", 8, Some(hours))),
            8,
            "reserved-1y",
            "\"scorer\"",
        )
        .replace("min = 0, max = 8", "min = 8, max = 8");
        let (_, v) = check(dir.path(), &text);
        v["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["rule"] == "GP023")
            .map(|f| f["message"].as_str().unwrap().to_owned())
            .collect::<Vec<_>>()
    };
    assert_eq!(check(600), Vec::<String>::new());
    let f = check(300);
    assert_eq!(f.len(), 1, "{f:?}");
    assert!(f[0].contains("8 reserved nodes idle"), "{f:?}");
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

    // Work that runs under the break-even (300 of 730 h, 41% against 65%) is not reserved.
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

/// Issue 40: a declared pool is priced by the recommender's rule, its floor every hour and
/// each node above it for the hours of the work that needs it; `nodes.max` is a ceiling,
/// priced only at maximum. Three g6.xlarge replicas (one GPU each, one per node) on a pool
/// of 1 to 8 nodes: the floor node all month and two more for their 200 hours, whatever
/// the maximum; at maximum, eight nodes all month.
#[test]
fn a_declared_pool_is_priced_by_the_nodes_its_work_needs() {
    let dir = tempfile::tempdir().expect("tmp");
    for max in [4, 8] {
        let text = format!(
            "{HEAD}{}\n[[pool]]\nname = \"p\"\nsku = \"g6.xlarge\"\nregion = \"us-east-1\"\nnodes = {{ min = 1, max = {max} }}\nworkloads = [\"w\"]\n",
            workload("w", "t", 3, Some(200))
        );
        let v = recommend(dir.path(), &text);
        let c = &v["comparison"];
        let today = c["today_monthly_cost_usd"].as_f64().expect("today");
        let want = 0.8048 * (730.0 + 2.0 * 200.0);
        assert!(close(today, want), "max {max}: {today} vs {want}");
    }
    // the at-maximum figure follows `nodes.max` alone
    let out = common::gpuplan(Path::new("/nonexistent/gpuplan-test-cache"))
        .args(["diff", "--format", "json"])
        .arg(dir.path().join("plan.toml"))
        .arg(dir.path().join("plan.toml"))
        .output()
        .expect("runs");
    let v: Value = crate::common::contract(&out.stdout).expect("json");
    let at_max = v["head"]["declared_monthly_cost_at_max_usd"]
        .as_f64()
        .expect("at max");
    assert!(close(at_max, 0.8048 * 8.0 * 730.0), "{at_max}");
}

/// Issue 40: the at-maximum figure of a spot pool includes the same restart waste as the
/// expected one: every node of the maximum all month, times paid hours per useful hour.
#[test]
fn spot_at_maximum_includes_restart_waste() {
    let dir = tempfile::tempdir().expect("tmp");
    let text = format!(
        "{HEAD}\n[[workload]]\nname = \"w\"\nteam = \"t\"\nkind = \"batch\"\ngpus = 1\nreplicas = {{ min = 1, max = 3 }}\nhours_per_month = 300\ninterruptible = true\ncheckpoint_minutes = 30\nskus = [\"g6.xlarge\"]\n"
    );
    let v = recommend(dir.path(), &text);
    let p = &v["pools"][0];
    assert_eq!(p["capacity"], "spot", "{p:#}");
    let rate = p["usd_per_node_hour"].as_f64().expect("rate");
    let waste = p["spot_waste_factor"].as_f64().expect("waste");
    assert!(waste > 1.0, "{p:#}");
    let max = p["nodes"]["max"].as_f64().expect("max");
    let at_max = p["monthly_cost_at_max_usd"].as_f64().expect("at max");
    assert!(
        close(at_max, rate * waste * max * 730.0),
        "{at_max} vs {}",
        rate * waste * max * 730.0
    );
    assert!(at_max >= p["monthly_cost_usd"].as_f64().expect("cost"));
}

/// Issue 40: `nodes` is the gang size ("replicas that must start together"), so `replicas`
/// counts members, not gangs: `replicas = 8, nodes = 8` is one gang of 8 nodes (it was priced
/// as 64), `gangs = 2` is two, and a count that is not a multiple of the gang is refused with
/// both readings spelled out.
#[test]
fn replicas_of_a_gang_count_members_and_gangs_counts_gangs() {
    let dir = tempfile::tempdir().expect("tmp");
    let gang = |counts: &str| {
        format!("{HEAD}\n[[workload]]\nname = \"pretrain\"\nteam = \"ml\"\nkind = \"batch\"\nnodes = 8\ngpus = 1\n{counts}skus = [\"g6.xlarge\"]\n")
    };
    let nodes = |v: &Value| v["pools"][0]["nodes"]["max"].as_u64().unwrap_or(0);
    let one = recommend(dir.path(), &gang("replicas = 8\n"));
    assert_eq!(nodes(&one), 8);
    let alone = recommend(dir.path(), &gang(""));
    assert_eq!(nodes(&alone), 8);
    assert!(close(
        one["total_monthly_cost_usd"].as_f64().unwrap_or(0.0),
        alone["total_monthly_cost_usd"].as_f64().unwrap_or(1.0)
    ));
    let two = recommend(dir.path(), &gang("gangs = 2\n"));
    let sixteen = recommend(dir.path(), &gang("replicas = 16\n"));
    assert_eq!(nodes(&two), 16);
    assert_eq!(nodes(&sixteen), 16);
    // 8 x 730 h x $0.8048 on-demand for one gang of 8 nodes
    let month = one["total_monthly_cost_usd"].as_f64().unwrap_or(0.0);
    assert!(month < 8.0 * 730.0 * 0.8048 + 0.02, "{month}");
    // check names what it plans: GP032, and refusals with file:line
    let check = |text: &str| check(dir.path(), text);
    let (code, v) = check(&gang("replicas = 16\n"));
    assert_eq!(code, Some(0));
    let note = v["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .find(|f| f["rule"] == "GP032")
        .expect("GP032");
    assert!(
        note["message"]
            .as_str()
            .unwrap_or("")
            .contains("2 gang(s) of 8 nodes that each start together: 16 nodes, 16 GPUs"),
        "{note}"
    );
    let (code, v) = check(&gang("replicas = 2\n"));
    assert_eq!(code, Some(2));
    let e = &v["errors"][0];
    assert!(
        e["message"]
            .as_str()
            .unwrap_or("")
            .contains("must be a multiple of 8"),
        "{e}"
    );
    assert!(
        e["help"].as_str().unwrap_or("").contains("`gangs = 2`"),
        "{e}"
    );
    assert!(e["line"].as_u64().is_some_and(|l| l > 1));
    let (code, v) = check(&gang("gangs = 2\nreplicas = 8\n"));
    assert_eq!(code, Some(2));
    assert!(v["errors"][0]["message"]
        .as_str()
        .unwrap_or("")
        .contains("disagree"));
    let (code, _) = check(&format!(
        "{HEAD}\n[[workload]]\nname = \"a\"\nteam = \"ml\"\nkind = \"batch\"\ngangs = 2\n"
    ));
    assert_eq!(code, Some(2));
}

/// Issue 40: a user-facing service keeps at least two nodes (the availability floor, from
/// providers/assumptions.toml), at its floor and its peak, priced; `availability_floor = 1`
/// lowers it, which GP033 flags until an `[[allow]]` records the decision.
#[test]
fn user_facing_work_keeps_two_nodes_unless_a_recorded_decision_lowers_it() {
    let dir = tempfile::tempdir().expect("tmp");
    // 4-6 replicas of one L4 each fit one g6.48xlarge (8 x L4) even at peak.
    let plan = |extra: &str| {
        format!("{HEAD}\n[[workload]]\nname = \"chat\"\nteam = \"web\"\nkind = \"inference\"\nuser_facing = true\nreplicas = {{ min = 4, max = 6 }}\ngpus = 1\nskus = [\"g6.48xlarge\"]\n{extra}")
    };
    let v = recommend(dir.path(), &plan(""));
    assert_eq!(v["pools"][0]["nodes"]["min"], 2, "{:#}", v["pools"][0]);
    assert!(v["pools"][0]["why"]
        .as_str()
        .unwrap_or("")
        .contains("availability floor: 2 node(s)"));
    let lowered = recommend(dir.path(), &plan("availability_floor = 1\n"));
    assert_eq!(lowered["pools"][0]["nodes"]["min"], 1);
    assert!(
        v["total_monthly_cost_usd"].as_f64().unwrap_or(0.0)
            > lowered["total_monthly_cost_usd"].as_f64().unwrap_or(0.0),
        "the second node is priced"
    );
    // `common::gpuplan` fixes today at 2026-12-02, as the allow below needs.
    let check = |text: &str| check(dir.path(), text).1;
    let rules = |v: &Value| -> Vec<(String, bool)> {
        v["findings"]
            .as_array()
            .expect("findings")
            .iter()
            .filter(|f| f["rule"] == "GP033")
            .map(|f| {
                (
                    f["message"].as_str().unwrap_or("").to_owned(),
                    f.get("suppressed").is_some(),
                )
            })
            .collect()
    };
    let found = rules(&check(&plan("availability_floor = 1\n")));
    assert_eq!(found.len(), 1);
    assert!(found[0].0.contains("below the availability floor of 2") && !found[0].1);
    let decided = rules(&check(&plan("availability_floor = 1\n\n[[allow]]\nrule = \"GP033\"\nworkload = \"chat\"\nreason = \"a demo nobody depends on\"\napproved_by = \"sre-lead\"\n")));
    assert_eq!(decided.len(), 1);
    assert!(decided[0].1, "the allow records the decision");
    assert!(rules(&check(&plan(""))).is_empty());
    // A single replica is not spread: the floor is what it runs, one node.
    let one = recommend(
        dir.path(),
        &format!("{HEAD}\n[[workload]]\nname = \"demo\"\nteam = \"web\"\nkind = \"inference\"\nuser_facing = true\nreplicas = 1\ngpus = 1\nskus = [\"g6.48xlarge\"]\n"),
    );
    assert_eq!(one["pools"][0]["nodes"]["max"], 1);
}
