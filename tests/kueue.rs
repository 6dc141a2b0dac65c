//! Kueue objects a real cluster admits pods with: validated against the CRDs (v1beta2 by
//! default, v1beta1 on request), every resource a planned pod requests covered, MIG quotas
//! within the physical instances of a flavor, and an admission simulation: every planned pod
//! of every team fits its ClusterQueue, on a flavor whose labels and taints are its pool's.

use std::collections::BTreeMap;
use std::path::Path;

use serde_yaml::Value;

mod common;
use common::k8s::{crd, docs, json};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn gpuplan() -> assert_cmd::Command {
    let mut c = assert_cmd::Command::cargo_bin("gpuplan").expect("binary");
    c.current_dir(root())
        .env("GPUPLAN_TODAY", "2026-12-03")
        .env("NO_COLOR", "1")
        .env("GPUPLAN_CACHE", "/nonexistent/gpuplan-test-cache")
        .env_remove("GPUPLAN_CATALOG");
    c
}

/// The rendered Kueue and serving files and the recommendation they came from.
fn render(plan: &Path, extra: &[&str]) -> (Vec<Value>, Value, serde_json::Value) {
    let out = tempfile::tempdir().expect("tmp");
    gpuplan()
        .arg("render")
        .arg(plan)
        .arg("--out")
        .arg(out.path())
        .args(extra)
        .assert()
        .success();
    let read = |p: &str| std::fs::read_to_string(out.path().join(p)).expect(p);
    let rec = gpuplan()
        .args(["recommend", "--format", "json"])
        .arg(plan)
        .output()
        .expect("recommend");
    (
        docs(&read("kueue/kueue.yaml")),
        serde_yaml::from_str(&read("serving/values.yaml")).expect("serving"),
        serde_json::from_slice(&rec.stdout).expect("recommendation"),
    )
}

/// A Kubernetes quantity as a number: `96`, `95500m`, `1382Gi`.
fn qty(v: &Value) -> f64 {
    match v {
        Value::Number(n) => n.as_f64().unwrap_or(0.0),
        Value::String(s) => {
            if let Some(m) = s.strip_suffix('m') {
                m.parse::<f64>().unwrap_or(0.0) / 1000.0
            } else if let Some(g) = s.strip_suffix("Gi") {
                g.parse().unwrap_or(0.0)
            } else {
                s.parse().unwrap_or(0.0)
            }
        }
        _ => 0.0,
    }
}

/// A plan's workloads by name: (team, pods at peak, cpu, memory GiB, GPUs per pod) from the
/// plan text.
fn workloads(plan: &Path) -> BTreeMap<String, (String, f64, f64, f64, f64)> {
    let t: toml::Value =
        toml::from_str(&std::fs::read_to_string(plan).expect("plan")).expect("toml");
    let mut out = BTreeMap::new();
    for w in t["workload"].as_array().expect("workloads") {
        let n = |k: &str| {
            w.get(k)
                .and_then(|v| v.as_float().or(v.as_integer().map(|i| i as f64)))
        };
        let replicas = match w.get("replicas") {
            Some(toml::Value::Integer(i)) => *i as f64,
            Some(toml::Value::Table(t)) => t["max"].as_integer().unwrap_or(1) as f64,
            _ => 1.0,
        };
        let pods = replicas * n("nodes").unwrap_or(1.0);
        out.insert(
            w["name"].as_str().expect("name").to_owned(),
            (
                w["team"].as_str().expect("team").to_owned(),
                pods,
                n("cpu").unwrap_or(0.0),
                n("memory_gib").unwrap_or(0.0),
                n("gpus").unwrap_or(1.0),
            ),
        );
    }
    out
}

