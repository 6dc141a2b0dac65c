//! A model of what a cluster does with the rendered files, written from the upstream sources,
//! applied to every example plan and fixture: GPU nodes run the GPU Operator's operands, and
//! the operator leaves AKS-managed MIG alone.
//!
//! - Taints and tolerations: kubernetes `staging/src/k8s.io/api/core/v1/toleration.go`
//!   (`Toleration.ToleratesTaint`): the effect matches when the toleration's is empty or
//!   equal; the key when the toleration's is empty (with `Exists`) or equal; `Exists`
//!   ignores the value, `Equal` (the default) compares it.
//! - The operands' DaemonSets take `daemonsets.tolerations`, NFD's worker
//!   `node-feature-discovery.worker.tolerations` (gpu-operator `deployments/gpu-operator/
//!   values.yaml`, copied to tests/fixtures/conformance); Helm replaces a list value rather than
//!   merging it, so a rendered list is the whole list.
//! - gpu-operator `controllers/nodelabeling_controller.go`: with the MIG manager enabled, a
//!   MIG-capable node without `nvidia.com/mig.config` is labelled with the default config
//!   (`all-disabled`), which the MIG manager then applies.

mod common;

use std::collections::BTreeMap;
use std::path::Path;

use serde_yaml::Value;

#[derive(Debug, Clone)]
struct Taint {
    key: String,
    value: String,
    effect: String,
}

#[derive(Debug)]
struct NodePool {
    name: String,
    taints: Vec<Taint>,
    labels: BTreeMap<String, String>,
    /// AKS `gpu_instance` (MIG1g ... MIG7g): AKS partitions these nodes itself.
    gpu_instance: Option<String>,
}

/// `ToleratesTaint` of core/v1 toleration.go.
fn tolerates(t: &Value, taint: &Taint) -> bool {
    let s = |k: &str| t.get(k).and_then(Value::as_str).unwrap_or("");
    let effect_ok = s("effect").is_empty() || s("effect") == taint.effect;
    let key_ok = s("key").is_empty() || s("key") == taint.key;
    let value_ok = match s("operator") {
        "Exists" => true,
        "" | "Equal" => s("value") == taint.value,
        _ => false,
    };
    effect_ok && key_ok && value_ok && !(s("key").is_empty() && s("operator") != "Exists")
}

fn string_of(e: &hcl_edit::expr::Expression) -> Option<String> {
    match e {
        hcl_edit::expr::Expression::String(s) => Some(s.value().to_string()),
        _ => None,
    }
}

/// Every GPU node pool of a rendered main.tf, with the taints and labels its nodes carry.
fn node_pools(tf: &str) -> Vec<NodePool> {
    let body: hcl_edit::structure::Body = tf.parse().expect("hcl");
    let mut out = Vec::new();
    for block in body.get_blocks("resource") {
        let kind = block.labels.first().map(|l| l.as_str().to_owned());
        let name = block
            .labels
            .get(1)
            .map(|l| l.as_str().to_owned())
            .unwrap_or_default();
        let attr = |k: &str| block.body.get_attribute(k).map(|a| a.value.clone());
        let object = |k: &str| -> BTreeMap<String, String> {
            let mut m = BTreeMap::new();
            if let Some(hcl_edit::expr::Expression::Object(o)) = attr(k) {
                for (key, v) in o.iter() {
                    let key = match key {
                        hcl_edit::expr::ObjectKey::Ident(i) => i.as_str().to_owned(),
                        hcl_edit::expr::ObjectKey::Expression(e) => {
                            string_of(e).unwrap_or_default()
                        }
                    };
                    if let Some(s) = string_of(v.expr()) {
                        m.insert(key, s);
                    }
                }
            }
            m
        };
        match kind.as_deref() {
            Some("azurerm_kubernetes_cluster_node_pool") => {
                let mut taints = Vec::new();
                if let Some(hcl_edit::expr::Expression::Array(a)) = attr("node_taints") {
                    for e in a.iter() {
                        let spec = string_of(e).expect("a taint is a string");
                        let (kv, effect) = spec.rsplit_once(':').expect("key=value:Effect");
                        let (key, value) = kv.split_once('=').unwrap_or((kv, ""));
                        taints.push(Taint {
                            key: key.into(),
                            value: value.into(),
                            effect: effect.into(),
                        });
                    }
                }
                out.push(NodePool {
                    name,
                    taints,
                    labels: object("node_labels"),
                    gpu_instance: attr("gpu_instance").as_ref().and_then(string_of),
                });
            }
            Some("aws_eks_node_group") => {
                let mut taints = Vec::new();
                for t in block.body.get_blocks("taint") {
                    let s = |k: &str| {
                        t.body
                            .get_attribute(k)
                            .and_then(|a| string_of(&a.value))
                            .unwrap_or_default()
                    };
                    let effect = match s("effect").as_str() {
                        "NO_EXECUTE" => "NoExecute",
                        "PREFER_NO_SCHEDULE" => "PreferNoSchedule",
                        _ => "NoSchedule",
                    };
                    taints.push(Taint {
                        key: s("key"),
                        value: s("value"),
                        effect: effect.into(),
                    });
                }
                out.push(NodePool {
                    name,
                    taints,
                    labels: object("labels"),
                    gpu_instance: None,
                });
            }
            _ => {}
        }
    }
    out
}

