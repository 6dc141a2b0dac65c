//! `gpuplan render`: snapshots of every output, and conformance with the real tools: HCL that
//! parses with the provider's real attribute names, Helm values with the chart's real keys,
//! mig-parted and device-plugin configs those tools accept, Kueue objects that validate
//! against the CRD schemas. `.ci/run` also parses the Terraform with HashiCorp's own parser.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use assert_cmd::Command;
use serde_json::Value;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn gpuplan() -> Command {
    let mut c = Command::cargo_bin("gpuplan").expect("binary");
    c.current_dir(root())
        .env("GPUPLAN_TODAY", "2026-12-02")
        .env("NO_COLOR", "1")
        .env_remove("GPUPLAN_CATALOG")
        .env("GPUPLAN_CACHE", "/nonexistent/gpuplan-test-cache");
    c
}

/// The plans that render, with the name their snapshots carry.
const PLANS: [(&str, &str); 5] = [
    ("azure-inference", "plans/azure-inference.toml"),
    ("aws-training", "plans/aws-training.toml"),
    ("minimal", "plans/minimal.toml"),
    ("operator-mig", "tests/fixtures/render/operator-mig.toml"),
    ("node-sizes", "tests/fixtures/render/node-sizes.toml"),
];

fn render_to(plan: &str, out: &Path, extra: &[&str]) -> BTreeMap<String, String> {
    gpuplan()
        .args(["render", plan, "--out"])
        .arg(out)
        .args(extra)
        .assert()
        .code(0);
    let mut files = BTreeMap::new();
    collect(out, out, &mut files);
    files
}

fn collect(base: &Path, dir: &Path, out: &mut BTreeMap<String, String>) {
    for e in std::fs::read_dir(dir).expect("dir") {
        let p = e.expect("entry").path();
        if p.is_dir() {
            collect(base, &p, out);
        } else {
            let rel = p
                .strip_prefix(base)
                .expect("under base")
                .to_string_lossy()
                .replace('\\', "/");
            out.insert(rel, std::fs::read_to_string(&p).expect("utf-8"));
        }
    }
}

/// Every rendered Kueue file (one per cluster), as one YAML stream.
fn kueue_of(files: &BTreeMap<String, String>) -> String {
    let all: Vec<&str> = files
        .iter()
        // The chart's values (kueue/values.yaml) are not Kueue objects.
        .filter(|(k, _)| k.starts_with("kueue/") && k.as_str() != "kueue/values.yaml")
        .map(|(_, v)| v.as_str())
        .collect();
    assert!(!all.is_empty(), "no Kueue file");
    all.join("\n")
}

fn rendered(plan: &str, extra: &[&str]) -> BTreeMap<String, String> {
    let dir = tempfile::tempdir().expect("tmp");
    render_to(plan, dir.path(), extra)
}

#[test]
fn every_output_is_snapshotted() {
    for (name, plan) in PLANS {
        for (file, text) in rendered(plan, &[]) {
            insta::assert_snapshot!(format!("{name}__{}", file.replace('/', "_")), text);
        }
    }
    let files = rendered("plans/azure-inference.toml", &["--capacity-reservations"]);
    insta::assert_snapshot!(
        "azure-inference__reservations_main.tf",
        files["terraform/main.tf"]
    );
    let files = rendered("plans/aws-training.toml", &["--capacity-reservations"]);
    insta::assert_snapshot!(
        "aws-training__reservations_main.tf",
        files["terraform/main.tf"]
    );
}

#[test]
fn output_is_byte_identical_run_to_run() {
    for (_, plan) in PLANS {
        assert_eq!(rendered(plan, &[]), rendered(plan, &[]));
    }
}

fn lines_of(path: &str) -> BTreeSet<String> {
    std::fs::read_to_string(root().join("tests/fixtures/conformance").join(path))
        .expect("fixture")
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect()
}

/// Argument names listed as "* `name` - (Required|Optional)" in a provider doc page.
fn doc_args(path: &str) -> BTreeSet<String> {
    std::fs::read_to_string(root().join("tests/fixtures/conformance").join(path))
        .expect("fixture")
        .lines()
        .filter(|l| l.contains("(Required)") || l.contains("(Optional)"))
        .filter_map(|l| l.strip_prefix("* `"))
        .filter_map(|l| l.split('`').next())
        .map(str::to_owned)
        .collect()
}

