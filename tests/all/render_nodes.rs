//! `gpuplan render`: what each node pool gets in Terraform: EFA, placement groups and disks for
//! gangs, MIG managers, provider version floors, scheduling settings and reservations.

use crate::render::gpuplan;
use crate::render::lines_of;
use crate::render::rendered;
use crate::render::root;
use crate::render::yaml;
use std::collections::{BTreeMap, BTreeSet};

/// The top-level blocks of a Terraform file, by (block type, first label, second label).
pub(crate) fn blocks(tf: &str) -> BTreeMap<(String, String, String), hcl_edit::structure::Block> {
    let body: hcl_edit::structure::Body = tf.parse().expect("hcl");
    body.into_iter()
        .filter_map(|s| match s {
            hcl_edit::structure::Structure::Block(b) => Some(b),
            hcl_edit::structure::Structure::Attribute(_) => None,
        })
        .map(|b| {
            let label = |i: usize| {
                b.labels
                    .get(i)
                    .map(|l| l.as_str().to_owned())
                    .unwrap_or_default()
            };
            ((b.ident.as_str().to_owned(), label(0), label(1)), b)
        })
        .collect()
}

/// An attribute's expression as written, or a nested block's.
pub(crate) fn attr(body: &hcl_edit::structure::Body, key: &str) -> Option<String> {
    body.get_attribute(key)
        .map(|a| a.value.to_string().trim().to_owned())
}

pub(crate) fn block<'b>(
    body: &'b hcl_edit::structure::Body,
    ident: &'b str,
) -> Option<&'b hcl_edit::structure::Body> {
    body.get_blocks(ident).next().map(|b| &b.body)
}

/// A four-node EKS gang on an EFA type: its node group takes a launch template with every EFA
/// interface the type supports (counted by Terraform from `aws_ec2_instance_type`, whose
/// attribute is checked against the provider's docs), joins a cluster placement group, and
/// sits in one subnet; its root volume holds the 70B model twice over. Pools that are not
/// gangs get no EFA, and a gang in a Capacity Block keeps EFA but no placement group.
#[test]
fn an_eks_gang_gets_efa_a_placement_group_and_a_disk_for_its_model() {
    let files = rendered("tests/fixtures/render/efa-gang.toml", &[]);
    let tf = &files["terraform/main.tf"];
    let b = blocks(tf);
    let groups: Vec<&(String, String, String)> = b
        .keys()
        .filter(|k| k.0 == "resource" && k.1 == "aws_eks_node_group")
        .collect();
    assert_eq!(groups.len(), 2, "{tf}");
    let mut efa_pools = 0;
    for k in groups {
        let ng = &b[k].body;
        let ident = &k.2;
        let sku = attr(ng, "instance_types").expect("instance_types");
        if !sku.contains("p5.48xlarge") {
            assert!(
                block(ng, "launch_template").is_none(),
                "{ident}: no EFA off the gang"
            );
            assert!(
                attr(ng, "disk_size").is_some(),
                "{ident}: the disk is sized"
            );
            continue;
        }
        efa_pools += 1;
        let lt_ref =
            block(ng, "launch_template").expect("the gang's node group has a launch template");
        assert!(attr(lt_ref, "id")
            .expect("id")
            .contains(&format!("aws_launch_template.{ident}.id")));
        assert!(
            attr(ng, "disk_size").is_none(),
            "disk_size excludes a launch template"
        );
        let subnets = attr(ng, "subnet_ids").expect("subnets");
        assert!(
            subnets.starts_with("[lookup(var.efa_subnet_ids"),
            "one subnet: {subnets}"
        );
        let lt = &b[&(
            "resource".into(),
            "aws_launch_template".into(),
            ident.clone(),
        )]
            .body;
        // every EFA interface the type has, card 0 first with ENA, the rest EFA-only
        let dynamic = lt
            .get_blocks("dynamic")
            .find(|d| {
                d.labels
                    .first()
                    .is_some_and(|l| l.as_str() == "network_interfaces")
            })
            .expect("network interfaces");
        let for_each = attr(&dynamic.body, "for_each").expect("for_each");
        let data = format!("data.aws_ec2_instance_type.{ident}.efa_maximum_interfaces");
        assert_eq!(for_each, format!("range({data})"));
        assert!(lines_of("ec2_instance_type_attributes.txt").contains("efa_maximum_interfaces"));
        let content = block(&dynamic.body, "content").expect("content");
        assert_eq!(
            attr(content, "network_card_index").as_deref(),
            Some("network_interfaces.value")
        );
        assert_eq!(
            attr(content, "interface_type").as_deref(),
            Some("network_interfaces.value == 0 ? \"efa\" : \"efa-only\"")
        );
        let data_block = &b[&("data".into(), "aws_ec2_instance_type".into(), ident.clone())].body;
        assert_eq!(
            attr(data_block, "instance_type").as_deref(),
            Some("\"p5.48xlarge\"")
        );
        // the placement group, cluster strategy, named in the template
        let pg = &b[&(
            "resource".into(),
            "aws_placement_group".into(),
            ident.clone(),
        )]
            .body;
        assert_eq!(attr(pg, "strategy").as_deref(), Some("\"cluster\""));
        let placement = block(lt, "placement").expect("placement");
        assert_eq!(
            attr(placement, "group_name"),
            Some(format!("aws_placement_group.{ident}.name"))
        );
        // 70e9 bf16 parameters are 130.4 GiB: 20 (OS) + 100 (images) + 130.4 + 130.4 = 381,
        // up to the 512 GiB tier (tiers keep a model added to the plan from resizing it)
        let ebs = block(
            block(lt, "block_device_mappings").expect("root volume"),
            "ebs",
        )
        .expect("ebs");
        assert_eq!(attr(ebs, "volume_size").as_deref(), Some("512"));
    }
    assert_eq!(efa_pools, 1);
    assert!(
        files["README.md"].contains("EFA (`"),
        "{}",
        files["README.md"]
    );
    // In a Capacity Block the gang keeps EFA, without a placement group of its own.
    let files = rendered("tests/fixtures/render/capacity-block.toml", &["--declared"]);
    let b = blocks(&files["terraform/main.tf"]);
    assert!(b.keys().any(|k| k.1 == "aws_ec2_instance_type"));
    assert!(!b.keys().any(|k| k.1 == "aws_placement_group"));
}