/// The rendered Terraform and operator values, or `None` for a plan that cannot be met (the
/// trap-laden examples: render refuses them, exit 1, and writes nothing).
fn try_render(plan: &Path, dir: &Path, extra: &[&str]) -> Option<(String, Value)> {
    let out = common::gpuplan(Path::new("/nonexistent/gpuplan-test-cache"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["--quiet", "render"])
        .arg(plan)
        .arg("--out")
        .arg(dir)
        .args(extra)
        .output()
        .expect("runs");
    match out.status.code() {
        Some(0) => Some(render_files(dir)),
        Some(1) => None,
        _ => panic!(
            "{}: {}",
            plan.display(),
            String::from_utf8_lossy(&out.stderr)
        ),
    }
}

fn render(plan: &Path, dir: &Path, extra: &[&str]) -> (String, Value) {
    try_render(plan, dir, extra).expect("renders")
}

fn render_files(dir: &Path) -> (String, Value) {
    let tf = std::fs::read_to_string(dir.join("terraform/main.tf")).expect("main.tf");
    let values =
        std::fs::read_to_string(dir.join("helm/gpu-operator-values.yaml")).expect("values");
    (tf, serde_yaml::from_str(&values).expect("yaml"))
}

fn list<'a>(values: &'a Value, chart: &'a Value, path: &[&str]) -> &'a Vec<Value> {
    // The rendered list replaces the chart's whole (Helm lists are not merged).
    let find = |v: &'a Value| path.iter().try_fold(v, |cur, k| cur.get(*k));
    find(values)
        .or_else(|| find(chart))
        .and_then(Value::as_sequence)
        .expect("a toleration list")
}

fn plans() -> Vec<std::path::PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut out = Vec::new();
    for dir in ["plans", "tests/fixtures/render"] {
        for e in std::fs::read_dir(root.join(dir)).expect("dir").flatten() {
            if e.path().extension().is_some_and(|x| x == "toml") {
                out.push(e.path());
            }
        }
    }
    out.sort();
    out
}

#[test]
fn every_gpu_node_runs_the_operators_operands_and_aks_mig_is_never_reset() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let chart: Value = serde_yaml::from_str(
        &std::fs::read_to_string(root.join("tests/fixtures/conformance/gpu-operator-values.yaml"))
            .expect("chart"),
    )
    .expect("chart yaml");
    let mut checked = 0;
    for plan in plans() {
        for extra in [&[][..], &["--karpenter"][..]] {
            let dir = tempfile::tempdir().expect("tmp");
            let Some((tf, values)) = try_render(&plan, dir.path(), extra) else {
                continue;
            };
            let daemonsets = list(&values, &chart, &["daemonsets", "tolerations"]);
            let nfd = list(
                &values,
                &chart,
                &["node-feature-discovery", "worker", "tolerations"],
            );
            // Tolerating everything would make every other node's taints meaningless.
            for t in daemonsets.iter().chain(nfd) {
                assert!(
                    t.get("key")
                        .and_then(Value::as_str)
                        .is_some_and(|k| !k.is_empty()),
                    "{}: a toleration without a key tolerates every taint: {t:?}",
                    plan.display()
                );
            }
            let pools = node_pools(&tf);
            let mig_manager = values
                .get("migManager")
                .and_then(|m| m.get("enabled"))
                .and_then(Value::as_bool)
                .unwrap_or(true);
            let mig_configs: Value = values
                .get("migManager")
                .and_then(|m| m.get("config"))
                .and_then(|c| c.get("data"))
                .and_then(|d| d.get("config.yaml"))
                .and_then(Value::as_str)
                .map(|s| serde_yaml::from_str(s).expect("mig-parted yaml"))
                .unwrap_or(Value::Null);
            for pool in &pools {
                checked += 1;
                for taint in &pool.taints {
                    for (what, list) in [("operand DaemonSets", daemonsets), ("NFD worker", nfd)] {
                        assert!(
                            list.iter().any(|t| tolerates(t, taint)),
                            "{} {extra:?}: pool `{}` taint {taint:?} is not tolerated by the {what}: the node never runs the GPU stack",
                            plan.display(),
                            pool.name
                        );
                    }
                }
                let Some(instance) = &pool.gpu_instance else {
                    continue;
                };
                if !mig_manager {
                    continue;
                }
                // The MIG manager runs: this AKS pool must carry a config that is exactly its
                // geometry, or the node labeller gives it all-disabled.
                let config = pool.labels.get("nvidia.com/mig.config").unwrap_or_else(|| {
                    panic!(
                        "{}: AKS MIG pool `{}` ({instance}) has no nvidia.com/mig.config while the MIG manager runs: it would be reset to all-disabled",
                        plan.display(),
                        pool.name
                    )
                });
                let entries = mig_configs
                    .get("mig-configs")
                    .and_then(|m| m.get(config.as_str()))
                    .and_then(Value::as_sequence)
                    .unwrap_or_else(|| {
                        panic!(
                            "{}: config `{config}` is not in the MIG manager's ConfigMap",
                            plan.display()
                        )
                    });
                let slices: String = instance
                    .trim_start_matches("MIG")
                    .trim_end_matches('g')
                    .to_owned();
                assert!(
                    entries.len() == 1
                        && entries[0]["devices"] == "all"
                        && entries[0]["mig-enabled"] == true
                        && entries[0]["mig-devices"]
                            .as_mapping()
                            .is_some_and(|m| m.len() == 1
                                && m.keys().all(|k| k
                                    .as_str()
                                    .is_some_and(|k| k.starts_with(&format!("{slices}g."))))),
                    "{}: `{config}` is not the AKS geometry {instance}: {entries:?}",
                    plan.display()
                );
            }
        }
    }
    assert!(checked >= 20, "only {checked} node pools checked");
}