/// Every attribute and block name of a body, nested ones as `block.name`.
fn names(body: &hcl_edit::structure::Body, prefix: &str, out: &mut Vec<String>) {
    for s in body.iter() {
        match s {
            hcl_edit::structure::Structure::Attribute(a) => {
                out.push(format!("{prefix}{}", a.key.as_str()));
            }
            // `dynamic "x" { for_each = …, content { … } }` writes blocks named `x`: their
            // arguments are those of `x`.
            hcl_edit::structure::Structure::Block(b) if b.ident.as_str() == "dynamic" => {
                let label = b.labels.first().map_or("", |l| l.as_str());
                let n = format!("{prefix}{label}");
                out.push(n.clone());
                for s in b.body.iter() {
                    if let hcl_edit::structure::Structure::Block(c) = s {
                        if c.ident.as_str() == "content" {
                            names(&c.body, &format!("{n}."), out);
                        }
                    }
                }
            }
            hcl_edit::structure::Structure::Block(b) => {
                let n = format!("{prefix}{}", b.ident.as_str());
                out.push(n.clone());
                names(&b.body, &format!("{n}."), out);
            }
        }
    }
}

const META: [&str; 6] = [
    "provider",
    "lifecycle",
    "lifecycle.ignore_changes",
    "count",
    "for_each",
    "depends_on",
];

#[test]
fn terraform_parses_and_uses_the_providers_attribute_names() {
    let mut allowed: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
    allowed.insert(
        "azurerm_kubernetes_cluster_node_pool",
        lines_of("azurerm_node_pool_args.txt"),
    );
    allowed.insert(
        "aws_eks_node_group",
        lines_of("aws_eks_node_group_args.txt"),
    );
    let mut reservation = doc_args("capacity_reservation.html.markdown");
    // the `sku` block's arguments
    reservation.extend(["sku.name".to_owned(), "sku.capacity".to_owned()]);
    allowed.insert("azurerm_capacity_reservation", reservation);
    allowed.insert(
        "azurerm_capacity_reservation_group",
        doc_args("capacity_reservation_group.html.markdown"),
    );
    allowed.insert(
        "aws_ec2_capacity_reservation",
        doc_args("ec2_capacity_reservation.html.markdown"),
    );
    allowed.insert(
        "aws_placement_group",
        doc_args("placement_group.html.markdown"),
    );
    allowed.insert(
        "aws_autoscaling_schedule",
        lines_of("aws_autoscaling_schedule_args.txt"),
    );
    allowed.insert(
        "aws_security_group",
        lines_of("aws_security_group_args.txt"),
    );
    // Data sources: `type name` per line.
    let mut data: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for l in lines_of("aws_data_source_names.txt") {
        if let Some((t, n)) = l.split_once(' ') {
            data.entry(t.to_owned()).or_default().insert(n.to_owned());
        }
    }
    // Launch-template blocks are documented each under its own name.
    let template = all_doc_names("launch_template.html.markdown");
    allowed.insert("aws_launch_template", BTreeSet::new());
    let mut seen = BTreeSet::new();
    let mut cases: Vec<(&str, Vec<&str>)> = PLANS
        .iter()
        .map(|(_, p)| (*p, vec!["--capacity-reservations"]))
        .collect();
    // An EFA gang with a reserved floor, and a declared Capacity Block.
    cases.push((
        "tests/fixtures/render/efa-gang.toml",
        vec!["--capacity-reservations"],
    ));
    cases.push((
        "tests/fixtures/render/efa-floor.toml",
        vec!["--capacity-reservations"],
    ));
    cases.push((
        "tests/fixtures/render/capacity-block.toml",
        vec!["--declared"],
    ));
    for (plan, extra) in &cases {
        let plan = *plan;
        let files = rendered(plan, extra);
        let tf = &files["terraform/main.tf"];
        let body: hcl_edit::structure::Body =
            tf.parse().unwrap_or_else(|e| panic!("{plan}: {e}\n{tf}"));
        for s in body.iter() {
            let hcl_edit::structure::Structure::Block(b) = s else {
                continue;
            };
            let kind = b
                .labels
                .first()
                .map(|l| l.as_str().to_owned())
                .unwrap_or_default();
            if b.ident.as_str() == "data" {
                let Some(ok) = data.get(&kind) else {
                    panic!("{plan}: unexpected data source `{kind}`");
                };
                let mut got = Vec::new();
                names(&b.body, "", &mut got);
                for n in got {
                    assert!(
                        ok.contains(&n) || META.contains(&n.as_str()),
                        "{plan}: data `{kind}` has no argument `{n}`"
                    );
                }
                seen.insert(format!("data.{kind}"));
                continue;
            }
            if b.ident.as_str() != "resource" {
                continue;
            }
            let Some(ok) = allowed.get(kind.as_str()) else {
                panic!("{plan}: unexpected resource type `{kind}`");
            };
            seen.insert(kind.clone());
            let mut got = Vec::new();
            names(&b.body, "", &mut got);
            for n in got {
                let documented = if kind == "aws_launch_template" {
                    n.rsplit('.')
                        .next()
                        .is_some_and(|last| template.contains(last))
                } else {
                    ok.contains(&n)
                };
                assert!(
                    documented || META.contains(&n.as_str()),
                    "{plan}: `{kind}` has no argument `{n}`"
                );
            }
        }
    }
    for kind in allowed.keys() {
        assert!(seen.contains(*kind), "no plan rendered a `{kind}`");
    }
    // Attributes read from data sources are documented ones.
    for (plan, extra) in &cases {
        let tf = &rendered(plan, extra)["terraform/main.tf"];
        for (t, attrs) in &data {
            let needle = format!("data.{t}.");
            for (i, _) in tf.match_indices(&needle) {
                let rest = &tf[i + needle.len()..];
                let rest = rest.split_once('.').map_or("", |x| x.1);
                let path: String = rest
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || "_.[]".contains(*c))
                    .collect();
                let path = path.replace("[0]", "");
                let path: String = path
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || "_.".contains(*c))
                    .collect();
                assert!(
                    attrs.contains(path.trim_end_matches('.')),
                    "{plan}: data.{t} has no attribute `{path}`"
                );
            }
        }
    }
}

