//! `gpuplan render`: pool names and labels, monitoring allow-lists, partitioned GPUs, purchase
//! lists, and pools of several node sizes.

use crate::render::gpuplan;
use crate::render::render_to;
use crate::render::rendered;
use crate::render_nodes::attr;
use crate::render_nodes::blocks;
use std::collections::BTreeSet;

/// Issue 39/41: every AKS agent pool name and rotation name in a cluster is unique, at most
/// 12 lowercase letters and digits, starting with a letter (azurerm
/// `kubernetes_cluster_node_pool.name`, `temporary_name_for_rotation`). `aks-names.toml`
/// rendered `srva100802` twice before the name authority: a MIG pool filled two ways took
/// numbers 1 and 2, and the next pool number 2 again.
#[test]
fn aks_agent_pool_names_are_unique_and_valid() {
    for (plan, declared) in [
        ("tests/fixtures/render/aks-names.toml", true),
        ("tests/fixtures/render/per-pool-mig.toml", true),
        ("plans/azure-inference.toml", false),
        ("plans/azure-inference.toml", true),
    ] {
        let dir = tempfile::tempdir().expect("tempdir");
        let extra: &[&str] = if declared { &["--declared"] } else { &[] };
        let files = render_to(plan, dir.path(), extra);
        let tf = &files["terraform/main.tf"];
        let mut seen = BTreeSet::new();
        let mut pools = 0;
        for ((kind, _, _), b) in blocks(tf) {
            if kind != "resource" || b.labels[0].as_str() != "azurerm_kubernetes_cluster_node_pool"
            {
                continue;
            }
            pools += 1;
            for key in ["name", "temporary_name_for_rotation"] {
                let v = attr(&b.body, key).expect(key);
                let v = v.trim_matches('"').to_owned();
                assert!(
                    v.len() <= 12
                        && v.starts_with(|c: char| c.is_ascii_lowercase())
                        && v.chars()
                            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit()),
                    "{plan}: `{v}` is no AKS agent pool name"
                );
                assert!(seen.insert(v.clone()), "{plan}: `{v}` is used twice");
            }
        }
        assert!(pools >= 2, "{plan}: {pools} node pools");
    }
}

/// A plan whose pool takes the name of another pool's node pool is refused by `check`, with
/// the line of the name (GP030), and `render --declared` renders nothing.
#[test]
fn a_pool_named_like_another_pools_node_pool_is_refused() {
    let out = gpuplan()
        .args(["check", "tests/fixtures/rules/GP030/fires.toml"])
        .assert()
        .code(1);
    let err = String::from_utf8_lossy(&out.get_output().stdout).to_string()
        + &String::from_utf8_lossy(&out.get_output().stderr);
    assert!(
        err.contains("GP030") && err.contains("fires.toml:42:8"),
        "{err}"
    );
    let dir = tempfile::tempdir().expect("tempdir");
    gpuplan()
        .args([
            "render",
            "--declared",
            "tests/fixtures/rules/GP030/fires.toml",
            "--out",
        ])
        .arg(dir.path().join("out"))
        .assert()
        .code(1);
    assert!(!dir.path().join("out").exists());
}