/// Azure: the OS disk follows the models too, and never goes below AKS's 128 GB default; an
/// ND gang says what its InfiniBand needs.
#[test]
fn aks_disks_follow_the_model_and_an_nd_gang_notes_its_infiniband() {
    let dir = tempfile::tempdir().expect("tmp");
    let plan = dir.path().join("nd.toml");
    std::fs::write(
        &plan,
        "version = 1\n[plan]\nname = \"nd\"\nowner = \"o\"\nprovider = \"azure\"\nregions = [\"eastus\"]\n\n\
         [[workload]]\nname = \"pretrain\"\nteam = \"t\"\nkind = \"training\"\nnodes = 2\ngpus = 8\nskus = [\"Standard_ND96isr_H100_v5\"]\n\
         checkpoint_minutes = 60\nmodel = { params_billion = 70, precision = \"bf16\" }\n\n\
         [[workload]]\nname = \"small\"\nteam = \"t\"\nkind = \"batch\"\ngpus = 1\nskus = [\"Standard_NC4as_T4_v3\"]\n",
    )
    .expect("plan");
    let files = rendered(plan.to_str().expect("utf-8"), &[]);
    let b = blocks(&files["terraform/main.tf"]);
    let mut disks: Vec<(String, String)> = b
        .iter()
        .filter(|(k, _)| k.1 == "azurerm_kubernetes_cluster_node_pool")
        .map(|(_, v)| {
            (
                attr(&v.body, "vm_size").expect("vm_size"),
                attr(&v.body, "os_disk_size_gb").expect("os disk"),
            )
        })
        .collect();
    disks.sort();
    assert_eq!(
        disks,
        [
            ("\"Standard_NC4as_T4_v3\"".to_owned(), "128".to_owned()),
            ("\"Standard_ND96isr_H100_v5\"".to_owned(), "512".to_owned()),
        ]
    );
    assert!(
        files["README.md"].contains("InfiniBand (`"),
        "{}",
        files["README.md"]
    );
    assert!(files["helm/gpu-operator-values.yaml"].contains("# InfiniBand ("));
}