fn check(plan: &Path, extra: &[&str], api: &str) {
    let (objects, serving, rec) = render(plan, extra);
    let schemas: BTreeMap<&str, jsonschema::Validator> = [
        (
            "ResourceFlavor",
            crd("kueue.x-k8s.io_resourceflavors.yaml", api),
        ),
        (
            "ClusterQueue",
            crd("kueue.x-k8s.io_clusterqueues.yaml", api),
        ),
        ("LocalQueue", crd("kueue.x-k8s.io_localqueues.yaml", api)),
    ]
    .into_iter()
    .collect();
    let mut flavors: BTreeMap<String, &Value> = BTreeMap::new();
    let mut queues: BTreeMap<String, &Value> = BTreeMap::new();
    for o in &objects {
        let kind = o["kind"].as_str().expect("kind");
        assert_eq!(
            o["apiVersion"].as_str(),
            Some(format!("kueue.x-k8s.io/{api}").as_str())
        );
        let errors: Vec<String> = schemas[kind]
            .iter_errors(&json(o))
            .map(|e| format!("{e} at {}", e.instance_path()))
            .collect();
        assert!(errors.is_empty(), "{}: {kind}: {errors:#?}", plan.display());
        let name = o["metadata"]["name"].as_str().expect("name").to_owned();
        match kind {
            "ResourceFlavor" => {
                flavors.insert(name, o);
            }
            "ClusterQueue" => {
                queues.insert(name, o);
            }
            _ => {}
        }
    }
    let pools = rec["pools"].as_array().expect("pools");
    let ws = workloads(plan);
    // Each pool's flavor(s): labels the pool's nodes carry, taints they have.
    for (name, f) in &flavors {
        let pool_name = f["spec"]["nodeLabels"]["gpuplan.io/pool"]
            .as_str()
            .expect("pool label");
        let pool = pools
            .iter()
            .find(|p| p["name"] == pool_name)
            .unwrap_or_else(|| panic!("flavor {name} names no pool"));
        let taints: Vec<String> = f["spec"]["nodeTaints"]
            .as_sequence()
            .map(|ts| {
                ts.iter()
                    .map(|t| {
                        format!(
                            "{}={}:{}",
                            t["key"].as_str().unwrap_or(""),
                            t["value"].as_str().unwrap_or(""),
                            t["effect"].as_str().unwrap_or("")
                        )
                    })
                    .collect()
            })
            .unwrap_or_default();
        let want: Vec<String> = pool["taints"]
            .as_array()
            .expect("taints")
            .iter()
            .map(|t| t.as_str().unwrap_or("").to_owned())
            .collect();
        assert_eq!(taints, want, "{name}: the flavor's taints are the pool's");
        let tolerated = f["spec"]["tolerations"]
            .as_sequence()
            .map_or(0, |t| t.len());
        assert_eq!(tolerated, want.len(), "{name} tolerates every taint");
        for (k, v) in pool["labels"].as_object().expect("labels") {
            if let Some(fv) = f["spec"]["nodeLabels"][k.as_str()].as_str() {
                assert_eq!(Some(fv), v.as_str(), "{name}: label {k}");
            }
        }
        if pool["capacity"] == "spot" && rec["provider"] == "azure" {
            assert!(
                want.contains(&"kubernetes.azure.com/scalesetpriority=spot:NoSchedule".to_owned())
            );
            assert_eq!(
                pool["labels"]["kubernetes.azure.com/scalesetpriority"],
                "spot"
            );
        }
    }
    // What each pool's nodes have, per resource (at the pool's maximum).
    let physical = |pool: &serde_json::Value, resource: &str| -> f64 {
        let gpus = pool["gpus"]["max"].as_f64().unwrap_or(0.0);
        let layouts: Vec<(serde_json::Map<String, serde_json::Value>, f64)> =
            match (&pool["mig_layout"], pool["mig_configs"].as_array()) {
                (serde_json::Value::Object(l), _) => vec![(l.clone(), gpus)],
                (_, Some(cs)) => cs
                    .iter()
                    .map(|c| {
                        (
                            c["layout"].as_object().cloned().unwrap_or_default(),
                            c["gpus"].as_f64().unwrap_or(0.0),
                        )
                    })
                    .collect(),
                _ => Vec::new(),
            };
        match resource.strip_prefix("nvidia.com/mig-") {
            Some(profile) => layouts
                .iter()
                .map(|(l, g)| l.get(profile).and_then(|n| n.as_f64()).unwrap_or(0.0) * g)
                .sum(),
            None if resource == "nvidia.com/gpu" => {
                if pool["sharing"] == "mig" {
                    layouts
                        .iter()
                        .map(|(l, g)| l.values().filter_map(|n| n.as_f64()).sum::<f64>() * g)
                        .sum()
                } else {
                    gpus * pool["time_slicing_replicas"].as_f64().unwrap_or(1.0)
                }
            }
            None => f64::INFINITY,
        }
    };
    // The admission simulation: a team's pods at peak, each pod set on its pool's flavors.
    for q in queues.values() {
        let team = q["spec"]["namespaceSelector"]["matchLabels"]["kubernetes.io/metadata.name"]
            .as_str()
            .expect("team");
        let group = &q["spec"]["resourceGroups"][0];
        let covered: Vec<&str> = group["coveredResources"]
            .as_sequence()
            .expect("covered")
            .iter()
            .filter_map(Value::as_str)
            .collect();
        assert!(
            covered.contains(&"cpu") && covered.contains(&"memory"),
            "{team}: {covered:?}"
        );
        // quota[flavor][resource]
        let mut quota: BTreeMap<String, BTreeMap<String, f64>> = BTreeMap::new();
        for f in group["flavors"].as_sequence().expect("flavors") {
            let fname = f["name"].as_str().expect("flavor").to_owned();
            let names: Vec<&str> = f["resources"]
                .as_sequence()
                .expect("resources")
                .iter()
                .filter_map(|r| r["name"].as_str())
                .collect();
            assert_eq!(names, covered, "every flavor lists every covered resource");
            let pool_name = flavors[&fname]["spec"]["nodeLabels"]["gpuplan.io/pool"]
                .as_str()
                .expect("pool");
            let pool = pools.iter().find(|p| p["name"] == pool_name).expect("pool");
            for r in f["resources"].as_sequence().expect("resources") {
                let name = r["name"].as_str().expect("name");
                let nq = qty(&r["nominalQuota"]);
                // Never more than the flavor's nodes have (a pool of several flavors splits
                // its instances between them).
                assert!(
                    nq <= physical(pool, name) + 1e-9,
                    "{team} {fname} {name}: quota {nq} above the {} the pool has",
                    physical(pool, name)
                );
                quota
                    .entry(fname.clone())
                    .or_default()
                    .insert(name.to_owned(), nq);
            }
        }
        // Every planned pod of the team fits: per pool, its flavors' quota for each resource
        // covers the team's pods there.
        for pool in pools {
            let mine: Vec<&String> = ws
                .iter()
                .filter(|(w, (t, ..))| {
                    t == team
                        && pool["workloads"]
                            .as_array()
                            .is_some_and(|a| a.iter().any(|x| x == w.as_str()))
                })
                .map(|(w, _)| w)
                .collect();
            if mine.is_empty() {
                continue;
            }
            let pool_flavors: Vec<&String> = flavors
                .iter()
                .filter(|(_, f)| {
                    f["spec"]["nodeLabels"]["gpuplan.io/pool"]
                        == pool["name"].as_str().unwrap_or("")
                })
                .map(|(n, _)| n)
                .collect();
            let have = |r: &str| -> f64 {
                pool_flavors
                    .iter()
                    .map(|f| quota.get(*f).and_then(|q| q.get(r)).copied().unwrap_or(0.0))
                    .sum()
            };
            let (mut cpu, mut mem, mut gpu) = (0.0, 0.0, BTreeMap::<String, f64>::new());
            for w in mine {
                let (_, pods, c, m, g) = ws[w];
                cpu += pods * c;
                mem += pods * m;
                // The resource a pod asks for is the one the serving values give it, or one
                // nvidia.com/gpu per GPU of the replica.
                let (res, count) = match serving.get(w.as_str()) {
                    Some(s) => {
                        let limits = s["resources"]["limits"].as_mapping().expect("limits");
                        let (k, v) = limits.iter().next().expect("one GPU resource");
                        (k.as_str().unwrap_or("").to_owned(), qty(v))
                    }
                    None if pool["sharing"] == "dedicated" => ("nvidia.com/gpu".to_owned(), g),
                    None => ("nvidia.com/gpu".to_owned(), 1.0),
                };
                // Operator MIG pods outside the serving values ask for a profile this test
                // cannot tell; their quota bound is checked above.
                if !(pool["sharing"] == "mig"
                    && res == "nvidia.com/gpu"
                    && rec["provider"] == "aws")
                {
                    *gpu.entry(res).or_default() += pods * count;
                }
            }
            assert!(have("cpu") + 1e-9 >= cpu, "{team} on {}: cpu", pool["name"]);
            assert!(
                have("memory") + 1e-9 >= mem,
                "{team} on {}: memory",
                pool["name"]
            );
            for (r, need) in gpu {
                assert!(
                    have(&r) + 1e-9 >= need,
                    "{team} on {}: {r} quota {} below its {need} pods' requests",
                    pool["name"],
                    have(&r)
                );
            }
        }
    }
}