fn yaml(text: &str) -> serde_yaml::Value {
    serde_yaml::from_str(text).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

fn json(v: &serde_yaml::Value) -> Value {
    serde_json::to_value(v).expect("yaml as json")
}

/// Key paths of a mapping; below `data` the chart takes free-form content.
fn key_paths(v: &serde_yaml::Value, prefix: &str, out: &mut Vec<String>) {
    if let serde_yaml::Value::Mapping(m) = v {
        for (k, val) in m {
            let k = k.as_str().unwrap_or_default();
            let path = if prefix.is_empty() {
                k.to_owned()
            } else {
                format!("{prefix}.{k}")
            };
            out.push(path.clone());
            if k != "data" {
                key_paths(val, &path, out);
            }
        }
    }
}

fn lookup<'a>(v: &'a serde_yaml::Value, path: &str) -> Option<&'a serde_yaml::Value> {
    path.split('.').try_fold(v, |cur, k| cur.get(k))
}

#[test]
fn helm_values_use_the_charts_keys_and_tools_accept_the_configs() {
    let chart = yaml(
        &std::fs::read_to_string(
            root().join("tests/fixtures/conformance/gpu-operator-values.yaml"),
        )
        .expect("chart"),
    );
    let catalog = gpuplan::catalog::Catalog::embedded(&[]).expect("catalog");
    let a100 = catalog
        .gpu("A100-40GB")
        .and_then(|g| g.mig.clone())
        .expect("A100 MIG");
    let mut mig_configs_seen = 0;
    for (_, plan) in PLANS {
        let files = rendered(plan, &[]);
        let values = yaml(&files["helm/gpu-operator-values.yaml"]);
        let mut paths = Vec::new();
        key_paths(&values, "", &mut paths);
        for p in &paths {
            assert!(
                lookup(&chart, p).is_some(),
                "{plan}: the chart has no value `{p}`"
            );
        }
        // device plugin configs (k8s-device-plugin api/config/v1 rules)
        let data = lookup(&values, "devicePlugin.config.data").expect("device plugin data");
        let default = lookup(&values, "devicePlugin.config.default").and_then(|v| v.as_str());
        assert!(
            default.is_some_and(|d| data.get(d).is_some()),
            "the default config exists"
        );
        for (name, text) in data.as_mapping().expect("map") {
            let cfg = yaml(text.as_str().expect("a config is a string"));
            let top: Vec<&str> = cfg
                .as_mapping()
                .expect("map")
                .keys()
                .filter_map(|k| k.as_str())
                .collect();
            for k in &top {
                assert!(
                    ["version", "flags", "resources", "sharing", "imex"].contains(k),
                    "{name:?}: `{k}`"
                );
            }
            assert_eq!(cfg["version"].as_str(), Some("v1"));
            if let Some(sharing) = cfg.get("sharing") {
                for kind in ["timeSlicing", "mps"] {
                    let Some(s) = sharing.get(kind) else { continue };
                    let res = s["resources"].as_sequence().expect("resources");
                    assert!(!res.is_empty());
                    for r in res {
                        assert_eq!(r["name"].as_str(), Some("nvidia.com/gpu"));
                        assert!(
                            r["replicas"].as_u64().is_some_and(|n| n >= 2),
                            "replicas >= 2"
                        );
                    }
                    assert_eq!(s["failRequestsGreaterThanOne"].as_bool(), Some(true));
                }
            }
        }
        // mig-parted config (NVIDIA/mig-parted api/spec/v1 rules, and placeable layouts)
        let Some(text) =
            lookup(&values, "migManager.config.data").and_then(|d| d.get("config.yaml"))
        else {
            continue;
        };
        let cfg = yaml(text.as_str().expect("string"));
        let m = cfg.as_mapping().expect("map");
        assert!(m
            .keys()
            .all(|k| ["version", "mig-configs"].contains(&k.as_str().unwrap_or(""))));
        assert_eq!(cfg["version"].as_str(), Some("v1"));
        let configs = cfg["mig-configs"].as_mapping().expect("mig-configs");
        assert!(!configs.is_empty());
        let default = lookup(&values, "migManager.config.default")
            .and_then(|v| v.as_str())
            .expect("default");
        assert!(configs.get(default).is_some());
        for (name, entries) in configs {
            let entries = entries.as_sequence().expect("entries");
            assert!(!entries.is_empty(), "{name:?}");
            for e in entries {
                let devices = &e["devices"];
                assert!(
                    devices.as_str() == Some("all")
                        || devices
                            .as_sequence()
                            .is_some_and(|s| s.iter().all(|d| d.as_u64().is_some())),
                    "{name:?}: devices {devices:?}"
                );
                let enabled = e["mig-enabled"].as_bool().expect("mig-enabled is a bool");
                let devs = e.get("mig-devices");
                if !enabled {
                    assert!(devs.is_none_or(|d| d.as_mapping().is_some_and(|m| m.is_empty())));
                    continue;
                }
                mig_configs_seen += 1;
                let layout: indexmap::IndexMap<String, u32> = devs
                    .and_then(|d| d.as_mapping())
                    .expect("mig-devices")
                    .iter()
                    .map(|(k, v)| {
                        (
                            k.as_str().unwrap_or("").to_owned(),
                            v.as_u64().unwrap_or(0) as u32,
                        )
                    })
                    .collect();
                assert!(
                    gpuplan::mig::check(&a100, &layout).is_ok(),
                    "{name:?}: {layout:?} cannot be placed"
                );
            }
        }
    }
    assert!(
        mig_configs_seen >= 5,
        "the operator-mig fixture renders its layouts"
    );
}