/// `mig_manager` per pool: on one AKS cluster an AKS-managed MIG pool (`gpu_instance`, the
/// single strategy through a device-plugin config of its own) beside a pool whose mixed
/// layout the GPU Operator applies. `check` holds each pool to its own manager: without the
/// pool's `gpu-operator` the mixed layout is GP016, and a profile AKS cannot create is GP015
/// only on the AKS pool. `aks` on AWS is refused at its location.
#[test]
fn each_pool_has_its_own_mig_manager() {
    let fixture = "tests/fixtures/render/per-pool-mig.toml";
    let text = std::fs::read_to_string(root().join(fixture)).expect("fixture");
    let check = |plan: &str| -> (Option<i32>, String) {
        let o = gpuplan()
            .args(["check", "-", "--format", "json"])
            .write_stdin(plan.to_owned())
            .output()
            .expect("runs");
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stdout).into_owned(),
        )
    };
    let (code, out) = check(&text);
    assert_eq!(code, Some(0), "{out}");
    // The operator pool without its own manager falls under AKS's: one profile per pool.
    let (code, out) = check(&text.replace("mig_manager = \"gpu-operator\"\n", ""));
    assert_eq!(code, Some(1));
    assert!(
        out.contains("GP016") && out.contains("embed-operator"),
        "{out}"
    );
    // 1g.20gb is no MIG1g..MIG7g profile: refused on the AKS pool, fine under the operator.
    let (code, out) =
        check(&text.replace("mig_profile = \"3g.40gb\"", "mig_profile = \"1g.20gb\""));
    assert_eq!(code, Some(1));
    assert!(out.contains("GP015") && out.contains("chat-aks"), "{out}");
    let (code, out) = check(&text.replace(
        "mig_layout = { \"2g.20gb\" = 1, \"1g.10gb\" = 5 }",
        "mig_layout = { \"1g.20gb\" = 3 }",
    ));
    assert_eq!(code, Some(0), "{out}");

    let files = rendered(fixture, &["--declared"]);
    let b = blocks(&files["terraform/main.tf"]);
    let pool = |name: &str| {
        let k = (
            "resource".to_owned(),
            "azurerm_kubernetes_cluster_node_pool".to_owned(),
            name.replace('-', "_"),
        );
        b[&k].body.clone()
    };
    let aks = pool("chat-aks");
    assert_eq!(attr(&aks, "gpu_instance").as_deref(), Some("\"MIG3g\""));
    assert!(attr(&aks, "node_labels")
        .expect("labels")
        .contains("\"nvidia.com/device-plugin.config\" = \"gpuplan-mig-single\""));
    let op = pool("embed-operator");
    assert!(attr(&op, "gpu_instance").is_none());
    assert_eq!(attr(&op, "gpu_driver").as_deref(), Some("\"None\""));
    assert!(attr(&op, "node_labels")
        .expect("labels")
        .contains("nvidia.com/mig.config"));
    let values = yaml(&files["helm/gpu-operator-values.yaml"]);
    assert_eq!(values["mig"]["strategy"].as_str(), Some("mixed"));
    let single = values["devicePlugin"]["config"]["data"]["gpuplan-mig-single"]
        .as_str()
        .expect("the single-strategy config");
    assert!(single.contains("migStrategy: single"), "{single}");

    let aws = "version = 1\n[plan]\nname = \"p\"\nowner = \"o\"\nprovider = \"aws\"\nregions = [\"us-east-1\"]\n\n[[workload]]\nname = \"w\"\nteam = \"t\"\nkind = \"inference\"\n\n[[pool]]\nname = \"x\"\nsku = \"p4d.24xlarge\"\nregion = \"us-east-1\"\nnodes = 1\nmig_manager = \"aks\"\nworkloads = [\"w\"]\n";
    let o = gpuplan()
        .args(["check", "-"])
        .write_stdin(aws)
        .output()
        .expect("runs");
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("EKS has none") && err.contains("18:15"),
        "{err}"
    );
}

