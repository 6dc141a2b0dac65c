//! `gpuplan render`: snapshots of every output, and conformance with the real tools: HCL that
//! parses with the provider's real attribute names, Helm values with the chart's real keys,
//! mig-parted and device-plugin configs those tools accept, Kueue objects that validate
//! against the CRD schemas. `.ci/run` also parses the Terraform with HashiCorp's own parser.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use assert_cmd::Command;
use serde_json::Value;

pub(crate) fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

pub(crate) fn gpuplan() -> Command {
    let mut c = Command::cargo_bin("gpuplan").expect("binary");
    c.current_dir(root())
        .env("GPUPLAN_TODAY", "2026-12-02")
        .env("NO_COLOR", "1")
        .env_remove("GPUPLAN_CATALOG")
        .env("GPUPLAN_CACHE", "/nonexistent/gpuplan-test-cache");
    c
}

/// The plans that render, with the name their snapshots carry.
pub(crate) const PLANS: [(&str, &str); 5] = [
    ("azure-inference", "plans/azure-inference.toml"),
    ("aws-training", "plans/aws-training.toml"),
    ("minimal", "plans/minimal.toml"),
    ("operator-mig", "tests/fixtures/render/operator-mig.toml"),
    ("node-sizes", "tests/fixtures/render/node-sizes.toml"),
];

pub(crate) fn render_to(plan: &str, out: &Path, extra: &[&str]) -> BTreeMap<String, String> {
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

pub(crate) fn collect(base: &Path, dir: &Path, out: &mut BTreeMap<String, String>) {
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
pub(crate) fn kueue_of(files: &BTreeMap<String, String>) -> String {
    let all: Vec<&str> = files
        .iter()
        // The chart's values (kueue/values.yaml) are not Kueue objects.
        .filter(|(k, _)| k.starts_with("kueue/") && k.as_str() != "kueue/values.yaml")
        .map(|(_, v)| v.as_str())
        .collect();
    assert!(!all.is_empty(), "no Kueue file");
    all.join("\n")
}

pub(crate) fn rendered(plan: &str, extra: &[&str]) -> BTreeMap<String, String> {
    let dir = tempfile::tempdir().expect("tmp");
    render_to(plan, dir.path(), extra)
}

#[test]
pub(crate) fn every_output_is_snapshotted() {
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
pub(crate) fn output_is_byte_identical_run_to_run() {
    for (_, plan) in PLANS {
        assert_eq!(rendered(plan, &[]), rendered(plan, &[]));
    }
}

pub(crate) fn lines_of(path: &str) -> BTreeSet<String> {
    std::fs::read_to_string(root().join("tests/fixtures/conformance").join(path))
        .expect("fixture")
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect()
}

/// Argument names listed as "* `name` - (Required|Optional)" in a provider doc page.
pub(crate) fn doc_args(path: &str) -> BTreeSet<String> {
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
pub(crate) fn names(body: &hcl_edit::structure::Body, prefix: &str, out: &mut Vec<String>) {
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

pub(crate) const META: [&str; 6] = [
    "provider",
    "lifecycle",
    "lifecycle.ignore_changes",
    "count",
    "for_each",
    "depends_on",
];

#[test]
pub(crate) fn terraform_parses_and_uses_the_providers_attribute_names() {
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

pub(crate) fn yaml(text: &str) -> serde_yaml::Value {
    serde_yaml::from_str(text).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

pub(crate) fn json(v: &serde_yaml::Value) -> Value {
    serde_json::to_value(v).expect("yaml as json")
}

/// Key paths of a mapping; below `data` the chart takes free-form content.
pub(crate) fn key_paths(v: &serde_yaml::Value, prefix: &str, out: &mut Vec<String>) {
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

pub(crate) fn lookup<'a>(v: &'a serde_yaml::Value, path: &str) -> Option<&'a serde_yaml::Value> {
    path.split('.').try_fold(v, |cur, k| cur.get(k))
}

#[test]
pub(crate) fn helm_values_use_the_charts_keys_and_tools_accept_the_configs() {
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

pub(crate) fn crd_schema(file: &str) -> jsonschema::Validator {
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
pub(crate) fn kueue_objects_validate_against_the_crds() {
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
pub(crate) fn check_reports_drift_and_a_failed_render_leaves_the_old_output() {
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
pub(crate) fn names_that_try_to_break_out_are_refused_before_rendering() {
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
pub(crate) fn an_unsatisfiable_plan_renders_nothing() {
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
pub(crate) fn declared_pools_render_through_the_same_templates() {
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
pub(crate) fn all_doc_names(path: &str) -> BTreeSet<String> {
    std::fs::read_to_string(root().join("tests/fixtures/conformance").join(path))
        .expect("fixture")
        .lines()
        .filter_map(|l| l.strip_prefix("* `"))
        .filter_map(|l| l.split('`').next())
        .map(str::to_owned)
        .collect()
}

#[test]
pub(crate) fn a_declared_capacity_block_gets_its_launch_template() {
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
pub(crate) fn a_capacity_block_on_azure_is_refused() {
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
pub(crate) fn numbered_pools_keep_their_own_kueue_quotas() {
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
pub(crate) fn output_does_not_depend_on_how_the_plan_path_is_spelled() {
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
pub(crate) fn a_hostile_plan_file_name_cannot_inject_code() {
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