fn crd_schema(file: &str) -> jsonschema::Validator {
    let crd = yaml(
        &std::fs::read_to_string(root().join("tests/fixtures/conformance").join(file))
            .expect("crd"),
    );
    let version = crd["spec"]["versions"]
        .as_sequence()
        .and_then(|vs| vs.iter().find(|v| v["name"].as_str() == Some("v1beta2")))
        .expect("v1beta2");
    jsonschema::validator_for(&json(&version["schema"]["openAPIV3Schema"])).expect("schema")
}

#[test]
fn kueue_objects_validate_against_the_crds() {
    let schemas: BTreeMap<&str, jsonschema::Validator> = [
        (
            "ResourceFlavor",
            crd_schema("kueue.x-k8s.io_resourceflavors.yaml"),
        ),
        (
            "ClusterQueue",
            crd_schema("kueue.x-k8s.io_clusterqueues.yaml"),
        ),
        ("LocalQueue", crd_schema("kueue.x-k8s.io_localqueues.yaml")),
        (
            "WorkloadPriorityClass",
            crd_schema("kueue.x-k8s.io_workloadpriorityclasses.yaml"),
        ),
        (
            "AdmissionCheck",
            crd_schema("kueue.x-k8s.io_admissionchecks.yaml"),
        ),
        (
            "ProvisioningRequestConfig",
            crd_schema("kueue.x-k8s.io_provisioningrequestconfigs.yaml"),
        ),
    ]
    .into_iter()
    .collect();
    let mut kinds = BTreeSet::new();
    for (_, plan) in PLANS {
        let files = rendered(plan, &[]);
        let kueue = kueue_of(&files);
        for doc in serde_yaml::Deserializer::from_str(&kueue) {
            let v: serde_yaml::Value = serde::Deserialize::deserialize(doc).expect("yaml document");
            if v.is_null() {
                continue;
            }
            let kind = v["kind"].as_str().expect("kind").to_owned();
            assert_eq!(v["apiVersion"].as_str(), Some("kueue.x-k8s.io/v1beta2"));
            let errors: Vec<String> = schemas[kind.as_str()]
                .iter_errors(&json(&v))
                .map(|e| format!("{} at {}", e, e.instance_path()))
                .collect();
            assert!(errors.is_empty(), "{plan}: {kind}: {errors:#?}");
            // every flavor of a queue lists every covered resource (Kueue's own rule)
            if kind == "ClusterQueue" {
                for g in v["spec"]["resourceGroups"].as_sequence().expect("groups") {
                    let covered: Vec<&str> = g["coveredResources"]
                        .as_sequence()
                        .expect("covered")
                        .iter()
                        .filter_map(|r| r.as_str())
                        .collect();
                    for f in g["flavors"].as_sequence().expect("flavors") {
                        let got: Vec<&str> = f["resources"]
                            .as_sequence()
                            .expect("resources")
                            .iter()
                            .filter_map(|r| r["name"].as_str())
                            .collect();
                        assert_eq!(got, covered);
                    }
                }
            }
            kinds.insert(kind);
        }
        let serving = yaml(&files["serving/values.yaml"]);
        assert!(serving.is_mapping());
    }
    assert_eq!(kinds.len(), 6, "{kinds:?}");
}

