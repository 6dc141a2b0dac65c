//! Issue 55: quota is a constraint of the fleet, never a failure where something fits. Spot
//! has a quota of its own; where it is too small for spot, the same nodes on-demand (or the
//! next cheapest capacity that fits) are recommended, the why-line names the quota that
//! closed spot, and `render` writes the fleet. Where the quota holds part of a workload, the
//! workload is split: as many replicas as the quota holds on spot, the rest off it.

use crate::common;

use std::path::Path;

fn offline() -> &'static Path {
    Path::new("/nonexistent/gpuplan-test-cache")
}

fn plan(provider: &str, region: &str, workload: &str, quotas: &[(&str, u32)]) -> String {
    let mut s = format!(
        "version = 1\n\n[plan]\nname = \"q\"\nowner = \"platform\"\nprovider = \"{provider}\"\nregions = [\"{region}\"]\n\n[[workload]]\n{workload}"
    );
    for (family, vcpus) in quotas {
        s.push_str(&format!(
            "\n[[quota]]\nregion = \"{region}\"\nfamily = \"{family}\"\nvcpus = {vcpus}\n"
        ));
    }
    s
}

/// The recommendation (exit 0), with its lower bound at most its cost.
pub(crate) fn recommendation(text: &str) -> serde_json::Value {
    let dir = tempfile::tempdir().expect("tmp");
    let p = dir.path().join("plan.toml");
    std::fs::write(&p, text).expect("plan");
    let r = common::ok_json(
        common::gpuplan(offline())
            .args(["recommend", "--format", "json"])
            .arg(&p)
            .output()
            .expect("runs"),
    );
    let cost = r["total_monthly_cost_usd"].as_f64().expect("cost");
    let bound = r["lower_bound"]["monthly_cost_usd"]
        .as_f64()
        .expect("a bound");
    assert!(bound <= cost + 1e-6, "bound {bound} against {cost}: {r:#}");
    r
}

/// The bound keeps the quota too: within 1% of the fleet, the on-demand fleet's and not the
/// spot fleet's the quota closes.
fn tight(r: &serde_json::Value) {
    let cost = r["total_monthly_cost_usd"].as_f64().expect("cost");
    let bound = r["lower_bound"]["monthly_cost_usd"]
        .as_f64()
        .expect("a bound");
    assert!(bound >= 0.99 * cost, "bound {bound} against {cost}: {r:#}");
}

/// The recommendation (exit 0) and its only pool.
fn recommended(text: &str) -> (serde_json::Value, serde_json::Value) {
    let r = recommendation(text);
    let pools = r["pools"].as_array().expect("pools");
    assert_eq!(pools.len(), 1, "{r:#}");
    let pool = pools[0].clone();
    (r, pool)
}

/// A p5 gang of 4 nodes (768 vCPUs) where spot's quota (L-7212CCBC) is 384 and on-demand's
/// (L-417A185B) 1,536: on-demand, $160,716.80 at maximum (4 x 730 h x $55.04).
#[test]
fn a_gang_spot_cannot_hold_runs_on_demand_and_says_which_quota_closed_spot() {
    let text = plan(
        "aws",
        "us-west-2",
        "name = \"pretrain\"\nteam = \"foundation\"\nkind = \"training\"\nnodes = 4\ngpus = 8\nskus = [\"p5.48xlarge\"]\ninterruptible = true\ncheckpoint_minutes = 30\nhours_per_month = 300\n",
        &[("L-7212CCBC", 384), ("L-417A185B", 1536)],
    );
    let (r, pool) = recommended(&text);
    assert_eq!(pool["capacity"], "on-demand", "{pool:#}");
    assert_eq!(r["total_monthly_cost_at_max_usd"], 160_716.8, "{r:#}");
    tight(&r);
    let why = pool["why"].as_str().expect("why");
    assert!(
        why.contains("spot would cost")
            && why.contains("768 vCPUs of `L-7212CCBC` in us-west-2, above its known quota of 384"),
        "{why}"
    );
    let findings = r["findings"].as_array().expect("findings");
    assert!(!findings.iter().any(|f| f["code"] == "GP014"), "{r:#}");
    // render writes the fleet.
    let (_dir, out) = common::rendered(&text, &[]);
    assert!(out.join("terraform/main.tf").is_file());
}