/// The provider floor in `required_providers` is at least the release that added every newer
/// argument the file uses (`render::floors`), on every example and fixture, plain and
/// declared, and no higher than those arguments need.
#[test]
fn provider_floors_cover_the_arguments_each_file_uses() {
    let mut seen = BTreeSet::new();
    for dir in ["plans", "tests/fixtures/render"] {
        for e in std::fs::read_dir(root().join(dir)).expect("dir").flatten() {
            let path = e.path();
            if path.extension().is_none_or(|x| x != "toml") {
                continue;
            }
            for extra in [&["--capacity-reservations"][..], &["--declared"][..]] {
                let out = tempfile::tempdir().expect("tmp");
                let ok = gpuplan()
                    .args(["--quiet", "render"])
                    .arg(&path)
                    .arg("--out")
                    .arg(out.path())
                    .args(extra)
                    .output()
                    .expect("runs");
                if !ok.status.success() {
                    continue;
                }
                let tf =
                    std::fs::read_to_string(out.path().join("terraform/main.tf")).expect("main.tf");
                let provider = if tf.contains("hashicorp/azurerm") {
                    gpuplan::core::Provider::Azure
                } else {
                    gpuplan::core::Provider::Aws
                };
                let floors = &gpuplan::cloud::profile(provider).render.terraform_floors;
                let floor = tf
                    .lines()
                    .find_map(|l| l.trim().strip_prefix("version = \">= "))
                    .and_then(|v| v.strip_suffix('"'))
                    .expect("a version floor");
                let mut need = floors.baseline.to_owned();
                for (arg, version, _) in floors.newer {
                    let used = tf.lines().any(|l| {
                        let l = l.trim();
                        l.starts_with(&format!("{arg} ")) || l.contains(&format!(".{arg}"))
                    });
                    if used {
                        seen.insert(*arg);
                        if gpuplan::render::floors::newer(version, &need) {
                            need = (*version).to_owned();
                        }
                    }
                }
                assert_eq!(floor, need, "{}: {extra:?}", path.display());
            }
        }
    }
    // Both newer arguments occur somewhere, so both floors are exercised.
    let all = gpuplan::core::Provider::ALL
        .iter()
        .map(|p| {
            gpuplan::cloud::profile(*p)
                .render
                .terraform_floors
                .newer
                .len()
        })
        .sum::<usize>();
    assert_eq!(seen.len(), all, "{seen:?}");
}

/// The floor is read from the file as written: a custom template that leaves AKS's own driver
/// in place (no `gpu_driver`) keeps azurerm's baseline, where the built-in one needs 4.40.
#[test]
fn a_custom_template_without_a_newer_argument_keeps_the_baseline_floor() {
    // The floor `render plans/azure-inference.toml` writes, with `templates` if given.
    let floor_with = |templates: Option<&std::path::Path>| {
        let out = tempfile::tempdir().expect("tmp");
        let mut cmd = gpuplan();
        cmd.args(["--quiet", "render", "plans/azure-inference.toml", "--out"])
            .arg(out.path());
        if let Some(t) = templates {
            cmd.arg("--templates").arg(t);
        }
        let ok = cmd.output().expect("runs");
        assert!(ok.status.success(), "{ok:?}");
        let tf = std::fs::read_to_string(out.path().join("terraform/main.tf")).expect("main.tf");
        tf.lines()
            .find_map(|l| l.trim().strip_prefix("version = \">= "))
            .and_then(|v| v.strip_suffix('"'))
            .expect("a version floor")
            .to_owned()
    };
    assert_eq!(floor_with(None), "4.40");

    let templates = tempfile::tempdir().expect("tmp");
    let text = std::fs::read_to_string(root().join("templates/render/terraform/azure.tf.hbs"))
        .expect("template");
    let without = text.replace("gpu_driver = \"None\"\n", "");
    assert_ne!(without, text, "the built-in template sets gpu_driver");
    std::fs::create_dir_all(templates.path().join("terraform")).expect("mkdir");
    std::fs::write(templates.path().join("terraform/azure.tf.hbs"), without).expect("write");
    assert_eq!(floor_with(Some(templates.path())), "4.0");
}