#[test]
fn check_reports_drift_and_a_failed_render_leaves_the_old_output() {
    let dir = tempfile::tempdir().expect("tmp");
    let out = dir.path().join("out");
    let first = render_to("plans/azure-inference.toml", &out, &[]);
    gpuplan()
        .args(["render", "plans/azure-inference.toml", "--check", "--out"])
        .arg(&out)
        .assert()
        .code(0);
    let tf = out.join("terraform/main.tf");
    std::fs::write(&tf, "# edited by hand\n").expect("write");
    let o = gpuplan()
        .args(["render", "plans/azure-inference.toml", "--check", "--out"])
        .arg(&out)
        .assert()
        .code(1)
        .get_output()
        .clone();
    assert!(String::from_utf8_lossy(&o.stdout).contains("terraform/main.tf"));
    assert_eq!(
        std::fs::read_to_string(&tf).expect("read"),
        "# edited by hand\n",
        "--check writes nothing"
    );
    // A template that fails: nothing is replaced.
    let templates = dir.path().join("templates");
    std::fs::create_dir_all(templates.join("kueue")).expect("mkdir");
    std::fs::write(
        templates.join("kueue/kueue.yaml.hbs"),
        "{{no_such_field}}\n",
    )
    .expect("write");
    gpuplan()
        .args(["render", "plans/minimal.toml", "--templates"])
        .arg(&templates)
        .arg("--out")
        .arg(&out)
        .assert()
        .code(2);
    assert_eq!(
        std::fs::read_to_string(&tf).expect("read"),
        "# edited by hand\n"
    );
    assert_eq!(
        std::fs::read_to_string(out.join("helm/gpu-operator-values.yaml")).expect("read"),
        first["helm/gpu-operator-values.yaml"]
    );
    // A working override is used; the other templates stay built in.
    std::fs::write(
        templates.join("kueue/kueue.yaml.hbs"),
        "# {{plan}} on {{provider}}\n",
    )
    .expect("write");
    let files = render_to(
        "plans/minimal.toml",
        &out,
        &["--templates", templates.to_str().expect("utf-8")],
    );
    assert_eq!(files["kueue/eastus.yaml"], "# minimal on azure\n");
    assert!(files["terraform/main.tf"].contains("azurerm_kubernetes_cluster_node_pool"));
}

