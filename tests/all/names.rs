//! Issue 56: every name gpuplan writes into a provider is a function of what it names. A plan
//! rendered, then edited (a workload added, one removed, the workloads reordered), renders
//! the pools it did not touch under the same AKS agent pool names: azurerm replaces an agent
//! pool whose `name` changes, so a renamed pool is a drained and recreated one.

use crate::common;

use std::collections::BTreeMap;
use std::path::Path;

/// AKS node pool resources of a render of `plan_text`: resource label -> (name, rotation).
fn aks_names(plan_text: &str) -> BTreeMap<String, (String, String)> {
    let (_dir, out) = common::rendered(plan_text, &[]);
    let tf = std::fs::read_to_string(out.join("terraform/main.tf")).expect("main.tf");
    let mut names = BTreeMap::new();
    let mut current: Option<(String, Option<String>)> = None;
    for line in tf.lines() {
        let l = line.trim();
        if let Some(rest) = l.strip_prefix("resource \"azurerm_kubernetes_cluster_node_pool\" \"") {
            current = Some((rest.split('"').next().unwrap_or("").to_owned(), None));
            continue;
        }
        let value = |key: &str| {
            l.strip_prefix(key)
                .map(str::trim_start)
                .and_then(|r| r.strip_prefix('='))
                .map(|v| v.trim().trim_matches('"').to_owned())
        };
        if let Some((label, name)) = current.as_mut() {
            if name.is_none() {
                if let Some(v) = value("name ") {
                    *name = Some(v);
                }
            }
            if let Some(r) = value("temporary_name_for_rotation") {
                let n = name.clone().unwrap_or_default();
                names.insert(label.clone(), (n, r));
                current = None;
            }
        }
    }
    assert!(!names.is_empty(), "no AKS node pool in\n{tf}");
    names
}

/// The plan's `[[workload]]` tables apart from its head.
fn split(plan: &str) -> (String, Vec<String>) {
    let mut parts = plan.split("[[workload]]\n");
    let head = parts.next().unwrap_or_default().to_owned();
    (head, parts.map(|w| format!("[[workload]]\n{w}")).collect())
}

#[test]
fn unrelated_edits_rename_no_aks_pool() {
    let base = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("plans/azure-inference.toml"),
    )
    .expect("plan");
    // The recommended pools (the plan's declared ones left out): what render names by itself.
    let base = base
        .split("\n[[pool]]")
        .next()
        .unwrap_or_default()
        .to_owned()
        + "\n";
    let (head, workloads) = split(&base);
    let before = aks_names(&base);
    let added = r#"[[workload]]
name = "ocr"
team = "docs"
kind = "batch"
gpus = 1
gpu_models = ["T4"]

"#;
    let mut reversed = workloads.clone();
    reversed.reverse();
    let edits = [
        (
            "a workload added first",
            format!("{head}{added}{}", workloads.concat()),
        ),
        (
            "the workloads reordered",
            format!("{head}{}", reversed.concat()),
        ),
        (
            "a workload added last",
            format!("{head}{}\n{added}", workloads.concat()),
        ),
    ];
    for (what, text) in edits {
        let after = aks_names(&text);
        let mut kept = 0;
        for (label, names) in &before {
            if let Some(now) = after.get(label) {
                kept += 1;
                assert_eq!(names, now, "{what}: pool `{label}` renamed");
            }
        }
        assert_eq!(kept, before.len(), "{what}: a pool went away: {after:?}");
    }
    // Removing a workload renames none of the pools that stay.
    let removed = format!("{head}{}", workloads[1..].concat());
    let after = aks_names(&removed);
    for (label, now) in &after {
        if let Some(was) = before.get(label) {
            assert_eq!(was, now, "a workload removed: pool `{label}` renamed");
        }
    }
}