/// The device plugin's `failRequestsGreaterThanOne` is the plan's `[cluster]` setting where it
/// states one (the plugin as deployed), and on where it states none.
#[test]
fn the_device_plugin_flag_follows_the_plan() {
    let dir = tempfile::tempdir().expect("tmp");
    let plan = dir.path().join("plan.toml");
    let body = "\n[[workload]]\nname = \"notes\"\nteam = \"lab\"\nkind = \"notebook\"\ngpus = 1\nreplicas = 4\nsharing = \"time-slicing\"\nutilization = 0.2\nskus = [\"Standard_NC4as_T4_v3\"]\n";
    let head = "version = 1\n[plan]\nname = \"ts\"\nowner = \"o\"\nprovider = \"azure\"\nregions = [\"eastus\"]\n";
    for (cluster, want) in [
        (
            "\n[cluster]\nfail_requests_greater_than_one = false\n",
            "false",
        ),
        (
            "\n[cluster]\nfail_requests_greater_than_one = true\n",
            "true",
        ),
        ("", "true"),
    ] {
        std::fs::write(&plan, format!("{head}{cluster}{body}")).expect("write");
        let files = rendered(plan.to_str().expect("utf-8"), &[]);
        let values = &files["helm/gpu-operator-values.yaml"];
        assert!(
            values.contains(&format!("failRequestsGreaterThanOne: {want}")),
            "{cluster}: {values}"
        );
    }
}

/// Every workload, of every kind, gets its scheduling settings: the plan's cpu and memory as
/// requests, its pool's selector and taints, and for user-facing work a spread and a PDB.
#[test]
fn every_workload_gets_its_scheduling_settings() {
    let dir = tempfile::tempdir().expect("tmp");
    let plan = dir.path().join("plan.toml");
    std::fs::write(
        &plan,
        "version = 1\n[plan]\nname = \"w\"\nowner = \"o\"\nprovider = \"aws\"\nregions = [\"us-east-1\"]\n\n\
         [[workload]]\nname = \"api\"\nteam = \"web\"\nkind = \"inference\"\nuser_facing = true\nreplicas = 3\ngpus = 1\ncpu = 2.5\nmemory_gib = 12.5\nskus = [\"g6.xlarge\"]\n\n\
         [[workload]]\nname = \"nightly\"\nteam = \"data\"\nkind = \"batch\"\nreplicas = 2\ngpus = 1\nhours_per_month = 100\nskus = [\"g6.xlarge\"]\n",
    )
    .expect("write");
    let files = rendered(plan.to_str().expect("utf-8"), &[]);
    let v = yaml(&files["workloads/values.yaml"]);
    let rec: serde_json::Value = crate::common::contract(
        &gpuplan()
            .args(["recommend", "--format", "json"])
            .arg(&plan)
            .output()
            .expect("recommend")
            .stdout,
    )
    .expect("json");
    for (w, team) in [("api", "web"), ("nightly", "data")] {
        let pool = rec["pools"]
            .as_array()
            .expect("pools")
            .iter()
            .find(|p| {
                p["workloads"]
                    .as_array()
                    .is_some_and(|a| a.iter().any(|x| x == w))
            })
            .expect("pool");
        let e = &v[w];
        assert_eq!(e["namespace"].as_str(), Some(team));
        assert_eq!(
            e["labels"]["kueue.x-k8s.io/queue-name"].as_str(),
            Some("gpuplan")
        );
        assert_eq!(
            e["nodeSelector"]["gpuplan.io/pool"],
            pool["name"].as_str().unwrap()
        );
        let tolerated: Vec<String> = e["tolerations"]
            .as_sequence()
            .expect("tolerations")
            .iter()
            .map(|t| {
                format!(
                    "{}={}:{}",
                    t["key"].as_str().unwrap_or(""),
                    t["value"].as_str().unwrap_or(""),
                    t["effect"].as_str().unwrap_or("")
                )
            })
            .collect();
        for t in pool["taints"].as_array().expect("taints") {
            assert!(
                tolerated.contains(&t.as_str().unwrap().to_owned()),
                "{w}: {t}"
            );
        }
        assert_eq!(e["resources"]["limits"]["nvidia.com/gpu"].as_u64(), Some(1));
    }
    let api = &v["api"];
    assert_eq!(api["resources"]["requests"]["cpu"].as_str(), Some("2500m"));
    assert_eq!(
        api["resources"]["requests"]["memory"].as_str(),
        Some("12800Mi")
    );
    assert_eq!(
        api["resources"]["limits"]["memory"].as_str(),
        Some("12800Mi")
    );
    assert_eq!(
        api["podDisruptionBudget"]["maxUnavailable"].as_u64(),
        Some(1)
    );
    assert_eq!(
        api["topologySpreadConstraints"][0]["topologyKey"].as_str(),
        Some("kubernetes.io/hostname")
    );
    let nightly = &v["nightly"];
    assert!(nightly["podDisruptionBudget"].is_null());
    assert!(
        nightly["resources"]["requests"].is_null(),
        "the plan states none"
    );
    // No invented server settings: `api` states no memory cap and runs alone on its GPU.
    let serving = yaml(&files["serving/values.yaml"]);
    assert!(serving["api"]["vllm"]["gpuMemoryUtilization"].is_null());
    assert_eq!(
        serving["api"]["vllm"]["tensorParallelSize"].as_u64(),
        Some(1)
    );
    assert!(serving["nightly"].is_null());
}