#[test]
fn names_that_try_to_break_out_are_refused_before_rendering() {
    let dir = tempfile::tempdir().expect("tmp");
    for (key, bad) in [
        ("team", "a\\\"}\\n${file(\\\"/etc/passwd\\\")}"),
        ("name", "x: y\\n- z"),
    ] {
        let plan = format!(
            "version = 1\n[plan]\nname = \"p\"\nowner = \"o\"\nprovider = \"azure\"\nregions = [\"eastus\"]\n\n[[workload]]\n{}team = \"t\"\nkind = \"inference\"\n",
            if key == "name" {
                format!("name = \"{bad}\"\n").replace("team = \"t\"\n", "")
            } else {
                format!("name = \"w\"\nteam = \"{bad}\"\n")
            }
        );
        let plan = if key == "team" {
            plan.replace("team = \"t\"\n", "")
        } else {
            plan
        };
        let out: PathBuf = dir.path().join(format!("out-{key}"));
        let o = gpuplan()
            .args(["render", "-", "--out"])
            .arg(&out)
            .write_stdin(plan.clone())
            .assert()
            .code(2)
            .get_output()
            .clone();
        assert!(
            String::from_utf8_lossy(&o.stderr).contains("DNS-1123"),
            "{plan}\n{}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(!out.exists(), "nothing is written");
    }
}

#[test]
fn an_unsatisfiable_plan_renders_nothing() {
    let dir = tempfile::tempdir().expect("tmp");
    let out = dir.path().join("out");
    gpuplan()
        .args(["render", "plans/mixed-estate.toml", "--out"])
        .arg(&out)
        .assert()
        .code(1);
    assert!(!out.exists());
}

#[test]
fn declared_pools_render_through_the_same_templates() {
    for plan in [
        "plans/azure-inference.toml",
        "plans/aws-training.toml",
        "plans/mixed-estate.toml",
        "plans/minimal.toml",
    ] {
        let dir = tempfile::tempdir().expect("tmp");
        let declared = dir.path().join("declared");
        let o = gpuplan()
            // `--force`: mixed-estate's declared pools fail `check` on purpose.
            .args(["render", plan, "--declared", "--force", "--out"])
            .arg(&declared)
            .output()
            .expect("run");
        if plan.ends_with("minimal.toml") {
            // no [[pool]] to render
            assert_eq!(o.status.code(), Some(2));
            continue;
        }
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        let mut files = BTreeMap::new();
        collect(&declared, &declared, &mut files);
        let _: hcl_edit::structure::Body = files["terraform/main.tf"].parse().expect("hcl");
        for f in ["helm/gpu-operator-values.yaml", "serving/values.yaml"] {
            let _ = yaml(&files[f]);
        }
        if plan.ends_with("azure-inference.toml") {
            insta::assert_snapshot!(
                "azure-inference__declared_main.tf",
                files["terraform/main.tf"]
            );
            // the declared time-sliced pool gets caps that agree with its 4 replicas
            assert!(files["helm/gpu-operator-values.yaml"].contains("replicas: 4"));
        }
    }
}

/// Every argument name a provider doc page lists, at any nesting (`* `name``).
fn all_doc_names(path: &str) -> BTreeSet<String> {
    std::fs::read_to_string(root().join("tests/fixtures/conformance").join(path))
        .expect("fixture")
        .lines()
        .filter_map(|l| l.strip_prefix("* `"))
        .filter_map(|l| l.split('`').next())
        .map(str::to_owned)
        .collect()
}

#[test]
fn a_declared_capacity_block_gets_its_launch_template() {
    let files = rendered("tests/fixtures/render/capacity-block.toml", &["--declared"]);
    let tf = &files["terraform/main.tf"];
    insta::assert_snapshot!("capacity-block__declared_main.tf", tf);
    let body: hcl_edit::structure::Body = tf.parse().expect("hcl");
    let node_group = lines_of("aws_eks_node_group_args.txt");
    let template = all_doc_names("launch_template.html.markdown");
    let schedule = lines_of("aws_autoscaling_schedule_args.txt");
    let group = lines_of("aws_security_group_args.txt");
    let mut kinds = BTreeSet::new();
    for s in body.iter() {
        let hcl_edit::structure::Structure::Block(b) = s else {
            continue;
        };
        if b.ident.as_str() != "resource" {
            continue;
        }
        let kind = b
            .labels
            .first()
            .map(|l| l.as_str().to_owned())
            .unwrap_or_default();
        let mut got = Vec::new();
        names(&b.body, "", &mut got);
        for n in &got {
            let ok = META.contains(&n.as_str())
                || match kind.as_str() {
                    "aws_eks_node_group" => node_group.contains(n),
                    "aws_autoscaling_schedule" => schedule.contains(n),
                    "aws_security_group" => group.contains(n),
                    // nested launch-template blocks are documented under their own names
                    "aws_launch_template" => n
                        .rsplit('.')
                        .next()
                        .is_some_and(|last| template.contains(last)),
                    other => panic!("unexpected resource `{other}`"),
                };
            assert!(ok, "`{kind}` has no argument `{n}`");
        }
        kinds.insert(kind);
    }
    assert_eq!(kinds.len(), 4, "{kinds:?}");
    assert!(tf.contains("capacity_type   = \"CAPACITY_BLOCK\""));
    assert!(tf.contains("market_type = \"capacity-block\""));
    // The block's node group: its instance type in the launch template (EKS takes it from
    // there), zero nodes outside the block, scaled up at its start and to zero 30 minutes
    // before its end.
    let block = |kind: &str, name: &str| {
        body.get_blocks("resource")
            .find(|b| {
                b.labels.first().map(|l| l.as_str()) == Some(kind)
                    && b.labels.get(1).map(|l| l.as_str()) == Some(name)
            })
            .unwrap_or_else(|| panic!("{kind}.{name}"))
    };
    let attr = |b: &hcl_edit::structure::Block, k: &str| {
        b.body
            .get_attribute(k)
            .map(|a| a.value.to_string().trim().to_owned())
    };
    let ng = block("aws_eks_node_group", "pretrain_block");
    assert_eq!(attr(ng, "instance_types"), None);
    let sc = ng
        .body
        .get_blocks("scaling_config")
        .next()
        .expect("scaling");
    assert_eq!(attr(sc, "desired_size").as_deref(), Some("0"));
    assert_eq!(attr(sc, "min_size").as_deref(), Some("0"));
    assert_eq!(attr(sc, "max_size").as_deref(), Some("4"));
    let lt = block("aws_launch_template", "pretrain_block");
    assert_eq!(
        attr(lt, "instance_type").as_deref(),
        Some("\"p5.48xlarge\"")
    );
    let start = block("aws_autoscaling_schedule", "pretrain_block_start");
    assert_eq!(attr(start, "desired_capacity").as_deref(), Some("4"));
    let end = block("aws_autoscaling_schedule", "pretrain_block_end");
    assert_eq!(attr(end, "desired_capacity").as_deref(), Some("0"));
    assert!(attr(end, "start_time").is_some_and(|t| t.contains("\"-30m\"")));
}

#[test]
fn a_capacity_block_on_azure_is_refused() {
    let plan = "version = 1\n[plan]\nname = \"p\"\nowner = \"o\"\nprovider = \"azure\"\nregions = [\"eastus\"]\n\n[[workload]]\nname = \"w\"\nteam = \"t\"\nkind = \"training\"\n\n[[pool]]\nname = \"b\"\nsku = \"Standard_NC24ads_A100_v4\"\nregion = \"eastus\"\nnodes = 1\ncapacity = \"capacity-block\"\nworkloads = [\"w\"]\n";
    let o = gpuplan()
        .args(["check", "-"])
        .write_stdin(plan)
        .assert()
        .code(2)
        .get_output()
        .clone();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("only AWS sells") && err.contains("18:12"),
        "{err}"
    );
}