const PLANS: [&str; 4] = [
    "plans/azure-inference.toml",
    "plans/aws-training.toml",
    "plans/minimal.toml",
    "tests/fixtures/render/operator-mig.toml",
];

#[test]
fn every_example_renders_kueue_objects_that_admit_its_pods() {
    for p in PLANS {
        check(&root().join(p), &[], "v1beta2");
    }
    check(
        &root().join(PLANS[0]),
        &["--kueue-api", "v1beta1"],
        "v1beta1",
    );
}

#[test]
fn mig_quotas_never_exceed_the_physical_instances_and_aks_mig_asks_for_gpus() {
    let dir = tempfile::tempdir().expect("tmp");
    // The EKS p4de case: mixed MIG layouts on A100 80GB, where quotas used to be added
    // once per layout (3g.40gb 24 against 6 instances).
    let eks = dir.path().join("eks.toml");
    let mut text = "version = 1\n[plan]\nname = \"eks\"\nowner = \"o\"\nprovider = \"aws\"\nregions = [\"us-east-1\"]\n\n[cluster]\nmig_manager = \"gpu-operator\"\n".to_owned();
    for (name, team, replicas, frac, gib) in [
        ("rank", "search", 6, "0.42", 30),
        ("embed", "search", 8, "0.28", 15),
        ("tag", "ads", 10, "0.14", 8),
    ] {
        text += &format!(
            "\n[[workload]]\nname = \"{name}\"\nteam = \"{team}\"\nkind = \"inference\"\nreplicas = {replicas}\ngpu_fraction = {frac}\nsharing = \"mig\"\ngpu_memory_gib = {gib}\nskus = [\"p4de.24xlarge\"]\n"
        );
    }
    std::fs::write(&eks, &text).expect("plan");
    check(&eks, &[], "v1beta2");

    // AKS: the single strategy advertises `nvidia.com/gpu`, never `nvidia.com/mig-*`; a spot
    // pool carries AKS's taint and label, its flavor and serving values tolerate it.
    let aks = dir.path().join("aks.toml");
    let text = "version = 1\n[plan]\nname = \"aks\"\nowner = \"o\"\nprovider = \"azure\"\nregions = [\"eastus\"]\n\n\
        [[workload]]\nname = \"chat\"\nteam = \"apps\"\nkind = \"inference\"\nuser_facing = true\nreplicas = 4\ngpu_fraction = 0.42\nsharing = \"mig\"\ngpu_memory_gib = 30\nskus = [\"Standard_NC24ads_A100_v4\"]\n\n\
        [[workload]]\nname = \"scoring\"\nteam = \"apps\"\nkind = \"inference\"\nreplicas = { min = 0, max = 4 }\ngpus = 1\ninterruptible = true\nskus = [\"Standard_NC4as_T4_v3\"]\n\n\
        [[pool]]\nname = \"chat\"\nsku = \"Standard_NC24ads_A100_v4\"\nregion = \"eastus\"\nnodes = 2\nsharing = \"mig\"\nmig_profile = \"3g.40gb\"\nworkloads = [\"chat\"]\n\n\
        [[pool]]\nname = \"scoring\"\nsku = \"Standard_NC4as_T4_v3\"\nregion = \"eastus\"\nnodes = { min = 0, max = 4 }\ncapacity = \"spot\"\nworkloads = [\"scoring\"]\n";
    std::fs::write(&aks, text).expect("plan");
    // Recommended (no pools): the admission simulation.
    let recommended = dir.path().join("aks-rec.toml");
    std::fs::write(&recommended, &text[..text.find("[[pool]]").expect("pools")]).expect("plan");
    check(&recommended, &[], "v1beta2");
    // Declared, with the spot pool (Azure bands are unknown offline, so recommend keeps
    // on-demand): AKS's taint and label on the pool, its flavor and its pods tolerate it.
    let out = tempfile::tempdir().expect("tmp");
    gpuplan()
        .arg("render")
        .arg(&aks)
        .args(["--declared", "--out"])
        .arg(out.path())
        .assert()
        .success();
    let read = |p: &str| std::fs::read_to_string(out.path().join(p)).expect(p);
    let objects = docs(&read("kueue/kueue.yaml"));
    let all = serde_yaml::to_string(&objects).expect("yaml");
    assert!(!all.contains("nvidia.com/mig-"), "{all}");
    let spot = objects
        .iter()
        .find(|o| o["kind"] == "ResourceFlavor" && o["metadata"]["name"] == "scoring")
        .expect("spot flavor");
    let taint = |list: &Value| {
        list.as_sequence().is_some_and(|ts| {
            ts.iter().any(|t| {
                t["key"] == "kubernetes.azure.com/scalesetpriority"
                    && t["value"] == "spot"
                    && t["effect"] == "NoSchedule"
            })
        })
    };
    assert!(
        taint(&spot["spec"]["nodeTaints"]) && taint(&spot["spec"]["tolerations"]),
        "{spot:?}"
    );
    let tf = read("terraform/main.tf");
    assert!(
        tf.contains("\"kubernetes.azure.com/scalesetpriority=spot:NoSchedule\""),
        "{tf}"
    );
    assert!(
        tf.contains("\"kubernetes.azure.com/scalesetpriority\" = \"spot\""),
        "{tf}"
    );
    let serving: Value = serde_yaml::from_str(&read("serving/values.yaml")).expect("serving");
    assert!(
        taint(&serving["scoring"]["tolerations"]),
        "{:?}",
        serving["scoring"]
    );
    assert_eq!(
        serving["chat"]["resources"]["limits"]["nvidia.com/gpu"].as_u64(),
        Some(1)
    );
}