/// Issue 41: render labels pods `gpuplan.io/workload` and nodes `gpuplan.io/pool`, but
/// kube-state-metrics exports a label only when allow-listed, so the review could not read
/// them on a stock kube-prometheus-stack. `monitoring/values.yaml` allow-lists every label
/// render writes (kube-state-metrics chart `metricLabelsAllowlist`: entries
/// `resource=[label,…]`; kube-prometheus-stack nests the chart under `kube-state-metrics`)
/// and lets Prometheus select the GPU Operator's dcgm-exporter ServiceMonitor, which has no
/// release label (`prometheus.prometheusSpec.serviceMonitorSelectorNilUsesHelmValues`).
#[test]
fn monitoring_values_allow_list_every_label_render_writes() {
    for plan in ["plans/azure-inference.toml", "plans/aws-training.toml"] {
        let files = rendered(plan, &[]);
        let v: serde_yaml::Value =
            serde_yaml::from_str(&files["monitoring/values.yaml"]).expect("yaml");
        let entries: Vec<&str> = v["kube-state-metrics"]["metricLabelsAllowlist"]
            .as_sequence()
            .expect("allowlist")
            .iter()
            .filter_map(|e| e.as_str())
            .collect();
        let listed = |resource: &str| -> Vec<String> {
            entries
                .iter()
                .find_map(|e| e.strip_prefix(&format!("{resource}=[")))
                .and_then(|e| e.strip_suffix(']'))
                .map(|l| l.split(',').map(str::to_owned).collect())
                .unwrap_or_default()
        };
        let (pods, nodes) = (listed("pods"), listed("nodes"));
        // Every pod label the workloads file sets, every node label Terraform sets.
        let workloads: serde_yaml::Value =
            serde_yaml::from_str(&files["workloads/values.yaml"]).expect("workloads");
        for (_, w) in workloads.as_mapping().into_iter().flatten() {
            for (k, _) in w["labels"].as_mapping().into_iter().flatten() {
                let k = k.as_str().unwrap_or("");
                if k.starts_with("gpuplan.io/") {
                    assert!(
                        pods.iter().any(|p| p == k),
                        "{plan}: pod label {k} not allow-listed"
                    );
                }
            }
        }
        assert!(
            files["terraform/main.tf"].contains("\"gpuplan.io/pool\""),
            "{plan}"
        );
        assert!(
            nodes.iter().any(|n| n == "gpuplan.io/pool"),
            "{plan}: {nodes:?}"
        );
        assert!(
            nodes.iter().any(|n| n == "nvidia.com/mig.config"),
            "{plan}: {nodes:?}"
        );
        assert_eq!(
            v["prometheus"]["prometheusSpec"]["serviceMonitorSelectorNilUsesHelmValues"],
            false
        );
    }
}

/// Issue 41: the rendered README said a Capacity Block pool joins a placement group while
/// the Terraform, correctly, has none. The README says "join ... placement group" exactly
/// where Terraform renders one.
#[test]
fn the_readme_names_a_placement_group_only_where_terraform_has_one() {
    for (plan, extra) in [
        (
            "tests/fixtures/render/capacity-block.toml",
            &["--declared"][..],
        ),
        ("tests/fixtures/render/efa-gang.toml", &[][..]),
    ] {
        let files = rendered(plan, extra);
        let groups = files["terraform/main.tf"]
            .matches("resource \"aws_placement_group\"")
            .count();
        let readme = &files["README.md"];
        assert_eq!(
            readme.contains("join one cluster placement group"),
            groups > 0,
            "{plan}: {groups} placement group(s) in Terraform; README: {readme}"
        );
        if groups == 0 {
            assert!(
                readme.contains("with no placement group"),
                "{plan}: {readme}"
            );
        }
    }
}

/// Issue 41: RTX PRO 6000 Blackwell (g7e) is partitioned like any MIG GPU: its pools get
/// mig-parted layouts of its own profiles (1g.24gb, 2g.48gb, 4g.96gb; four instances at most),
/// and each pod asks for the profile that holds what the driver gives it.
#[test]
fn g7e_pools_are_partitioned_with_its_own_profiles() {
    let files = rendered("tests/fixtures/render/g7e-mig.toml", &[]);
    let operator: serde_yaml::Value =
        serde_yaml::from_str(&files["helm/gpu-operator-values.yaml"]).expect("yaml");
    let parted: serde_yaml::Value = serde_yaml::from_str(
        operator["migManager"]["config"]["data"]["config.yaml"]
            .as_str()
            .expect("mig-parted config"),
    )
    .expect("yaml");
    // Every layout is one of the GPU's own and fits its four slices.
    let slices = |p: &str| match p {
        "1g.24gb" => 1,
        "2g.48gb" => 2,
        "4g.96gb" => 4,
        other => panic!("`{other}` is not an RTX PRO 6000 profile"),
    };
    let mut seen = BTreeSet::new();
    for (name, entries) in parted["mig-configs"].as_mapping().expect("configs") {
        for e in entries.as_sequence().expect("entries") {
            let Some(devices) = e["mig-devices"].as_mapping() else {
                continue;
            };
            let used: u64 = devices
                .iter()
                .map(|(p, n)| {
                    let p = p.as_str().expect("profile");
                    seen.insert(p.to_owned());
                    slices(p) * n.as_u64().expect("count")
                })
                .sum();
            assert!(used <= 4, "{name:?} uses {used} of 4 slices");
        }
    }
    assert_eq!(
        seen,
        BTreeSet::from(["1g.24gb".to_owned(), "2g.48gb".to_owned()])
    );
    let values = &files["workloads/values.yaml"];
    assert!(values.contains("nvidia.com/mig-2g.48gb"), "{values}");
    assert!(values.contains("nvidia.com/mig-1g.24gb"), "{values}");
    assert!(
        files["terraform/main.tf"].contains("g7e."),
        "the pool is g7e"
    );
}

