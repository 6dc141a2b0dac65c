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
//! - What a node advertises: NVIDIA/k8s-device-plugin `docs` and `api/config/v1` (a named
//!   config chosen by the node's `nvidia.com/device-plugin.config` label; `timeSlicing` or
//!   `mps` with `replicas` advertises GPUs x replicas, under its own name while
//!   `renameByDefault` is false; the `mixed` MIG strategy advertises each MIG instance as
//!   `nvidia.com/mig-<profile>`, `single` as `nvidia.com/gpu`); NVIDIA/mig-parted
//!   `examples/config.yaml` (a config is a list of `devices` (`all` or indices) with
//!   `mig-devices` per GPU); AKS `gpu_instance` creates every instance of its profile that a
//!   GPU holds, each one `nvidia.com/gpu` (single strategy).

use crate::common;

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
                // The kubelet labels every node with its size (a well-known label).
                let mut labels = object("node_labels");
                if let Some(size) = attr("vm_size").as_ref().and_then(string_of) {
                    labels.insert("node.kubernetes.io/instance-type".into(), size);
                }
                out.push(NodePool {
                    name,
                    taints,
                    labels,
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
                let mut labels = object("labels");
                if let Some(hcl_edit::expr::Expression::Array(a)) = attr("instance_types") {
                    if let Some(size) = a.iter().next().and_then(string_of) {
                        labels.insert("node.kubernetes.io/instance-type".into(), size);
                    }
                }
                out.push(NodePool {
                    name,
                    taints,
                    labels,
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
    try_render_as(plan, dir, extra, false)
}

/// [`try_render`]; with `loose`, a plan that does not load (exit 2, a generated combination
/// the validator refuses) is skipped as well.
fn try_render_as(plan: &Path, dir: &Path, extra: &[&str], loose: bool) -> Option<(String, Value)> {
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
        Some(2) if loose => None,
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

/// A node kind of a rendered cluster: its labels, its taints (`key=value:Effect`) and AKS's
/// `gpu_instance`, from a Terraform node pool or a Karpenter NodePool's template.
struct NodeKind {
    labels: BTreeMap<String, String>,
    taints: Vec<Taint>,
    gpu_instance: Option<String>,
}

/// What one node of a kind advertises, per extended resource, under the rendered device-plugin
/// and MIG configs (see the module's sources).
fn advertised(
    node: &NodeKind,
    gpus: f64,
    aks_instances: f64,
    values: &Value,
) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    if node.gpu_instance.is_some() {
        out.insert("nvidia.com/gpu".to_owned(), gpus * aks_instances);
        return out;
    }
    let strategy = values["mig"]["strategy"].as_str().unwrap_or("single");
    if let Some(cfg) = node.labels.get("nvidia.com/mig.config") {
        let configs: Value = values["migManager"]["config"]["data"]["config.yaml"]
            .as_str()
            .map(|s| serde_yaml::from_str(s).expect("mig-parted yaml"))
            .unwrap_or(Value::Null);
        for entry in configs["mig-configs"][cfg.as_str()]
            .as_sequence()
            .expect("the node's mig-parted config")
        {
            if entry["mig-enabled"] != true {
                continue;
            }
            let devices = match &entry["devices"] {
                Value::Sequence(d) => d.len() as f64,
                _ => gpus,
            };
            for (profile, n) in entry["mig-devices"].as_mapping().into_iter().flatten() {
                let name = if strategy == "mixed" {
                    format!("nvidia.com/mig-{}", profile.as_str().unwrap_or(""))
                } else {
                    "nvidia.com/gpu".to_owned()
                };
                *out.entry(name).or_default() += devices * n.as_f64().unwrap_or(0.0);
            }
        }
        return out;
    }
    let mut replicas = 1.0;
    if let Some(name) = node.labels.get("nvidia.com/device-plugin.config") {
        let cfg: Value = serde_yaml::from_str(
            values["devicePlugin"]["config"]["data"][name.as_str()]
                .as_str()
                .expect("the node's device-plugin config"),
        )
        .expect("device-plugin yaml");
        let sharing = &cfg["sharing"];
        let kind = if sharing["timeSlicing"].is_mapping() {
            &sharing["timeSlicing"]
        } else {
            &sharing["mps"]
        };
        assert_ne!(kind["renameByDefault"], true, "pods ask for nvidia.com/gpu");
        for r in kind["resources"].as_sequence().into_iter().flatten() {
            if r["name"] == "nvidia.com/gpu" {
                replicas = r["replicas"].as_f64().unwrap_or(1.0);
            }
        }
    }
    out.insert("nvidia.com/gpu".to_owned(), gpus * replicas);
    out
}

/// The Karpenter NodePools of a render, as node kinds.
fn karpenter_kinds(dir: &Path) -> Vec<NodeKind> {
    let Ok(text) = std::fs::read_to_string(dir.join("karpenter/karpenter.yaml")) else {
        return Vec::new();
    };
    common::k8s::docs(&text)
        .into_iter()
        .filter(|o| o["kind"] == "NodePool")
        .flat_map(|o| {
            // One kind per instance type the NodePool may start, labelled with it as the
            // kubelet labels the node Karpenter launches.
            let sizes: Vec<String> = o["spec"]["template"]["spec"]["requirements"]
                .as_sequence()
                .into_iter()
                .flatten()
                .filter(|r| r["key"] == "node.kubernetes.io/instance-type")
                .flat_map(|r| r["values"].as_sequence().cloned().unwrap_or_default())
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect();
            sizes.into_iter().map(move |size| (o.clone(), size))
        })
        .map(|(o, size)| {
            let t = &o["spec"]["template"];
            NodeKind {
                labels: t["metadata"]["labels"]
                    .as_mapping()
                    .into_iter()
                    .flatten()
                    .map(|(k, v)| {
                        (
                            k.as_str().unwrap_or("").to_owned(),
                            v.as_str().unwrap_or("").to_owned(),
                        )
                    })
                    .chain([("node.kubernetes.io/instance-type".to_owned(), size)])
                    .collect(),
                taints: t["spec"]["taints"]
                    .as_sequence()
                    .into_iter()
                    .flatten()
                    .map(|x| Taint {
                        key: x["key"].as_str().unwrap_or("").to_owned(),
                        value: x["value"].as_str().unwrap_or("").to_owned(),
                        effect: x["effect"].as_str().unwrap_or("").to_owned(),
                    })
                    .collect(),
                gpu_instance: None,
            }
        })
        .collect()
}

/// Every workload's pods, as `workloads/values.yaml` gives them, land only on nodes of a pool
/// the recommendation planned for them (their selector and tolerations admit no other), and
/// fit one such node: it advertises the GPU resource they ask for, as many as they ask.
#[test]
fn every_workload_fits_a_node_of_its_planned_pool_and_no_other() {
    // Every example and fixture, and plans generated as the invariant tests generate them.
    let gen_dir = tempfile::tempdir().expect("tmp");
    let mut all = plans();
    for seed in 1..=24u64 {
        let make = if seed % 2 == 0 {
            common::gen::generated
        } else {
            common::gen::generated_wide
        };
        let p = gen_dir.path().join(format!("gen-{seed}.toml"));
        std::fs::write(&p, make(seed)).expect("plan");
        all.push(p);
    }
    let (mut checked, mut rendered_generated) = (0, 0);
    for plan in all {
        let loose = plan.starts_with(gen_dir.path());
        for extra in [&[][..], &["--karpenter"][..]] {
            let dir = tempfile::tempdir().expect("tmp");
            let Some((tf, values)) = try_render_as(&plan, dir.path(), extra, loose) else {
                continue;
            };
            rendered_generated += usize::from(loose);
            let rec: serde_json::Value = crate::common::contract(
                &common::gpuplan(Path::new("/nonexistent/gpuplan-test-cache"))
                    .current_dir(env!("CARGO_MANIFEST_DIR"))
                    .args(["recommend", "--format", "json"])
                    .arg(&plan)
                    .output()
                    .expect("recommend")
                    .stdout,
            )
            .expect("recommendation");
            let pools = rec["pools"].as_array().expect("pools");
            let mut kinds: Vec<NodeKind> = node_pools(&tf)
                .into_iter()
                .map(|p| NodeKind {
                    labels: p.labels,
                    taints: p.taints,
                    gpu_instance: p.gpu_instance,
                })
                .collect();
            kinds.extend(karpenter_kinds(dir.path()));
            let workloads: Value = serde_yaml::from_str(
                &std::fs::read_to_string(dir.path().join("workloads/values.yaml"))
                    .expect("workloads"),
            )
            .expect("yaml");
            for (w, pod) in workloads.as_mapping().into_iter().flatten() {
                let w = w.as_str().expect("name");
                let planned: Vec<&serde_json::Value> = pools
                    .iter()
                    .filter(|p| {
                        p["workloads"]
                            .as_array()
                            .is_some_and(|a| a.iter().any(|x| x == w))
                    })
                    .collect();
                assert!(!planned.is_empty(), "{}: {w} in no pool", plan.display());
                let tolerations: Vec<Value> = pod["tolerations"]
                    .as_sequence()
                    .cloned()
                    .unwrap_or_default();
                let selects =
                    |k: &NodeKind| {
                        let by_selector =
                            pod["nodeSelector"].as_mapping().into_iter().flatten().all(
                                |(key, v)| {
                                    k.labels.get(key.as_str().unwrap_or("")).map(String::as_str)
                                        == v.as_str()
                                },
                            );
                        // Every `In` expression of the (single) required term: the pool for a
                        // split workload, the mig-parted configs holding its MIG profile.
                        let by_affinity = pod["affinity"]["nodeAffinity"]
                            ["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
                            [0]["matchExpressions"]
                            .as_sequence()
                            .into_iter()
                            .flatten()
                            .all(|e| {
                                assert_eq!(e["operator"], "In", "{e:?}");
                                let have = k.labels.get(e["key"].as_str().unwrap_or(""));
                                e["values"].as_sequence().is_some_and(|vs| {
                                    vs.iter().any(|v| have.map(String::as_str) == v.as_str())
                                })
                            });
                        let tolerated = k.taints.iter().all(|t| {
                            !matches!(t.effect.as_str(), "NoSchedule" | "NoExecute")
                                || tolerations.iter().any(|x| tolerates(x, t))
                        });
                        by_selector && by_affinity && tolerated
                    };
                let reachable: Vec<&NodeKind> = kinds.iter().filter(|k| selects(k)).collect();
                assert!(
                    !reachable.is_empty(),
                    "{} {extra:?}: no node admits {w}",
                    plan.display()
                );
                let limits = pod["resources"]["limits"].as_mapping().expect("limits");
                let (resource, count) = limits
                    .iter()
                    .find(|(k, _)| k.as_str().is_some_and(|k| k.starts_with("nvidia.com/")))
                    .map(|(k, v)| {
                        (
                            k.as_str().unwrap_or("").to_owned(),
                            v.as_f64().unwrap_or(0.0),
                        )
                    })
                    .expect("a GPU resource");
                // Whether each reachable node kind can host a replica: it advertises the GPU
                // resource the pod asks for, as many as it asks.
                let hosts: Vec<(&NodeKind, bool)> = reachable
                    .iter()
                    .map(|k| {
                        // The pool the kind's label names; of a pool of several node
                        // sizes, the size the kind is.
                        let name = k.labels.get("gpuplan.io/pool").cloned().unwrap_or_default();
                        let size = k.labels.get("node.kubernetes.io/instance-type");
                        let p = planned
                            .iter()
                            .find(|p| {
                                p["pool_label"] == name.as_str()
                                    && size.is_none_or(|s| p["sku"] == s.as_str())
                            })
                            .unwrap_or_else(|| {
                                panic!(
                                    "{} {extra:?}: {w} can land on `{name}`, not a pool planned for it",
                                    plan.display()
                                )
                            });
                        let gpus = p["gpus_per_node"].as_f64().unwrap_or(0.0);
                        let aks = p["mig_layout"]
                            .as_object()
                            .map_or(1.0, |l| l.values().filter_map(|n| n.as_f64()).sum());
                        let have = advertised(k, gpus, aks, &values);
                        (*k, have.get(&resource).copied().unwrap_or(0.0) >= count)
                    })
                    .collect();
                assert!(
                    hosts.iter().any(|(_, ok)| *ok),
                    "{} {extra:?}: no node of {w}'s pool advertises {count} {resource}",
                    plan.display()
                );
                // A strict spread over hostnames counts every node the pod may use
                // (kubernetes `pkg/scheduler/framework/plugins/podtopologyspread`: with
                // nodeAffinityPolicy Honor, the nodes its selector and affinity admit; with
                // nodeTaintsPolicy Honor, those whose taints it tolerates). Each such node
                // must be able to host a replica, or the skew strands replicas (issue 41).
                let strict = pod["topologySpreadConstraints"]
                    .as_sequence()
                    .into_iter()
                    .flatten()
                    .any(|c| c["whenUnsatisfiable"] == "DoNotSchedule");
                if let (true, Some((k, _))) = (strict, hosts.iter().find(|(_, ok)| !*ok)) {
                    panic!(
                        "{} {extra:?}: {w}'s strict spread counts a node of `{}` ({:?}) that advertises no {resource}: replicas strand",
                        plan.display(),
                        k.labels.get("gpuplan.io/pool").cloned().unwrap_or_default(),
                        k.labels.get("nvidia.com/mig.config")
                    );
                }
                checked += 1;
            }
        }
    }
    assert!(checked >= 20, "only {checked} workloads checked");
    // Plain and with --karpenter: most of the 24 generated plans render.
    assert!(
        rendered_generated >= 24,
        "only {rendered_generated} generated renders"
    );
}