#[test]
fn drivers_are_installed_once() {
    let files = |plan: &str| {
        let out = tempfile::tempdir().expect("tmp");
        gpuplan()
            .args(["render", plan, "--out"])
            .arg(out.path())
            .assert()
            .success();
        let read = |p: &str| std::fs::read_to_string(out.path().join(p)).expect(p);
        (
            read("terraform/main.tf"),
            read("helm/gpu-operator-values.yaml"),
            read("README.md"),
        )
    };
    // EKS on the NVIDIA AMI: the AMI has the driver and toolkit, the operator installs neither.
    let (tf, values, readme) = files("plans/aws-training.toml");
    assert!(tf.contains("\"AL2023_x86_64_NVIDIA\""), "{tf}");
    let v: Value = serde_yaml::from_str(&values).expect("values");
    assert_eq!(v["driver"]["enabled"].as_bool(), Some(false));
    assert_eq!(v["toolkit"]["enabled"].as_bool(), Some(false));
    assert!(
        readme.contains("GPU drivers: the EKS AL2023 NVIDIA AMI"),
        "{readme}"
    );
    // AKS: every pool without AKS-managed MIG skips AKS's driver; the operator installs it.
    let (tf, values, _) = files("plans/azure-inference.toml");
    let v: Value = serde_yaml::from_str(&values).expect("values");
    assert_eq!(v["driver"]["enabled"].as_bool(), Some(true));
    let body: hcl_edit::structure::Body = tf.parse().expect("hcl");
    let mut pools = 0;
    for block in body.get_blocks("resource") {
        if block.labels.first().map(|l| l.as_str()) != Some("azurerm_kubernetes_cluster_node_pool")
        {
            continue;
        }
        pools += 1;
        let has = |k: &str| block.body.get_attribute(k).is_some();
        assert!(
            has("gpu_instance") != has("gpu_driver"),
            "one of gpu_instance and gpu_driver"
        );
    }
    assert!(pools >= 3);
}

