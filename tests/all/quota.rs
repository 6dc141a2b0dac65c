//! Issue 55: quota is a constraint of the fleet, never a failure where something fits. Spot
//! has a quota of its own; where it is too small for spot, the same nodes on-demand (or the
//! next cheapest capacity that fits) are recommended, the why-line names the quota that
//! closed spot, and `render` writes the fleet.

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
fn recommendation(text: &str) -> serde_json::Value {
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

/// L4 batch on spot needs 32 vCPUs of G spot quota (L-3819A6DF), which holds 16: the next
/// cheapest capacity that fits (a month-long fixed count reserves its nodes).
#[test]
fn batch_whose_spot_quota_is_too_small_runs_off_spot() {
    let text = plan(
        "aws",
        "us-east-1",
        "name = \"embed-batch\"\nteam = \"search\"\nkind = \"batch\"\nreplicas = 8\ngpus = 1\nskus = [\"g6.xlarge\"]\ninterruptible = true\ncheckpoint_minutes = 10\n",
        &[("L-3819A6DF", 16), ("L-DB2E81BA", 64)],
    );
    let (_, pool) = recommended(&text);
    assert_ne!(pool["capacity"], "spot", "{pool:#}");
    assert!(
        pool["why"]
            .as_str()
            .expect("why")
            .contains("32 vCPUs of `L-3819A6DF` in us-east-1, above its known quota of 16"),
        "{pool:#}"
    );
}

/// Azure's spot quota is the region's `lowPriorityCores`: 96 in swedencentral (where the
/// dated retail table has spot prices) cannot hold eight 24-vCPU A100 nodes on spot; the
/// family's on-demand quota can.
#[test]
fn azure_spot_beyond_low_priority_cores_runs_on_demand() {
    let text = plan(
        "azure",
        "swedencentral",
        "name = \"eval\"\nteam = \"research\"\nkind = \"evaluation\"\nhours_per_month = 200\nreplicas = 8\ngpus = 1\nskus = [\"Standard_NC24ads_A100_v4\"]\ninterruptible = true\ncheckpoint_minutes = 10\n",
        &[("lowPriorityCores", 96), ("standardNCADSA100v4Family", 192)],
    );
    let (_, pool) = recommended(&text);
    assert_eq!(pool["capacity"], "on-demand", "{pool:#}");
    assert_eq!(pool["nodes"]["max"], 8, "{pool:#}");
    // The bound splits the workload: four nodes on spot within the 96 cores, four on-demand
    // ($4,991.59); one workload keeps one pool here, so the gap is the price of that.
    let (r, _) = recommended(&text);
    let bound = r["lower_bound"]["monthly_cost_usd"]
        .as_f64()
        .expect("bound");
    assert!((4_900.0..5_000.0).contains(&bound), "{bound}");
    assert!(
        pool["why"].as_str().expect("why").contains(
            "192 vCPUs of `lowPriorityCores` in swedencentral, above its known quota of 96"
        ),
        "{pool:#}"
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