#[test]
fn numbered_pools_keep_their_own_kueue_quotas() {
    let dir = tempfile::tempdir().expect("tmp");
    let plan = dir.path().join("plan.toml");
    std::fs::write(
        &plan,
        "version = 1\n[plan]\nname = \"p\"\nowner = \"o\"\nprovider = \"azure\"\nregions = [\"eastus\"]\n\n\
         [[workload]]\nname = \"small\"\nteam = \"t\"\nkind = \"inference\"\nuser_facing = true\nreplicas = 3\nskus = [\"Standard_NC4as_T4_v3\"]\n\n\
         [[workload]]\nname = \"wide\"\nteam = \"t\"\nkind = \"inference\"\nuser_facing = true\nreplicas = 2\ngpus = 4\nskus = [\"Standard_NC64as_T4_v3\"]\n",
    )
    .expect("write");
    let files = rendered(plan.to_str().expect("utf-8"), &[]);
    let kueue = kueue_of(&files);
    let cq = serde_yaml::Deserializer::from_str(&kueue)
        .map(|d| <serde_yaml::Value as serde::Deserialize>::deserialize(d).expect("doc"))
        .find(|v| v["kind"].as_str() == Some("ClusterQueue"))
        .expect("cluster queue");
    let flavors = cq["spec"]["resourceGroups"][0]["flavors"]
        .as_sequence()
        .expect("flavors");
    let quota: BTreeMap<&str, u64> = flavors
        .iter()
        .map(|f| {
            let gpu = f["resources"]
                .as_sequence()
                .and_then(|rs| rs.iter().find(|r| r["name"] == "nvidia.com/gpu"))
                .expect("a GPU quota");
            (
                f["name"].as_str().unwrap_or(""),
                gpu["nominalQuota"]
                    .as_u64()
                    .or_else(|| gpu["nominalQuota"].as_str().and_then(|q| q.parse().ok()))
                    .unwrap_or(0),
            )
        })
        .collect();
    assert_eq!(quota.len(), 2, "{quota:?}");
    assert_eq!(quota.get("serving-t4-dedicated"), Some(&3), "{quota:?}");
    assert_eq!(quota.get("serving-t4-dedicated-2"), Some(&8), "{quota:?}");
}