/// What breaks at apply time, fixed: an On-Demand Capacity Reservation and its node group in
/// one subnet's zone; EFA interfaces with the cluster's security group and one that allows all
/// traffic to and from itself; AKS pools over the plan's zones (gangs in one).
#[test]
fn reservations_efa_and_zones_hold_at_apply_time() {
    let files = rendered(
        "tests/fixtures/render/efa-floor.toml",
        &["--capacity-reservations"],
    );
    let tf = &files["terraform/main.tf"];
    let body: hcl_edit::structure::Body = tf.parse().expect("hcl");
    let attr = |b: &hcl_edit::structure::Block, k: &str| {
        b.body
            .get_attribute(k)
            .map(|a| a.value.to_string().trim().to_owned())
            .unwrap_or_default()
    };
    let mut reservations = 0;
    for r in body
        .get_blocks("resource")
        .filter(|b| b.labels.first().map(|l| l.as_str()) == Some("aws_ec2_capacity_reservation"))
    {
        reservations += 1;
        let ident = r.labels[1].as_str();
        assert_eq!(
            attr(r, "availability_zone"),
            format!("data.aws_subnet.{ident}.availability_zone")
        );
        // The node group it reserves for uses that one subnet.
        let ng = body
            .get_blocks("resource")
            .find(|b| {
                b.labels.first().map(|l| l.as_str()) == Some("aws_eks_node_group")
                    && attr(b, "subnet_ids") == format!("[data.aws_subnet.{ident}.id]")
            })
            .unwrap_or_else(|| panic!("no node group in {ident}'s subnet\n{tf}"));
        assert!(ident.starts_with(ng.labels[1].as_str()), "{ident}");
    }
    assert_eq!(reservations, 1, "{tf}");
    assert!(
        tf.contains("security_groups       = concat([data.aws_eks_cluster.us_east_1.vpc_config[0].cluster_security_group_id, aws_security_group.efa_us_east_1.id]"),
        "{tf}"
    );
    let sg = body
        .get_blocks("resource")
        .find(|b| b.labels.first().map(|l| l.as_str()) == Some("aws_security_group"))
        .expect("EFA security group");
    for dir in ["ingress", "egress"] {
        assert!(
            sg.body
                .get_blocks(dir)
                .any(|b| attr(b, "self") == "true" && attr(b, "protocol") == "\"-1\""),
            "{dir} to and from itself"
        );
    }
    // AKS: pools spread over the plan's zones; pools with a capacity reservation stay
    // regional.
    let files = rendered("plans/azure-inference.toml", &["--capacity-reservations"]);
    let tf = &files["terraform/main.tf"];
    let body: hcl_edit::structure::Body = tf.parse().expect("hcl");
    for p in body.get_blocks("resource").filter(|b| {
        b.labels.first().map(|l| l.as_str()) == Some("azurerm_kubernetes_cluster_node_pool")
    }) {
        let reserved = !attr(p, "capacity_reservation_group_id").is_empty();
        assert_eq!(
            attr(p, "zones").is_empty(),
            reserved,
            "{}: zones unless reserved",
            p.labels[1].as_str()
        );
    }
}

