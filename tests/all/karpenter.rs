//! `render --karpenter`: a NodePool per pool with its EC2NodeClass (EKS) or AKSNodeClass (AKS
//! node auto-provisioning), validated against the Karpenter CRDs, and consistent with the rest
//! of the output: every Kueue flavor's labels and taints are those of a NodePool's nodes, the
//! limits are the pool's maximum, gangs and user-facing floors are shielded from
//! consolidation, and the disk follows the pool's models.

use crate::common;

use std::collections::BTreeMap;
use std::path::Path;

use common::k8s::{crd, docs, json};
use serde_yaml::Value;

fn gpuplan() -> assert_cmd::Command {
    common::gpuplan(Path::new("/nonexistent/gpuplan-test-cache"))
}

/// The rendered files of `plan` with `--karpenter`.
fn render(plan: &Path) -> BTreeMap<String, String> {
    let out = tempfile::tempdir().expect("tmp");
    gpuplan()
        .arg("render")
        .arg(plan)
        .arg("--out")
        .arg(out.path())
        .arg("--karpenter")
        .assert()
        .success();
    let root = out.path().display().to_string();
    common::tree(out.path())
        .into_iter()
        .map(|(p, t)| {
            (
                p.trim_start_matches(&root)
                    .trim_start_matches('/')
                    .to_owned(),
                t,
            )
        })
        .collect()
}

/// The most nodes the Terraform node group of a pool may have (`max_size`, `max_count` or
/// `node_count`), found by its `gpuplan-pool` tag; `None` when terraform/ has no such group.
fn tf_max_nodes(tf: &str, pool: &str) -> Option<u64> {
    let body: hcl_edit::structure::Body = tf.parse().expect("hcl");
    for block in body.get_blocks("resource") {
        let kind = block.labels.first().map(|l| l.as_str().to_owned());
        if !matches!(
            kind.as_deref(),
            Some("aws_eks_node_group" | "azurerm_kubernetes_cluster_node_pool")
        ) {
            continue;
        }
        let name = block
            .body
            .get_attribute("node_group_name")
            .or_else(|| block.body.get_attribute("name"))
            .map(|a| a.value.to_string())
            .unwrap_or_default();
        let tags = block
            .body
            .get_attribute("tags")
            .map(|a| a.value.to_string())
            .unwrap_or_default();
        if !name.contains(&format!("\"{pool}\"")) && !tags.contains(&format!("\"{pool}\"")) {
            continue;
        }
        let num = |b: &hcl_edit::structure::Body, k: &str| {
            b.get_attribute(k)
                .and_then(|a| a.value.to_string().trim().parse::<u64>().ok())
        };
        if let Some(sc) = block.body.get_blocks("scaling_config").next() {
            return num(&sc.body, "max_size");
        }
        return num(&block.body, "max_count").or_else(|| num(&block.body, "node_count"));
    }
    None
}

fn str_of(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => serde_yaml::to_string(other)
            .expect("yaml")
            .trim()
            .to_owned(),
    }
}

fn map_of(v: &Value) -> BTreeMap<String, String> {
    v.as_mapping()
        .map(|m| m.iter().map(|(k, v)| (str_of(k), str_of(v))).collect())
        .unwrap_or_default()
}

