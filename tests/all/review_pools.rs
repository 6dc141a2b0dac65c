//! Issue 56: the review of a plan that declares no pools knows the pools `render` makes of it.
//! Nodes carry only what render gave them (the AKS agent pool name, `gpuplan.io/pool` on
//! half): each is in the plan, priced, and its idle time costed, as for the same plan with its
//! pools declared (`recommend --write-plan`).

use crate::common;

use std::path::Path;

use serde_json::Value;

fn gpuplan() -> assert_cmd::Command {
    common::gpuplan(Path::new("/nonexistent/gpuplan-test-cache"))
}

/// (AKS agent pool name, gpuplan.io/pool) of every node pool render writes for `plan`.
fn node_pools(plan: &Path, out: &Path, extra: &[&str]) -> Vec<(String, String)> {
    gpuplan()
        .arg("render")
        .arg(plan)
        .args(extra)
        .arg("--out")
        .arg(out)
        .assert()
        .code(0);
    let tf = std::fs::read_to_string(out.join("terraform/main.tf")).expect("tf");
    let mut pools = Vec::new();
    let (mut in_pool, mut aks) = (false, None);
    for line in tf.lines() {
        let l = line.trim();
        if l.starts_with("resource \"azurerm_kubernetes_cluster_node_pool\"") {
            (in_pool, aks) = (true, None);
        } else if in_pool && l.starts_with("name ") {
            aks = l.split('"').nth(1).map(str::to_owned);
        } else if in_pool && l.starts_with("\"gpuplan.io/pool\"") {
            if let (Some(a), Some(p)) = (aks.clone(), l.split('"').nth(3)) {
                pools.push((a, p.to_owned()));
                in_pool = false;
            }
        }
    }
    pools
}

/// Two nodes per node pool, labelled as render's pools label them; one pod on the first node.
fn telemetry(pools: &[(String, String)]) -> String {
    let ts = |i: u32| 1_788_220_800 + i * 30;
    let mut s = String::from("# TYPE kube_node_status_allocatable gauge\n");
    let nodes: Vec<(String, &String, &String)> = pools
        .iter()
        .flat_map(|(a, p)| (0..2).map(move |k| (format!("{a}-{k}"), a, p)))
        .collect();
    for (n, _, _) in &nodes {
        for i in 0..40 {
            s.push_str(&format!("kube_node_status_allocatable{{node=\"{n}\",resource=\"nvidia_com_gpu\",unit=\"integer\"}} 1 {}\n", ts(i)));
        }
    }
    s.push_str("# TYPE kube_node_labels gauge\n");
    for (k, (n, aks, pool)) in nodes.iter().enumerate() {
        let own = if k % 2 == 0 {
            format!(",label_gpuplan_io_pool=\"{pool}\"")
        } else {
            String::new()
        };
        for i in 0..40 {
            s.push_str(&format!("kube_node_labels{{node=\"{n}\",label_kubernetes_azure_com_agentpool=\"{aks}\"{own}}} 1 {}\n", ts(i)));
        }
    }
    let node = &nodes[0].0;
    s.push_str("# TYPE kube_pod_container_resource_requests gauge\n");
    for i in 0..40 {
        s.push_str(&format!("kube_pod_container_resource_requests{{namespace=\"assistants\",pod=\"chat-api-1\",container=\"main\",node=\"{node}\",resource=\"nvidia_com_gpu\",unit=\"integer\"}} 1 {}\n", ts(i)));
    }
    s.push_str("# TYPE kube_pod_status_phase gauge\n");
    for i in 0..40 {
        s.push_str(&format!("kube_pod_status_phase{{namespace=\"assistants\",pod=\"chat-api-1\",phase=\"Running\"}} 1 {}\n", ts(i)));
    }
    s.push_str("# EOF\n");
    s
}

fn review(plan: &Path, om: &Path) -> Value {
    let out = gpuplan()
        .args(["review", "--format", "json"])
        .arg(plan)
        .arg("--metrics")
        .arg(om)
        .assert()
        .code(0)
        .get_output()
        .clone();
    common::contract(&out.stdout).expect("json")
}

#[test]
fn a_plan_without_pools_is_reviewed_against_the_pools_render_makes() {
    let dir = tempfile::tempdir().expect("tmp");
    // The example plan without its pools.
    let text = std::fs::read_to_string("plans/azure-inference.toml").expect("plan");
    let mut kept = String::new();
    let mut skip = false;
    for line in text.lines() {
        if line.starts_with("[[") {
            skip = line == "[[pool]]";
        }
        if !skip {
            kept.push_str(line);
            kept.push('\n');
        }
    }
    let bare = dir.path().join("bare.toml");
    std::fs::write(&bare, &kept).expect("bare");
    let pools = node_pools(&bare, &dir.path().join("out"), &[]);
    assert!(pools.len() >= 2, "{pools:?}");
    let om = dir.path().join("t.om");
    std::fs::write(&om, telemetry(&pools)).expect("om");
    let v = review(&bare, &om);
    let idle = v["idle_nodes"].as_array().expect("idle nodes");
    // Every node but perhaps the busy one (a MIG node with a slice held still idles the rest).
    assert!(idle.len() >= 2 * pools.len() - 1, "{v:#}");
    for n in idle {
        assert!(n["pool"].is_string(), "a node not in the plan: {n}");
        assert!(
            n["idle_cost_usd"].is_number(),
            "a node without a price: {n}"
        );
    }
    for p in v["pools"].as_array().expect("pools") {
        assert_eq!(p["in_plan"], true, "{p}");
        assert!(p["idle_cost_usd"].is_number(), "{p}");
    }
    // The same telemetry against the plan with those pools declared gives the same figures.
    let declared = dir.path().join("declared.toml");
    gpuplan()
        .arg("recommend")
        .arg(&bare)
        .arg("--write-plan")
        .arg(&declared)
        .assert()
        .code(0);
    let w = review(&declared, &om);
    for key in ["teams", "workloads", "pools", "idle_nodes", "idle_pools"] {
        common::prometheus::assert_close(&v[key], &w[key], key);
    }
}