/// L4 batch on spot needs 32 vCPUs of G spot quota (L-3819A6DF), which holds 16: four of its
/// eight g6.xlarge (4 vCPUs each) run on spot, the other four on the next cheapest capacity
/// that fits (a month-long fixed count reserves its nodes).
#[test]
fn batch_whose_spot_quota_holds_half_is_split() {
    let r = recommendation(&l4_batch("replicas = 8"));
    let (spot, rest) = split_pools(&r, 8);
    assert_eq!(spot["nodes"]["max"], 4, "{r:#}");
    assert_ne!(rest["capacity"], "spot", "{r:#}");
    assert!(
        rest["why"].as_str().expect("why").contains(
            "needs 16 more vCPUs of `L-3819A6DF` in us-east-1, where the rest of the fleet uses 16 of its known quota of 16"
        ),
        "{rest:#}"
    );
    tight(&r);
}

/// L4 batch (g6.xlarge, 4 vCPUs) in us-east-1 with `replicas` where the G spot quota
/// (L-3819A6DF) holds 16 vCPUs and the on-demand one (L-DB2E81BA) 64.
fn l4_batch(replicas: &str) -> String {
    plan(
        "aws",
        "us-east-1",
        &format!("name = \"embed-batch\"\nteam = \"search\"\nkind = \"batch\"\n{replicas}\ngpus = 1\nskus = [\"g6.xlarge\"]\ninterruptible = true\ncheckpoint_minutes = 10\n"),
        &[("L-3819A6DF", 16), ("L-DB2E81BA", 64)],
    )
}

/// The two pools of a workload split by a spot quota, `(spot, the other)`: every one of its
/// `replicas` placed in one of them (one node each), both named for it, no GP014.
fn split_pools(r: &serde_json::Value, replicas: u64) -> (serde_json::Value, serde_json::Value) {
    let pools = r["pools"].as_array().expect("pools");
    assert_eq!(pools.len(), 2, "{r:#}");
    let placed: u64 = pools
        .iter()
        .map(|p| p["nodes"]["max"].as_u64().expect("max"))
        .sum();
    assert_eq!(placed, replicas, "{r:#}");
    let w = &r["workloads"][0];
    let mut named = vec![w["pool"].as_str().expect("pool").to_owned()];
    named.extend(
        w["also_pools"]
            .as_array()
            .expect("also")
            .iter()
            .map(|p| p.as_str().expect("name").to_owned()),
    );
    named.sort();
    let mut names: Vec<String> = pools
        .iter()
        .map(|p| p["name"].as_str().expect("name").to_owned())
        .collect();
    names.sort();
    assert_eq!(named, names, "{r:#}");
    let findings = r["findings"].as_array().expect("findings");
    assert!(!findings.iter().any(|f| f["code"] == "GP014"), "{r:#}");
    let spot = pools
        .iter()
        .find(|p| p["capacity"] == "spot")
        .expect("a spot pool");
    let other = pools
        .iter()
        .find(|p| p["capacity"] != "spot")
        .expect("another pool");
    (spot.clone(), other.clone())
}

/// An evaluation of eight A100 replicas, one per 24-vCPU node, 200 hours a month, in Azure
/// swedencentral with `lowPriorityCores` at `low_priority` and the family's quota at 192.
fn azure_eval(low_priority: u32) -> String {
    plan(
        "azure",
        "swedencentral",
        "name = \"eval\"\nteam = \"research\"\nkind = \"evaluation\"\nhours_per_month = 200\nreplicas = 8\ngpus = 1\nskus = [\"Standard_NC24ads_A100_v4\"]\ninterruptible = true\ncheckpoint_minutes = 10\n",
        &[("lowPriorityCores", low_priority), ("standardNCADSA100v4Family", 192)],
    )
}