/// Issue 40: the reservations a recommendation's prices assume are a purchase list beside the
/// Terraform (purchases.json, held to `gpuplan schema --output purchases`, and the README):
/// one line per reserved pool, its count the pool's reserved nodes, the rate the cost used,
/// its source and date, and what the plan costs more if nothing is bought.
#[test]
fn reserved_pools_come_with_a_purchase_list() {
    let dir = tempfile::tempdir().expect("tmp");
    let files = render_to("plans/aws-training.toml", dir.path(), &[]);
    let list = crate::common::contract(files["purchases.json"].as_bytes()).expect("json");
    let out = gpuplan()
        .args(["recommend", "--format", "json", "plans/aws-training.toml"])
        .output()
        .expect("run");
    let rec = crate::common::contract(&out.stdout).expect("json");
    let reserved: Vec<&serde_json::Value> = rec["pools"]
        .as_array()
        .expect("pools")
        .iter()
        .filter(|p| {
            p["capacity"]
                .as_str()
                .is_some_and(|c| c.starts_with("reserved-"))
        })
        .collect();
    let lines = list["purchases"].as_array().expect("purchases");
    assert!(!reserved.is_empty(), "the example reserves");
    assert_eq!(lines.len(), reserved.len());
    let mut extra = 0.0;
    for p in reserved {
        let l = lines
            .iter()
            .find(|l| l["pool"] == p["name"])
            .expect("a line per pool");
        assert_eq!(l["count"], p["reserved_nodes"]);
        assert_eq!(l["sku"], p["sku"]);
        assert_eq!(l["region"], p["region"]);
        let n = l["count"].as_f64().expect("count");
        let rate = l["usd_per_hour"].as_f64().expect("rate");
        assert_eq!(rate, p["usd_per_node_hour"].as_f64().expect("rate"));
        assert!((l["monthly_usd"].as_f64().expect("m") - n * rate * 730.0).abs() < 0.011);
        assert!(l["price_as_of"].as_str().is_some_and(|d| d.len() == 10));
        assert!(
            l["offering"]
                .as_str()
                .is_some_and(|o| o.contains("upfront")),
            "{l}"
        );
        // Issue 74 item 6: what finance files: platform, tenancy, scope, payment, the term's
        // hours and the whole commitment, and the monthly saving against on-demand.
        let od = l["on_demand_usd_per_hour"].as_f64().expect("od");
        let term_hours = 8760.0 * l["term_years"].as_f64().expect("term");
        assert_eq!(l["kind"], "reservation", "{l}");
        assert_eq!(l["platform"], "Linux/UNIX", "{l}");
        assert_eq!(l["tenancy"], "default", "{l}");
        assert!(
            l["scope"].as_str().is_some_and(|s| s.starts_with("region")),
            "{l}"
        );
        assert!(
            l["payment"].as_str().is_some_and(|s| s.contains("upfront")),
            "{l}"
        );
        assert_eq!(l["term_hours"].as_f64(), Some(term_hours), "{l}");
        assert!(
            (l["total_commitment_usd"].as_f64().expect("total") - n * rate * term_hours).abs()
                < 0.011,
            "{l}"
        );
        assert!(
            (l["monthly_saving_usd"].as_f64().expect("saving") - n * (od - rate) * 730.0).abs()
                < 0.011,
            "{l}"
        );
        extra += n * (od - rate) * 730.0;
        assert!(
            files["README.md"].contains(&format!("| `{}` |", l["pool"].as_str().expect("pool")))
        );
    }
    assert!((list["monthly_usd_if_not_bought"].as_f64().expect("extra") - extra).abs() < 0.011);
    assert!(
        files["README.md"].contains("| platform | scope | payment |")
            && files["README.md"].contains("committed over the term"),
        "{}",
        files["README.md"]
    );
    // A plan with nothing reserved says so.
    let files = rendered("plans/minimal.toml", &[]);
    let none = crate::common::contract(files["purchases.json"].as_bytes()).expect("json");
    if none["purchases"].as_array().is_some_and(Vec::is_empty) {
        assert!(files["README.md"].contains("What to buy: nothing"));
    }
}