/// (key, value, effect) of a taint list.
fn taints(v: &Value) -> Vec<(String, String, String)> {
    let mut out: Vec<_> = v
        .as_sequence()
        .map(|s| {
            s.iter()
                .map(|t| (str_of(&t["key"]), str_of(&t["value"]), str_of(&t["effect"])))
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

/// The plans a platform team writes, on both providers, with gangs, spot, MIG and floors.
const PLANS: [&str; 7] = [
    "plans/aws-training.toml",
    "tests/fixtures/render/node-sizes.toml",
    "tests/fixtures/render/efa-gang.toml",
    "plans/azure-inference.toml",
    "tests/fixtures/render/capacity-block.toml",
    "tests/fixtures/render/operator-mig.toml",
    "tests/fixtures/render/ncv6-host-mig.toml",
];

#[test]
fn karpenter_objects_validate_and_match_the_flavors_and_pools() {
    let nodepool = crd("karpenter.sh_nodepools.yaml", "v1");
    let ec2 = crd("karpenter.k8s.aws_ec2nodeclasses.yaml", "v1");
    let aks = crd("karpenter.azure.com_aksnodeclasses.yaml", "v1beta1");
    for plan in PLANS {
        let files = render(Path::new(plan));
        let objects = docs(&files["karpenter/karpenter.yaml"]);
        let rec: serde_json::Value = crate::common::contract(
            &gpuplan()
                .args(["recommend", "--format", "json", plan])
                .output()
                .expect("recommend")
                .stdout,
        )
        .expect("recommendation");
        // Karpenter objects exactly where some pool has nodes above its floor that Karpenter
        // can launch (not MIG).
        let burst = rec["pools"].as_array().expect("pools").iter().any(|p| {
            p["sharing"] != "mig" && p["nodes"]["min"].as_u64() != p["nodes"]["max"].as_u64()
        });
        assert_eq!(!objects.is_empty(), burst, "{plan}: Karpenter objects");
        let mut classes: BTreeMap<(String, String), &Value> = BTreeMap::new();
        let mut pools: BTreeMap<String, &Value> = BTreeMap::new();
        for o in &objects {
            let kind = str_of(&o["kind"]);
            let (schema, api) = match kind.as_str() {
                "NodePool" => (&nodepool, "karpenter.sh/v1"),
                "EC2NodeClass" => (&ec2, "karpenter.k8s.aws/v1"),
                "AKSNodeClass" => (&aks, "karpenter.azure.com/v1beta1"),
                other => panic!("{plan}: unexpected kind {other}"),
            };
            assert_eq!(str_of(&o["apiVersion"]), api, "{plan}");
            let errors: Vec<String> = schema
                .iter_errors(&json(o))
                .map(|e| e.to_string())
                .collect();
            assert!(errors.is_empty(), "{plan}: {kind}: {errors:?}\n{o:?}");
            let name = str_of(&o["metadata"]["name"]);
            if kind == "NodePool" {
                pools.insert(name, o);
            } else {
                classes.insert((kind, name), o);
            }
        }
        // Every NodePool names a node class of the provider that exists.
        for (name, p) in &pools {
            let r = &p["spec"]["template"]["spec"]["nodeClassRef"];
            let key = (str_of(&r["kind"]), str_of(&r["name"]));
            assert!(classes.contains_key(&key), "{plan}: {name} names {key:?}");
            let aws = rec["provider"] == "aws";
            assert_eq!(key.0, if aws { "EC2NodeClass" } else { "AKSNodeClass" });
        }
        // Each recommended pool with nodes above its floor has its NodePool (but MIG pools:
        // Karpenter's instance types offer `nvidia.com/gpu`, never `nvidia.com/mig-*`, and
        // NAP cannot set AKS's `gpu_instance`): its SKU, the nodes above the floor as limits,
        // gangs never disrupted. The floor is Terraform's, so the two add up to the maximum.
        // The node sizes of a pool of several (one `pool_label`) are one NodePool, named by
        // the label, with each size above its floor among its instance types and in its limits.
        let tf = &files["terraform/main.tf"];
        let all = rec["pools"].as_array().expect("pools");
        for rp in all {
            let name = rp["name"].as_str().expect("name");
            let label = rp["pool_label"].as_str().expect("pool label");
            let above_floor: Vec<&serde_json::Value> = all
                .iter()
                .filter(|q| q["pool_label"] == label && q["nodes"]["min"] != q["nodes"]["max"])
                .collect();
            let mine: Vec<&&Value> = pools
                .iter()
                .filter(|(n, _)| *n == label || n.starts_with(&format!("{label}-")))
                .map(|(_, v)| v)
                .collect();
            let (min_nodes, max_nodes) = (
                rp["nodes"]["min"].as_u64().expect("min"),
                rp["nodes"]["max"].as_u64().expect("max"),
            );
            let group = tf_max_nodes(tf, name);
            if rp["sharing"] == "mig" || min_nodes == max_nodes {
                assert!(mine.is_empty(), "{plan}: {name} has no NodePool");
                // A MIG pool filled several ways is one node group per filling (`name-1`, ...).
                let readme = &files["README.md"];
                assert!(
                    readme.contains(&format!("`{name}` is not in karpenter/"))
                        || readme.contains(&format!("`{name}-1` is not in karpenter/")),
                    "{plan}: {name} not explained"
                );
                if rp["sharing"] != "mig" {
                    assert_eq!(group, Some(max_nodes), "{plan}: {name} all in terraform/");
                }
                continue;
            }
            assert!(!mine.is_empty(), "{plan}: no NodePool for {name}");
            // The floor in terraform/, fixed; none at all where there is no floor.
            assert_eq!(
                group,
                (min_nodes > 0).then_some(min_nodes),
                "{plan}: {name}'s node group holds its floor only"
            );
            let karpenter_gpus: u64 = above_floor
                .iter()
                .map(|q| {
                    (q["nodes"]["max"].as_u64().expect("max")
                        - q["nodes"]["min"].as_u64().expect("min"))
                        * q["gpus_per_node"].as_u64().expect("gpus per node")
                })
                .sum();
            let limit_gpus: u64 = mine
                .iter()
                .map(|p| {
                    str_of(&p["spec"]["limits"]["nvidia.com/gpu"])
                        .parse::<u64>()
                        .expect("gpus")
                })
                .sum();
            assert_eq!(
                limit_gpus, karpenter_gpus,
                "{plan}: {name}: only above the floor"
            );
            for p in &mine {
                let reqs = p["spec"]["template"]["spec"]["requirements"]
                    .as_sequence()
                    .expect("requirements");
                let values = |key: &str| -> Vec<String> {
                    reqs.iter()
                        .find(|r| r["key"].as_str() == Some(key))
                        .map(|r| {
                            r["values"]
                                .as_sequence()
                                .expect("values")
                                .iter()
                                .map(str_of)
                                .collect()
                        })
                        .unwrap_or_default()
                };
                let sizes: Vec<&str> = above_floor
                    .iter()
                    .filter_map(|q| q["sku"].as_str())
                    .collect();
                assert_eq!(values("node.kubernetes.io/instance-type"), sizes);
                // Spot has an on-demand way back (issue 74).
                let capacity: &[&str] = match rp["capacity"].as_str().expect("capacity") {
                    "spot" => &["spot", "on-demand"],
                    "capacity-block" | "capacity-reservation" => &["reserved"],
                    _ => &["on-demand"],
                };
                assert_eq!(
                    values("karpenter.sh/capacity-type"),
                    capacity,
                    "{plan}: {name}"
                );
                let gang = rp["workloads"]
                    .as_array()
                    .expect("workloads")
                    .iter()
                    .any(|w| {
                        let text = std::fs::read_to_string(plan).expect("plan");
                        let plan: toml::Table = toml::from_str(&text).expect("toml");
                        plan["workload"]
                            .as_array()
                            .expect("workloads")
                            .iter()
                            .any(|x| {
                                x["name"].as_str() == w.as_str()
                                    && x.get("nodes")
                                        .and_then(toml::Value::as_integer)
                                        .unwrap_or(1)
                                        > 1
                            })
                    });
                if gang {
                    let budgets = p["spec"]["disruption"]["budgets"]
                        .as_sequence()
                        .expect("budgets");
                    assert_eq!(str_of(&budgets[0]["nodes"]), "0", "{plan}: gang {name}");
                    assert_eq!(
                        str_of(&p["spec"]["template"]["spec"]["expireAfter"]),
                        "Never"
                    );
                }
            }
        }
        // Every Kueue flavor's nodes are a NodePool's: its labels are the NodePool's template
        // labels or its requirements, and its taints the NodePool's.
        let kueue: String = files
            .iter()
            .filter(|(k, _)| k.starts_with("kueue/"))
            .map(|(_, v)| v.as_str())
            .collect::<Vec<_>>()
            .join("\n");
        for f in docs(&kueue)
            .iter()
            .filter(|o| o["kind"] == "ResourceFlavor")
        {
            let labels = map_of(&f["spec"]["nodeLabels"]);
            let want = taints(&f["spec"]["nodeTaints"]);
            let pool = &labels["gpuplan.io/pool"];
            // A pool Karpenter gives no NodePool (MIG, or all floor) is all in terraform/.
            let has_node_pool = pools
                .keys()
                .any(|n| n == pool || n.starts_with(&format!("{pool}-")));
            if !has_node_pool {
                // A MIG pool filled several ways: a flavor and a node group per filling.
                let flavor = f["metadata"]["name"].as_str().unwrap_or("");
                assert!(
                    tf_max_nodes(tf, pool)
                        .or_else(|| tf_max_nodes(tf, flavor))
                        .is_some(),
                    "{plan}: {pool} has no nodes"
                );
                continue;
            }
            let matched = pools.values().any(|p| {
                let t = &p["spec"]["template"];
                let own = map_of(&t["metadata"]["labels"]);
                let reqs = t["spec"]["requirements"]
                    .as_sequence()
                    .expect("requirements");
                let held = labels.iter().all(|(k, v)| {
                    own.get(k) == Some(v)
                        || reqs.iter().any(|r| {
                            str_of(&r["key"]) == *k
                                && r["values"]
                                    .as_sequence()
                                    .is_some_and(|vs| vs.iter().any(|x| str_of(x) == *v))
                        })
                });
                held && taints(&t["spec"]["taints"]) == want
            });
            assert!(
                matched,
                "{plan}: flavor {} has no NodePool with its labels {labels:?} and taints {want:?}",
                str_of(&f["metadata"]["name"])
            );
        }
        // The disk holds the models: never below the formula's floor.
        for ((kind, _), c) in &classes {
            let gib = if kind == "EC2NodeClass" {
                str_of(&c["spec"]["blockDeviceMappings"][0]["ebs"]["volumeSize"])
                    .trim_end_matches("Gi")
                    .parse::<u64>()
                    .expect("size")
            } else {
                c["spec"]["osDiskSizeGB"].as_u64().expect("size")
            };
            assert!(gib >= 120, "{plan}: {kind} disk {gib}");
        }
    }
}

/// A four-node EKS gang: its NodePool is never consolidated or expired, its node class joins
/// the gang's placement group (created in terraform/), and its disk holds a 70B model twice.
#[test]
fn an_eks_gang_is_shielded_and_placed_together() {
    let plan = Path::new("tests/fixtures/render/efa-gang.toml");
    let files = render(plan);
    let objects = docs(&files["karpenter/karpenter.yaml"]);
    // The gang's NodePool, and its node class.
    let pool = objects
        .iter()
        .find(|o| {
            o["kind"] == "NodePool"
                && o["spec"]["template"]["spec"]["requirements"][0]["values"][0] == "p5.48xlarge"
        })
        .expect("node pool");
    let class_name = str_of(&pool["spec"]["template"]["spec"]["nodeClassRef"]["name"]);
    let class = objects
        .iter()
        .find(|o| o["kind"] == "EC2NodeClass" && str_of(&o["metadata"]["name"]) == class_name)
        .expect("node class");
    let name = str_of(&pool["metadata"]["name"]);
    assert_eq!(
        str_of(&class["spec"]["placementGroupSelector"]["name"]),
        name
    );
    assert!(files["terraform/main.tf"].contains(&format!(
        "resource \"aws_placement_group\" \"{}\"",
        name.replace('-', "_")
    )));
    assert_eq!(
        str_of(&class["spec"]["blockDeviceMappings"][0]["ebs"]["volumeSize"]),
        "512Gi"
    );
    assert_eq!(
        str_of(&pool["spec"]["disruption"]["budgets"][0]["nodes"]),
        "0"
    );
    assert_eq!(str_of(&pool["spec"]["limits"]["nvidia.com/gpu"]), "32");
    // Karpenter attaches EFA interfaces only to nodes whose pods request them: its
    // instance-type reference lists `vpc.amazonaws.com/efa` among a type's resources
    // (website/content/en/preview/reference/instance-types.md, the catalog's source). The
    // gang's pods ask for all 32 of a p5.48xlarge, one pod per node; the batch job for none.
    let efa = |files: &BTreeMap<String, String>, w: &str| {
        let values: Value = serde_yaml::from_str(&files["workloads/values.yaml"]).expect("yaml");
        values[w]["resources"]["limits"]["vpc.amazonaws.com/efa"].as_u64()
    };
    assert_eq!(efa(&files, "pretrain"), Some(32));
    assert_eq!(efa(&files, "scoring"), None);
    // Without --karpenter nothing is written there, and the node group's pods request the
    // same interfaces (the launch template gives the nodes them; the device plugin hands them
    // only to pods that ask).
    let out = tempfile::tempdir().expect("tmp");
    gpuplan()
        .arg("render")
        .arg(plan)
        .arg("--out")
        .arg(out.path())
        .assert()
        .success();
    assert!(!out.path().join("karpenter").exists());
    let files: BTreeMap<String, String> = [(
        "workloads/values.yaml".to_owned(),
        std::fs::read_to_string(out.path().join("workloads/values.yaml")).expect("values"),
    )]
    .into();
    assert_eq!(efa(&files, "pretrain"), Some(32));
    assert_eq!(efa(&files, "scoring"), None);
}

/// Issue 74 item 2: a spot gang (16 p4d.24xlarge) had no way back. Under Karpenter its
/// NodePool allows on-demand beside spot (Karpenter prefers spot and launches on-demand when
/// spot cannot be had: karpenter docs, concepts/scheduling, "Capacity Type"), and the README
/// prices that fallback: the same node-hours on demand. Its nodes, all floor, are Karpenter's
/// alone (a Terraform spot node group would keep asking for spot).
#[test]
fn a_spot_gang_has_an_on_demand_way_back_priced() {
    let dir = tempfile::tempdir().expect("tmp");
    let plan = dir.path().join("gang.toml");
    let text = common::SPOT_GANG_PLAN;
    std::fs::write(&plan, text).expect("plan");
    let capacity_types = |files: &BTreeMap<String, String>| -> Vec<String> {
        let objects = docs(&files["karpenter/karpenter.yaml"]);
        let pool = objects
            .iter()
            .find(|o| o["kind"] == "NodePool")
            .expect("a node pool");
        let reqs = pool["spec"]["template"]["spec"]["requirements"]
            .as_sequence()
            .expect("requirements");
        let ct = reqs
            .iter()
            .find(|r| str_of(&r["key"]) == "karpenter.sh/capacity-type")
            .expect("capacity type");
        ct["values"]
            .as_sequence()
            .expect("values")
            .iter()
            .map(str_of)
            .collect()
    };
    let files = render(&plan);
    assert_eq!(capacity_types(&files), ["spot", "on-demand"]);
    let out = gpuplan()
        .args(["recommend", "--format", "json"])
        .arg(&plan)
        .output()
        .expect("recommend");
    let rec = common::contract(&out.stdout).expect("json");
    let p = &rec["pools"][0];
    assert_eq!(p["capacity"], "spot", "{p:#}");
    let (cost, rate, waste) = (
        p["monthly_cost_usd"].as_f64().expect("cost"),
        p["usd_per_node_hour"].as_f64().expect("rate"),
        p["spot_waste_factor"].as_f64().unwrap_or(1.0),
    );
    let readme = &files["README.md"];
    let line = readme
        .lines()
        .find(|l| l.contains("is spot with a way back"))
        .unwrap_or_else(|| panic!("{readme}"));
    // The on-demand figure is the spot node-hours at the on-demand rate.
    let node_hours = cost / (rate * waste);
    let figure = |after: &str| -> f64 {
        let at = line.find(after).expect(after) + after.len();
        line[at..]
            .trim_start_matches(['$', ' '])
            .split(|c: char| !(c.is_ascii_digit() || c == ',' || c == '.'))
            .next()
            .unwrap_or("")
            .replace(',', "")
            .trim_end_matches('.')
            .parse()
            .unwrap_or_else(|_| panic!("{line}"))
    };
    let on_demand_month = figure("the same node-hours on demand: ");
    let on_demand_rate = figure("a month (");
    assert!(
        (on_demand_month - node_hours * on_demand_rate).abs() < 0.01 * node_hours,
        "{line}"
    );
    assert!(on_demand_month > cost, "{line}");
    // Off spot, the gang's nodes are all floor, kept by Terraform: no NodePool, nothing to
    // fall back from.
    std::fs::write(&plan, text.replace("interruptible = true\n", "")).expect("plan");
    let files = render(&plan);
    assert!(!docs(&files["karpenter/karpenter.yaml"])
        .iter()
        .any(|o| o["kind"] == "NodePool"));
    assert!(!files["README.md"].contains("way back"));
}