/// Azure's spot quota is the region's `lowPriorityCores`: 96 in swedencentral (where the
/// dated retail table has spot prices) holds four of the eight 24-vCPU A100 nodes on spot;
/// the other four run on-demand, 4 x 200 h x $4.775 = $3,820.00, where all eight on-demand
/// cost $7,640.00. The bound splits it the same way ($4,991.59).
#[test]
fn azure_spot_beyond_low_priority_cores_splits_the_workload() {
    let text = azure_eval(96);
    let r = recommendation(&text);
    let (spot, on_demand) = split_pools(&r, 8);
    assert_eq!(spot["nodes"]["max"], 4, "{r:#}");
    assert_eq!(on_demand["capacity"], "on-demand", "{r:#}");
    assert_eq!(on_demand["monthly_cost_usd"], 3_820.0, "{on_demand:#}");
    // Spot: 4 nodes x 200 h at the pool's rate, paid per useful hour (restarts).
    let waste = spot["spot_waste_factor"].as_f64().expect("waste");
    let rate = spot["usd_per_node_hour"].as_f64().expect("rate");
    let by_hand = 4.0 * 200.0 * rate * waste;
    let cost = spot["monthly_cost_usd"].as_f64().expect("cost");
    assert!((cost - by_hand).abs() < 0.01, "{cost} against {by_hand}");
    assert!(r["total_monthly_cost_usd"].as_f64().expect("total") < 7_640.0);
    let bound = r["lower_bound"]["monthly_cost_usd"]
        .as_f64()
        .expect("bound");
    assert!((4_900.0..5_000.0).contains(&bound), "{bound}");
    tight(&r);
    let why = |p: &serde_json::Value| p["why"].as_str().expect("why").to_owned();
    assert!(
        why(&spot).contains("`eval` is split by quota: 4 of its 8 replicas run here, as many as the known quota of `lowPriorityCores` in swedencentral (96 vCPUs) holds"),
        "{spot:#}"
    );
    assert!(
        why(&on_demand).contains(
            "`eval` is split by quota: 4 of its 8 replicas run here, the other 4 on spot"
        ) && why(&on_demand).contains("spot would cost"),
        "{on_demand:#}"
    );
    // render writes both pools, and each part of the workload runs on its own: its pool
    // alone and its 4 replicas (issue 74: one entry of 8 over both pools is one Kueue pod
    // set, which Kueue gives one flavor of 4).
    let (_dir, out) = common::rendered(&text, &[]);
    let values = std::fs::read_to_string(out.join("workloads/values.yaml")).expect("values");
    let entries: Vec<&str> = values.split("\n\"").skip(1).collect();
    for p in [&spot, &on_demand] {
        let name = p["name"].as_str().expect("name");
        let part = entries
            .iter()
            .find(|e| e.contains(&format!("gpuplan.io/pool: \"{name}\"")))
            .unwrap_or_else(|| panic!("a part on {name}: {values}"));
        assert!(
            part.starts_with("eval-")
                && part.contains("max: 4")
                && part.contains("gpuplan.io/workload: \"eval\""),
            "{part}"
        );
    }
}

/// Whatever `lowPriorityCores` holds, every replica is placed, spot stays within it, the fleet
/// never costs more than all on-demand, and the bound stays within 1%.
#[test]
fn every_spot_quota_places_every_replica_within_it() {
    for low_priority in [0, 24, 48, 72, 120, 168, 192, 400] {
        let r = recommendation(&azure_eval(low_priority));
        let pools = r["pools"].as_array().expect("pools");
        let nodes = |spot: bool| -> u64 {
            pools
                .iter()
                .filter(|p| (p["capacity"] == "spot") == spot)
                .map(|p| p["nodes"]["max"].as_u64().expect("max"))
                .sum()
        };
        assert_eq!(nodes(true) + nodes(false), 8, "{low_priority}: {r:#}");
        assert!(
            nodes(true) * 24 <= u64::from(low_priority),
            "{low_priority}: {r:#}"
        );
        // Spot as far as the quota goes (one 24-vCPU node each).
        assert_eq!(
            nodes(true),
            u64::from(low_priority / 24).min(8),
            "{low_priority}: {r:#}"
        );
        assert!(r["total_monthly_cost_usd"].as_f64().expect("total") <= 7_640.0);
        tight(&r);
    }
}