/// Issue 40 item 8: two shapes of one GPU model on their own node sizes are one pool: both
/// node groups carry one `gpuplan.io/pool` label, `--karpenter` makes one NodePool offering
/// both sizes with both sizes' limits, and each workload's pods require the size it was
/// priced on (Kueue's flavors tell the sizes apart by instance type).
#[test]
fn a_pool_of_several_node_sizes_is_one_label_and_one_node_pool() {
    let files = rendered("tests/fixtures/render/node-sizes.toml", &["--karpenter"]);
    let tf = &files["terraform/main.tf"];
    let labels: Vec<&str> = tf
        .lines()
        .filter(|l| l.trim_start().starts_with("\"gpuplan.io/pool\""))
        .filter_map(|l| l.split('"').nth(3))
        .collect();
    assert_eq!(labels, ["inference-t4-dedicated"; 2], "{tf}");
    let docs = crate::common::k8s::docs(&files["karpenter/karpenter.yaml"]);
    let node_pools: Vec<&serde_yaml::Value> =
        docs.iter().filter(|o| o["kind"] == "NodePool").collect();
    assert_eq!(node_pools.len(), 1, "{docs:?}");
    let types = node_pools[0]["spec"]["template"]["spec"]["requirements"]
        .as_sequence()
        .expect("requirements")
        .iter()
        .find(|r| r["key"] == "node.kubernetes.io/instance-type")
        .expect("instance types")["values"]
        .clone();
    assert_eq!(
        types,
        serde_yaml::to_value(["g4dn.8xlarge", "g4dn.xlarge"]).expect("yaml")
    );
    // Above the floors: 2 of heavy's 8xlarge and 4 of light's xlarge nodes, one GPU each.
    assert_eq!(node_pools[0]["spec"]["limits"]["nvidia.com/gpu"], "6");
    let values: serde_yaml::Value =
        serde_yaml::from_str(&files["workloads/values.yaml"]).expect("yaml");
    for (w, size) in [("heavy", "g4dn.8xlarge"), ("light", "g4dn.xlarge")] {
        let e = &values[w]["affinity"]["nodeAffinity"]
            ["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0]
            ["matchExpressions"][0];
        assert_eq!(e["key"], "node.kubernetes.io/instance-type", "{w}");
        assert_eq!(
            e["values"],
            serde_yaml::to_value([size]).expect("yaml"),
            "{w}"
        );
        assert_eq!(
            values[w]["nodeSelector"]["gpuplan.io/pool"],
            "inference-t4-dedicated"
        );
    }
    let kueue = crate::common::k8s::docs(&files["kueue/us-east-1.yaml"]);
    let sizes: Vec<&serde_yaml::Value> = kueue
        .iter()
        .filter(|o| o["kind"] == "ResourceFlavor")
        .map(|f| &f["spec"]["nodeLabels"]["node.kubernetes.io/instance-type"])
        .collect();
    assert_eq!(sizes, ["g4dn.8xlarge", "g4dn.xlarge"]);
}

/// The weekly loop keeps a pool of several node sizes: `recommend --write-plan` records the
/// second size's `pool_label`, `check` accepts it, and `render --declared` gives both node
/// groups one label, one Karpenter NodePool and each workload its own size, as the
/// recommendation's render does.
#[test]
fn a_pool_of_several_sizes_survives_write_plan_and_render_declared() {
    let dir = tempfile::tempdir().expect("tmp");
    let next = dir.path().join("next.toml");
    gpuplan()
        .args([
            "recommend",
            "tests/fixtures/render/node-sizes.toml",
            "--write-plan",
        ])
        .arg(&next)
        .assert()
        .code(0);
    let text = std::fs::read_to_string(&next).expect("plan");
    assert!(
        text.contains("pool_label = \"inference-t4-dedicated\""),
        "{text}"
    );
    let next = next.to_string_lossy().into_owned();
    gpuplan().args(["check", &next]).assert().code(0);
    let declared = rendered(&next, &["--declared", "--karpenter"]);
    let recommended = rendered("tests/fixtures/render/node-sizes.toml", &["--karpenter"]);
    for f in [
        "karpenter/karpenter.yaml",
        "workloads/values.yaml",
        "kueue/us-east-1.yaml",
    ] {
        // Only the header naming the plan file differs.
        let body = |t: &str| {
            t.lines()
                .filter(|l| !l.starts_with('#'))
                .collect::<Vec<_>>()
                .join("\n")
        };
        assert_eq!(body(&declared[f]), body(&recommended[f]), "{f}");
    }
}

/// Issue 74 item 4: a declared `capacity = "capacity-reservation"` pool is priced as its
/// reservation (the floor billed whether used or not) but rendered as a node pool alone: no
/// `azurerm_capacity_reservation_group` on Azure, no `aws_ec2_capacity_reservation` on AWS,
/// with or without `--capacity-reservations`, and the README said nothing to create. Its
/// floor is reserved, the node pool joins it, and the README lists it.
#[test]
fn a_declared_capacity_reservation_pool_gets_its_reservation() {
    for (provider, region, sku, resource) in [
        (
            "azure",
            "eastus",
            "Standard_NC24ads_A100_v4",
            "azurerm_capacity_reservation",
        ),
        (
            "aws",
            "us-east-1",
            "g6e.xlarge",
            "aws_ec2_capacity_reservation",
        ),
    ] {
        let dir = tempfile::tempdir().expect("tmp");
        let plan = dir.path().join("plan.toml");
        std::fs::write(
            &plan,
            format!("version = 1\n[plan]\nname = \"reserved\"\nowner = \"platform\"\nprovider = \"{provider}\"\nregions = [\"{region}\"]\n\n[[workload]]\nname = \"chat\"\nteam = \"assistants\"\nkind = \"inference\"\nreplicas = 3\ngpus = 1\nskus = [\"{sku}\"]\n\n[[pool]]\nname = \"chat-reserved\"\nsku = \"{sku}\"\nregion = \"{region}\"\nnodes = {{ min = 3, max = 3 }}\ncapacity = \"capacity-reservation\"\nworkloads = [\"chat\"]\n"),
        )
        .expect("plan");
        let out = dir.path().join("out");
        let files = crate::render::render_to(plan.to_str().expect("utf-8"), &out, &["--declared"]);
        let tf = &files["terraform/main.tf"];
        let body = hcl_edit::parser::parse_body(tf).expect("main.tf parses");
        let blocks: Vec<(String, Vec<String>)> = body
            .blocks()
            .map(|b| {
                (
                    b.ident.as_str().to_owned(),
                    b.labels.iter().map(|l| l.as_str().to_owned()).collect(),
                )
            })
            .collect();
        assert!(
            blocks
                .iter()
                .any(|(k, l)| k == "resource" && l.first().is_some_and(|r| r == resource)),
            "{provider}: {tf}"
        );
        let count = if provider == "aws" {
            "instance_count = 3"
        } else {
            "capacity = 3"
        };
        // Attributes are aligned by `terraform fmt`'s rules: compare on single spaces.
        let flat = tf.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(flat.contains(count), "{provider}: {tf}");
        if provider == "azure" {
            assert!(
                flat.contains(
                    "capacity_reservation_group_id = azurerm_capacity_reservation_group."
                ),
                "{tf}"
            );
        }
        let readme = &files["README.md"];
        assert!(
            readme.contains("| `chat-reserved` |") && readme.contains("Capacity reservations"),
            "{provider}: {readme}"
        );
    }
}