#[test]
fn a_cluster_of_aks_and_operator_mig_keeps_each_pools_geometry() {
    // One AKS-managed MIG pool beside one the GPU Operator partitions: the MIG manager must
    // run, and the AKS pool must be labelled with its own geometry.
    let dir = tempfile::tempdir().expect("tmp");
    let plan = dir.path().join("mixed.toml");
    std::fs::write(
        &plan,
        r#"version = 1
[plan]
name = "mixed"
owner = "o"
provider = "azure"
regions = ["eastus"]

[cluster]
mig_manager = "aks"

[[workload]]
name = "chat"
team = "a"
kind = "inference"
gpu_fraction = 0.4
sharing = "mig"
replicas = 2
gpu_models = ["A100-80GB"]

[[workload]]
name = "eval"
team = "b"
kind = "evaluation"
gpu_fraction = 0.1
sharing = "mig"
replicas = 3
gpu_models = ["A100-80GB"]

[[pool]]
name = "eval-mig"
sku = "Standard_NC24ads_A100_v4"
region = "eastus"
nodes = { min = 0, max = 2 }
sharing = "mig"
mig_manager = "gpu-operator"
workloads = ["eval"]
"#,
    )
    .expect("plan");
    let out = dir.path().join("out");
    let (tf, values) = render(&plan, &out, &[]);
    assert_ne!(
        values["migManager"].get("enabled").and_then(Value::as_bool),
        Some(false)
    );
    let pools = node_pools(&tf);
    let aks: Vec<&NodePool> = pools.iter().filter(|p| p.gpu_instance.is_some()).collect();
    assert!(!aks.is_empty(), "{pools:?}");
    for p in aks {
        let cfg = p.labels.get("nvidia.com/mig.config").expect("labelled");
        assert!(cfg.starts_with("gpuplan-aks-"), "{cfg}");
    }
}

#[test]
fn an_aks_spot_gang_is_autoscaled_so_evicted_nodes_come_back() {
    // With `eviction_policy = "Delete"` an evicted spot node is gone from the scale set; only
    // the cluster autoscaler adds it back, so a fixed-size spot gang pool must still be
    // autoscaled (min = max). Its nodes carry AKS's spot taint, which the operator tolerates.
    let dir = tempfile::tempdir().expect("tmp");
    let plan = dir.path().join("gang.toml");
    std::fs::write(
        &plan,
        r#"version = 1
[plan]
name = "gang"
owner = "o"
provider = "azure"
regions = ["eastus"]

[[workload]]
name = "pretrain"
team = "f"
kind = "training"
nodes = 4
gpus = 8
interruptible = true
checkpoint_minutes = 30
skus = ["Standard_ND96isr_H100_v5"]

[[pool]]
name = "gang-spot"
sku = "Standard_ND96isr_H100_v5"
region = "eastus"
nodes = 4
capacity = "spot"
workloads = ["pretrain"]
"#,
    )
    .expect("plan");
    let out = dir.path().join("out");
    let (tf, values) = render(&plan, &out, &["--declared"]);
    let body: hcl_edit::structure::Body = tf.parse().expect("hcl");
    let pool = body
        .get_blocks("resource")
        .find(|b| {
            b.labels.first().map(|l| l.as_str()) == Some("azurerm_kubernetes_cluster_node_pool")
        })
        .expect("node pool");
    let attr = |k: &str| {
        pool.body
            .get_attribute(k)
            .map(|a| a.value.to_string().trim().to_owned())
    };
    assert_eq!(
        attr("auto_scaling_enabled").as_deref(),
        Some("true"),
        "{tf}"
    );
    assert_eq!(attr("min_count").as_deref(), Some("4"));
    assert_eq!(attr("max_count").as_deref(), Some("4"));
    assert!(attr("node_count").is_none());
    let spot = Taint {
        key: "kubernetes.azure.com/scalesetpriority".into(),
        value: "spot".into(),
        effect: "NoSchedule".into(),
    };
    let daemonsets = values["daemonsets"]["tolerations"]
        .as_sequence()
        .expect("list");
    assert!(daemonsets.iter().any(|t| tolerates(t, &spot)), "{values:?}");
}