/// A workload only some of whose replicas are warm and steady (2 of up to 8, 4 typically) is
/// split too. Kueue fills a team's flavors in the order of its pools, so the warm replicas
/// are in the pool that comes first, and its flavor is the team's first: $1,913.06, where
/// moving it whole off spot cost $1,939.93.
#[test]
fn a_partly_steady_workload_splits_with_its_warm_replicas_first() {
    let text = l4_batch("replicas = { min = 2, max = 8 }\ntypical_replicas = 4");
    let r = recommendation(&text);
    let (spot, _) = split_pools(&r, 8);
    assert_eq!(spot["nodes"]["max"], 4, "{r:#}");
    assert_eq!(r["total_monthly_cost_usd"], 1_913.06, "{r:#}");
    let pools = r["pools"].as_array().expect("pools");
    let warm: Vec<u64> = pools
        .iter()
        .map(|p| p["nodes"]["min"].as_u64().expect("min"))
        .collect();
    assert_eq!(
        warm,
        [2, 0],
        "the first pool keeps the warm replicas: {r:#}"
    );
    let (_dir, out) = common::rendered(&text, &[]);
    let kueue = std::fs::read_to_string(out.join("kueue/us-east-1.yaml")).expect("kueue");
    let first = kueue
        .split("flavors:")
        .nth(1)
        .and_then(|f| f.lines().find_map(|l| l.trim().strip_prefix("- name: ")))
        .expect("a flavor");
    assert_eq!(
        first.trim_matches('"'),
        pools[0]["name"].as_str().expect("name"),
        "{kueue}"
    );
}

/// Two batch workloads of eight L4 nodes each where the G spot quota (L-3819A6DF) holds one
/// of them: one runs on spot, the other off it, and the bound agrees (LP with the quota's row).
#[test]
fn a_spot_quota_for_one_of_two_workloads_splits_them() {
    let batch = |name: &str| {
        format!("name = \"{name}\"\nteam = \"search\"\nkind = \"batch\"\nreplicas = 8\ngpus = 1\nskus = [\"g6.xlarge\"]\ninterruptible = true\ncheckpoint_minutes = 10\n")
    };
    let text = plan(
        "aws",
        "us-east-1",
        &format!("{}\n[[workload]]\n{}", batch("embed-a"), batch("embed-b")),
        &[("L-3819A6DF", 32), ("L-DB2E81BA", 64)],
    );
    let r = recommendation(&text);
    let capacities: Vec<&str> = r["pools"]
        .as_array()
        .expect("pools")
        .iter()
        .map(|p| p["capacity"].as_str().expect("capacity"))
        .collect();
    assert_eq!(
        capacities.iter().filter(|c| **c == "spot").count(),
        1,
        "{r:#}"
    );
    assert_eq!(capacities.len(), 2, "{r:#}");
    tight(&r);
}

/// No spot at all (Azure `lowPriorityCores` 0): on-demand, and a bound on that fleet.
#[test]
fn a_spot_quota_of_zero_bounds_the_on_demand_fleet() {
    let text = plan(
        "azure",
        "swedencentral",
        "name = \"eval\"\nteam = \"research\"\nkind = \"evaluation\"\nhours_per_month = 200\nreplicas = 8\ngpus = 1\ngpu_models = [\"A100-80GB\"]\ninterruptible = true\ncheckpoint_minutes = 10\n",
        &[("lowPriorityCores", 0)],
    );
    let (r, pool) = recommended(&text);
    assert_eq!(pool["capacity"], "on-demand", "{pool:#}");
    tight(&r);
}