/// Versions are pinned in one place (`providers/assumptions.toml`, `[render.pins]`): the
/// operator's driver on AKS; on EKS one AMI release (from awslabs/amazon-eks-ami's changelog)
/// for every node group, at its cluster's Kubernetes version, and for Karpenter's nodes.
#[test]
fn driver_and_node_image_are_pinned_in_one_place() {
    let pins: toml::Table = toml::from_str(
        &std::fs::read_to_string(root().join("providers/assumptions.toml")).expect("assumptions"),
    )
    .expect("toml");
    let pins = &pins["render"]["pins"];
    let driver = pins["gpu_driver_version"].as_str().expect("driver");
    let files = rendered("plans/azure-inference.toml", &[]);
    let values = yaml(&files["helm/gpu-operator-values.yaml"]);
    assert_eq!(values["driver"]["version"].as_str(), Some(driver));
    // The chart knows the key, and its own default is the pin's source.
    let chart = yaml(
        &std::fs::read_to_string(
            root().join("tests/fixtures/conformance/gpu-operator-values.yaml"),
        )
        .expect("chart"),
    );
    assert_eq!(chart["driver"]["version"].as_str(), Some(driver));

    let files = rendered("plans/aws-training.toml", &["--karpenter"]);
    let tf = &files["terraform/main.tf"];
    let body: hcl_edit::structure::Body = tf.parse().expect("hcl");
    let release = pins["eks_ami_release"].as_str().expect("release");
    let versions = pins["eks_release_versions"].as_table().expect("versions");
    // The release versions, each of that release, in one local map.
    for (minor, v) in versions {
        let v = v.as_str().expect("version");
        assert!(v.ends_with(&release[1..]) && v.starts_with(&format!("{minor}.")));
        assert!(
            tf.contains(&format!("\"{minor}\" = \"{v}\"")),
            "{minor} {v}\n{tf}"
        );
    }
    let mut groups = 0;
    for ng in body
        .get_blocks("resource")
        .filter(|b| b.labels.first().map(|l| l.as_str()) == Some("aws_eks_node_group"))
    {
        groups += 1;
        let attr = |k: &str| {
            ng.body
                .get_attribute(k)
                .map(|a| a.value.to_string().trim().to_owned())
                .unwrap_or_default()
        };
        let alias = attr("provider").trim_start_matches("aws.").to_owned();
        assert_eq!(
            attr("version"),
            format!("data.aws_eks_cluster.{alias}.version")
        );
        assert_eq!(
            attr("release_version"),
            format!("lookup(var.eks_release_versions, \"{}\", lookup(local.eks_release_versions, data.aws_eks_cluster.{alias}.version, null))", alias.replace('_', "-"))
        );
    }
    // Karpenter's nodes run the same release.
    assert!(
        files["karpenter/karpenter.yaml"].contains(&format!("alias: al2023@{release}")),
        "{}",
        files["karpenter/karpenter.yaml"]
    );
    assert!(groups >= 1);
}