/// Every name a render writes into a provider or a cluster, by where it is written:
/// `resource TYPE LABEL` -> its name attributes (Terraform), `KIND NAME` (Kueue, Karpenter).
fn written_names(plan_text: &str) -> (BTreeMap<String, Vec<String>>, Vec<String>) {
    let (_dir, out) = common::rendered(plan_text, &["--karpenter"]);
    let tf = std::fs::read_to_string(out.join("terraform/main.tf")).expect("main.tf");
    let body: hcl_edit::structure::Body = tf.parse().expect("hcl");
    let mut resources = BTreeMap::new();
    for block in body.get_blocks("resource") {
        let address: Vec<&str> = block.labels.iter().map(|l| l.as_str()).collect();
        let names: Vec<String> = [
            "name",
            "node_group_name",
            "temporary_name_for_rotation",
            "placement_group",
        ]
        .iter()
        .filter_map(|k| block.body.get_attribute(k))
        .map(|a| a.value.to_string().trim().to_owned())
        .collect();
        resources.insert(address.join(" "), names);
    }
    let mut objects = Vec::new();
    let mut yaml: Vec<std::path::PathBuf> = ["kueue", "karpenter"]
        .iter()
        .filter_map(|d| std::fs::read_dir(out.join(d)).ok())
        .flatten()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    yaml.sort();
    for f in yaml {
        let Ok(text) = std::fs::read_to_string(&f) else {
            continue;
        };
        for d in common::k8s::docs(&text) {
            if let (Some(k), Some(n)) = (d["kind"].as_str(), d["metadata"]["name"].as_str()) {
                objects.push(format!("{k} {n}"));
            }
        }
    }
    (resources, objects)
}

/// Issue 56 on every path: the AKS agent pools, EKS node groups and placement groups,
/// Karpenter NodePools and node classes, Kueue flavors and queues a render writes keep their
/// names when an unrelated workload is added or the workloads are reordered, so Terraform and
/// the cluster change only what the edit touched.
#[test]
fn unrelated_edits_rename_nothing_render_writes() {
    for (file, added) in [
        (
            "plans/azure-inference.toml",
            "[[workload]]\nname = \"ocr\"\nteam = \"docs\"\nkind = \"batch\"\ngpus = 1\ngpu_models = [\"T4\"]\n\n",
        ),
        (
            "plans/aws-training.toml",
            "[[workload]]\nname = \"ocr\"\nteam = \"docs\"\nkind = \"batch\"\ngpus = 1\nskus = [\"g6.xlarge\"]\n\n",
        ),
    ] {
        let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(file))
            .expect("plan");
        let base = text.split("\n[[pool]]").next().unwrap_or_default().to_owned() + "\n";
        let (head, workloads) = split(&base);
        let (tf, objects) = written_names(&base);
        assert!(
            tf.keys().any(|a| a.starts_with("aws_eks_node_group ")
                || a.starts_with("azurerm_kubernetes_cluster_node_pool ")),
            "{file}: no node pool in {tf:?}"
        );
        assert!(
            objects.iter().any(|o| o.starts_with("ResourceFlavor "))
                && objects.iter().any(|o| o.starts_with("NodePool ")),
            "{file}: {objects:?}"
        );
        let mut reversed = workloads.clone();
        reversed.reverse();
        for (what, edited) in [
            ("added", format!("{head}{added}{}", workloads.concat())),
            ("reordered", format!("{head}{}", reversed.concat())),
        ] {
            let (tf_after, objects_after) = written_names(&edited);
            for (address, names) in &tf {
                assert_eq!(
                    tf_after.get(address),
                    Some(names),
                    "{file}, a workload {what}: `resource {address}` renamed or gone"
                );
            }
            for o in &objects {
                assert!(
                    objects_after.contains(o),
                    "{file}, a workload {what}: {o} renamed or gone: {objects_after:?}"
                );
            }
        }
        // A workload removed: what stays keeps its names.
        let (tf_after, _) = written_names(&format!("{head}{}", workloads[1..].concat()));
        for (address, names) in &tf_after {
            if let Some(was) = tf.get(address) {
                assert_eq!(was, names, "{file}, a workload removed: `{address}` renamed");
            }
        }
    }
}