/// Two teams share a T4 pool and state no cpu or memory: each team's cpu and memory quota on
/// the flavor is its share of the GPUs (3 of 4 and 1 of 4) of what the flavor's nodes have,
/// so the two add up to the flavor, as one team alone would get, not to twice it.
#[test]
fn teams_sharing_a_flavor_split_what_they_state_no_request_for() {
    let dir = tempfile::tempdir().expect("tmp");
    let write = |name: &str, second_team: &str| {
        let plan = dir.path().join(name);
        std::fs::write(
            &plan,
            format!(
                "version = 1\n[plan]\nname = \"p\"\nowner = \"o\"\nprovider = \"azure\"\nregions = [\"eastus\"]\n\n\
                 [[workload]]\nname = \"big\"\nteam = \"a\"\nkind = \"batch\"\nreplicas = 3\nskus = [\"Standard_NC4as_T4_v3\"]\n\n\
                 [[workload]]\nname = \"small\"\nteam = \"{second_team}\"\nkind = \"batch\"\nreplicas = 1\nskus = [\"Standard_NC4as_T4_v3\"]\n"
            ),
        )
        .expect("plan");
        plan
    };
    // team -> resource -> quota on the one flavor
    let quotas = |plan: &Path| -> BTreeMap<String, BTreeMap<String, f64>> {
        let (objects, _, _) = render(plan, &[]);
        let mut out = BTreeMap::new();
        for q in objects.iter().filter(|o| o["kind"] == "ClusterQueue") {
            let team = q["metadata"]["name"]
                .as_str()
                .expect("name")
                .trim_start_matches("gpuplan-")
                .to_owned();
            let flavors = q["spec"]["resourceGroups"][0]["flavors"]
                .as_sequence()
                .expect("flavors");
            assert_eq!(flavors.len(), 1, "one pool");
            let mut by = BTreeMap::new();
            for r in flavors[0]["resources"].as_sequence().expect("resources") {
                by.insert(
                    r["name"].as_str().expect("name").to_owned(),
                    qty(&r["nominalQuota"]),
                );
            }
            out.insert(team, by);
        }
        out
    };
    let alone = quotas(&write("alone.toml", "a"));
    let shared = quotas(&write("shared.toml", "b"));
    let whole = &alone["a"];
    for r in ["cpu", "memory"] {
        let (a, b) = (shared["a"][r], shared["b"][r]);
        assert!(a > 0.0 && b > 0.0, "{r}: {a} {b}");
        assert!(
            a + b <= whole[r] + 1e-6,
            "{r}: {a} + {b} over the flavor's {}",
            whole[r]
        );
        assert!(
            a + b >= whole[r] - 1.001,
            "{r}: {a} + {b} leave the flavor's {} unshared",
            whole[r]
        );
        assert!((a / (a + b) - 0.75).abs() < 0.02, "{r}: {a} vs {b}");
    }
    assert_eq!(shared["a"]["nvidia.com/gpu"], 3.0);
    assert_eq!(shared["b"]["nvidia.com/gpu"], 1.0);
}