/// Issue 71: one on-demand inference workload of 4 one-GPU replicas, Azure eastus and westus2,
/// with a T4 family quota of `eastus_vcpus` in eastus and none in westus2.
fn t4_quota(eastus_vcpus: u32) -> String {
    format!(
        "version = 1\n\n[plan]\nname = \"q\"\nowner = \"platform\"\nprovider = \"azure\"\nregions = [\"eastus\", \"westus2\"]\n\n[[workload]]\nname = \"api\"\nteam = \"a\"\nkind = \"inference\"\ngpus = 1\nreplicas = 4\n\n[[quota]]\nregion = \"eastus\"\nfamily = \"standardNCASv3_T4Family\"\nvcpus = {eastus_vcpus}\n\n[[quota]]\nregion = \"westus2\"\nfamily = \"standardNCASv3_T4Family\"\nvcpus = 0\n"
    )
}

/// A quota that holds part of an on-demand workload splits it as it splits spot work: with 8
/// vCPUs, two replicas on 2 x NC4as_T4_v3 (8 vCPUs, $0.526/h) and two on NV36ads_A10_v5
/// ($3.20/h): 2 x 0.526 x 730 + 2 x 3.20 x 730 = $5,439.96, where the whole workload on A10
/// was $9,344.00 and printed as the bound. With 12 vCPUs three stay on T4: $3,487.94.
#[test]
fn an_on_demand_workload_larger_than_its_quota_keeps_what_the_quota_holds() {
    for (vcpus, cost, t4_nodes) in [(8, 5_439.96, 2), (12, 3_487.94, 3)] {
        let r = recommendation(&t4_quota(vcpus));
        assert_eq!(r["total_monthly_cost_usd"], cost, "{r:#}");
        tight(&r);
        let pools = r["pools"].as_array().expect("pools");
        let t4 = pools
            .iter()
            .find(|p| p["sku"] == "Standard_NC4as_T4_v3")
            .expect("a T4 pool");
        assert_eq!(t4["region"], "eastus", "{t4:#}");
        assert_eq!(t4["nodes"]["max"], t4_nodes, "{t4:#}");
        assert!(
            t4["why"].as_str().expect("why").contains("split by quota"),
            "{t4:#}"
        );
    }
}

/// A quota that holds not one node of the cheaper sizes closes them; the why-line says so and
/// the alternatives list them with what the pool would cost there, and the quota.
#[test]
fn sizes_a_quota_closed_are_named_with_what_they_would_cost() {
    let (r, pool) = recommended(&t4_quota(0));
    assert_eq!(pool["sku"], "Standard_NV36ads_A10_v5", "{r:#}");
    assert_eq!(r["total_monthly_cost_usd"], 9_344.0, "{r:#}");
    let why = pool["why"].as_str().expect("why");
    assert!(
        why.contains("a known quota closed")
            && why.contains(
                "on Standard_NC4as_T4_v3 in eastus the pool would cost $7,808.08 a month less"
            ),
        "{why}"
    );
    let closed: Vec<&serde_json::Value> = pool["considered"]
        .as_array()
        .expect("considered")
        .iter()
        .filter(|a| a["kind"] == "quota-closed")
        .collect();
    assert!(!closed.is_empty() && closed.len() <= 3, "{pool:#}");
    assert_eq!(closed[0]["sku"], "Standard_NC4as_T4_v3", "{pool:#}");
    // 4 x 730 h x $0.526.
    assert_eq!(closed[0]["monthly_cost_usd"], 1_535.92, "{pool:#}");
    assert!(
        closed[0]["note"]
            .as_str()
            .expect("note")
            .contains("`standardNCASv3_T4Family` needed in eastus, quota 0"),
        "{pool:#}"
    );
}