#[test]
fn output_does_not_depend_on_how_the_plan_path_is_spelled() {
    let a = rendered("plans/minimal.toml", &[]);
    assert_eq!(a, rendered("./plans/minimal.toml", &[]));
    // From another working directory, with an absolute path.
    let elsewhere = tempfile::tempdir().expect("tmp");
    let out = elsewhere.path().join("out");
    gpuplan()
        .current_dir(elsewhere.path())
        .args(["render"])
        .arg(root().join("plans/minimal.toml"))
        .arg("--out")
        .arg(&out)
        .assert()
        .code(0);
    let mut c = BTreeMap::new();
    collect(&out, &out, &mut c);
    assert_eq!(a, c);
    // `--check` agrees: no drift from the spelling alone.
    gpuplan()
        .args(["render", "./plans/minimal.toml", "--check", "--out"])
        .arg(&out)
        .assert()
        .code(0);
}

#[test]
fn a_hostile_plan_file_name_cannot_inject_code() {
    let dir = tempfile::tempdir().expect("tmp");
    let name = "x\nresource \"null_resource\" \"pwn\" {}\nevil: true\n#.toml";
    let plan = dir.path().join(name);
    std::fs::copy(root().join("plans/minimal.toml"), &plan).expect("copy");
    let out = dir.path().join("out");
    gpuplan()
        .arg("render")
        .arg(&plan)
        .arg("--out")
        .arg(&out)
        .assert()
        .code(0);
    let mut files = BTreeMap::new();
    collect(&out, &out, &mut files);
    for (file, text) in &files {
        for line in text.lines() {
            assert!(
                !line.starts_with("resource \"null_resource\""),
                "{file}: {line}"
            );
            assert!(line.trim() != "evil: true", "{file}: {line}");
        }
    }
    let tf = &files["terraform/main.tf"];
    hcl_edit::parser::parse_body(tf).expect("main.tf parses");
    assert!(!tf.contains("\"null_resource\""), "{tf}");
    for (file, text) in &files {
        if file.ends_with(".yaml") {
            for doc in serde_yaml::Deserializer::from_str(text) {
                let v = <serde_yaml::Value as serde::Deserialize>::deserialize(doc).expect("yaml");
                assert!(v.get("evil").is_none(), "{file}");
            }
        }
    }
}

/// The top-level blocks of a Terraform file, by (block type, first label, second label).
fn blocks(tf: &str) -> BTreeMap<(String, String, String), hcl_edit::structure::Block> {
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
fn attr(body: &hcl_edit::structure::Body, key: &str) -> Option<String> {
    body.get_attribute(key)
        .map(|a| a.value.to_string().trim().to_owned())
}

fn block<'b>(
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
                    "azurerm"
                } else {
                    "aws"
                };
                let floor = tf
                    .lines()
                    .find_map(|l| l.trim().strip_prefix("version = \">= "))
                    .and_then(|v| v.strip_suffix('"'))
                    .expect("a version floor");
                let mut need = gpuplan::render::floors::baseline(provider).to_owned();
                for (p, arg, version, _) in gpuplan::render::floors::FLOORS {
                    let used = tf.lines().any(|l| {
                        let l = l.trim();
                        l.starts_with(&format!("{arg} ")) || l.contains(&format!(".{arg}"))
                    });
                    if *p == provider && used {
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
    assert_eq!(
        seen.len(),
        gpuplan::render::floors::FLOORS.len(),
        "{seen:?}"
    );
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
        extra += n * (l["on_demand_usd_per_hour"].as_f64().expect("od") - rate) * 730.0;
        assert!(
            files["README.md"].contains(&format!("| `{}` |", l["pool"].as_str().expect("pool")))
        );
    }
    assert!((list["monthly_usd_if_not_bought"].as_f64().expect("extra") - extra).abs() < 0.011);
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
