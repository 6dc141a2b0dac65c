//! Kueue objects a real cluster admits pods with: validated against the CRDs (v1beta2 by
//! default, v1beta1 on request), every resource a planned pod requests covered, MIG quotas
//! within the physical instances of a flavor, and an admission simulation: every planned pod
//! of every team fits its ClusterQueue, on a flavor whose labels and taints are its pool's.

use std::collections::BTreeMap;
use std::path::Path;

use serde_yaml::Value;

use crate::common;
use common::k8s::{crd, docs, json};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

pub(crate) fn gpuplan() -> assert_cmd::Command {
    let mut c = assert_cmd::Command::cargo_bin("gpuplan").expect("binary");
    c.current_dir(root())
        .env("GPUPLAN_TODAY", "2026-12-03")
        .env("NO_COLOR", "1")
        .env("GPUPLAN_CACHE", "/nonexistent/gpuplan-test-cache")
        .env_remove("GPUPLAN_CATALOG");
    c
}

/// Every rendered `kueue/<region>.yaml`, by file, in name order.
pub(crate) fn kueue_files(dir: &Path) -> Vec<(String, Vec<Value>)> {
    let mut files: Vec<String> = std::fs::read_dir(dir.join("kueue"))
        .expect("kueue/")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        // The chart's values (a plan with gangs) are not Kueue objects: checked on their own.
        .filter(|f| f != "values.yaml")
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no Kueue file");
    files
        .into_iter()
        .map(|f| {
            let text = std::fs::read_to_string(dir.join("kueue").join(&f)).expect("kueue file");
            (f, docs(&text))
        })
        .collect()
}

/// The rendered Kueue files, the workloads' values, and the recommendation they came from.
#[allow(clippy::type_complexity)]
fn render(plan: &Path, extra: &[&str]) -> (Vec<(String, Vec<Value>)>, Value, serde_json::Value) {
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
        kueue_files(out.path()),
        serde_yaml::from_str(&read("workloads/values.yaml")).expect("workloads"),
        crate::common::contract(&rec.stdout).expect("recommendation"),
    )
}

/// The GPU resource and count a pod of a workload asks for, from its values.
fn gpu_limit(values: &Value) -> (String, f64) {
    let limits = values["resources"]["limits"].as_mapping().expect("limits");
    limits
        .iter()
        .find(|(k, _)| k.as_str().is_some_and(|k| k.starts_with("nvidia.com/")))
        .map(|(k, v)| (k.as_str().unwrap_or("").to_owned(), qty(v)))
        .expect("a GPU resource")
}

/// Whether a pod's tolerations tolerate a taint (core/v1 `Toleration.ToleratesTaint`: an
/// empty key with `Exists` tolerates everything; `Equal` needs key, value and effect).
fn tolerates_taint(tolerations: &[Value], taint: &Value) -> bool {
    tolerations.iter().any(|t| {
        let op = t["operator"].as_str().unwrap_or("Equal");
        let effect_ok = t["effect"]
            .as_str()
            .is_none_or(|e| e.is_empty() || Some(e) == taint["effect"].as_str());
        let key_ok = t["key"]
            .as_str()
            .is_none_or(|k| k.is_empty() && op == "Exists")
            || t["key"] == taint["key"];
        let value_ok = op == "Exists"
            || t["value"].as_str().unwrap_or("") == taint["value"].as_str().unwrap_or("");
        effect_ok && key_ok && value_ok
    })
}

/// Kueue's flavor assignment for one pod set (kubernetes-sigs/kueue
/// `pkg/scheduler/flavorassigner/flavorassigner.go`, `findFlavorForPodSetResource`): the
/// ClusterQueue's flavors in order; a flavor is skipped when one of its NoSchedule or
/// NoExecute `nodeTaints` is tolerated neither by the pod nor by the flavor's own
/// `tolerations`, or when its `nodeLabels` fail the pod's nodeSelector and required node
/// affinity restricted to the label keys the group's flavors use (`flavorSelector`); the first
/// with nominal quota left for every requested resource is taken.
fn assign<'a>(
    pod: &Value,
    pods: f64,
    order: &[&'a Value],
    flavors: &BTreeMap<String, &Value>,
    used: &mut BTreeMap<(String, String), f64>,
) -> Option<&'a str> {
    let keys: Vec<String> = order
        .iter()
        .filter_map(|f| flavors.get(f["name"].as_str()?))
        .flat_map(|fl| {
            fl["spec"]["nodeLabels"]
                .as_mapping()
                .map(|m| {
                    m.keys()
                        .filter_map(|k| k.as_str().map(str::to_owned))
                        .collect::<Vec<_>>()
                })
                .unwrap_or_default()
        })
        .collect();
    let tolerations: Vec<Value> = pod["tolerations"]
        .as_sequence()
        .cloned()
        .unwrap_or_default();
    let (gpu, count) = gpu_limit(pod);
    let mut asks: Vec<(String, f64)> = vec![(gpu, count * pods)];
    for r in ["cpu", "memory"] {
        if let Some(q) = pod["resources"]["requests"].get(r) {
            asks.push((r.to_owned(), qty(q) * pods));
        }
    }
    'flavors: for f in order {
        let name = f["name"].as_str()?;
        let fl = flavors.get(name)?;
        let mut tol = tolerations.clone();
        tol.extend(
            fl["spec"]["tolerations"]
                .as_sequence()
                .cloned()
                .unwrap_or_default(),
        );
        for t in fl["spec"]["nodeTaints"].as_sequence().into_iter().flatten() {
            let e = t["effect"].as_str().unwrap_or("");
            if (e == "NoSchedule" || e == "NoExecute") && !tolerates_taint(&tol, t) {
                continue 'flavors;
            }
        }
        let labels = &fl["spec"]["nodeLabels"];
        if let Some(sel) = pod["nodeSelector"].as_mapping() {
            for (k, v) in sel {
                let k = k.as_str().unwrap_or("");
                if keys.iter().any(|x| x == k) && labels.get(k) != Some(v) {
                    continue 'flavors;
                }
            }
        }
        let terms = &pod["affinity"]["nodeAffinity"]
            ["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"];
        if let Some(terms) = terms.as_sequence() {
            let ok = terms.iter().any(|term| {
                term["matchExpressions"]
                    .as_sequence()
                    .into_iter()
                    .flatten()
                    .all(|e| {
                        let k = e["key"].as_str().unwrap_or("");
                        if !keys.iter().any(|x| x == k) {
                            return true;
                        }
                        let vals = e["values"].as_sequence().cloned().unwrap_or_default();
                        match e["operator"].as_str() {
                            Some("In") => labels.get(k).is_some_and(|v| vals.contains(v)),
                            Some("NotIn") => labels.get(k).is_none_or(|v| !vals.contains(v)),
                            _ => true,
                        }
                    })
            });
            if !ok {
                continue;
            }
        }
        let quota = |r: &str| {
            f["resources"]
                .as_sequence()
                .into_iter()
                .flatten()
                .find(|q| q["name"] == r)
                .map_or(0.0, |q| qty(&q["nominalQuota"]))
        };
        let fits = asks.iter().all(|(r, need)| {
            used.get(&(name.to_owned(), r.clone()))
                .copied()
                .unwrap_or(0.0)
                + need
                <= quota(r) + 1e-9
        });
        if fits {
            for (r, need) in &asks {
                *used.entry((name.to_owned(), r.clone())).or_default() += need;
            }
            return Some(name);
        }
    }
    None
}

/// The recommended pool a flavor's nodes belong to: the pool its `gpuplan.io/pool` label
/// names, and of a pool of several node sizes (that label shared), the size its
/// `node.kubernetes.io/instance-type` names.
fn flavor_pool<'r>(flavor: &Value, pools: &'r [serde_json::Value]) -> &'r serde_json::Value {
    let labels = &flavor["spec"]["nodeLabels"];
    let label = labels["gpuplan.io/pool"].as_str().unwrap_or("");
    let size = labels["node.kubernetes.io/instance-type"].as_str();
    let of_label: Vec<&serde_json::Value> =
        pools.iter().filter(|p| p["pool_label"] == label).collect();
    if of_label.len() > 1 {
        assert!(
            size.is_some(),
            "flavor {flavor:?} does not tell the sizes of `{label}` apart"
        );
    }
    of_label
        .into_iter()
        .find(|p| size.is_none_or(|s| p["sku"] == s))
        .unwrap_or_else(|| panic!("flavor {flavor:?} names no recommended pool"))
}

/// Every workload of every team, admitted by the model above in the order the ClusterQueue
/// lists its flavors and in the reverse order, lands on a flavor of a pool it was planned
/// for; no ClusterQueue names a flavor of another file's (cluster's) pools.
fn admission_follows_the_plan(
    files: &[(String, Vec<Value>)],
    values: &Value,
    rec: &serde_json::Value,
    ws: &BTreeMap<String, (String, f64, f64, f64, f64, f64)>,
    label: &str,
) {
    let pools = rec["pools"].as_array().expect("pools");
    let mut admitted: BTreeMap<String, usize> = BTreeMap::new();
    for (file, objects) in files {
        let region = file.trim_end_matches(".yaml");
        let flavors: BTreeMap<String, &Value> = objects
            .iter()
            .filter(|o| o["kind"] == "ResourceFlavor")
            .map(|o| (o["metadata"]["name"].as_str().unwrap_or("").to_owned(), o))
            .collect();
        for (name, f) in &flavors {
            let p = flavor_pool(f, pools);
            assert_eq!(p["region"], region, "{label}: flavor {name} in {file}");
        }
        for q in objects.iter().filter(|o| o["kind"] == "ClusterQueue") {
            let team = q["spec"]["namespaceSelector"]["matchLabels"]["kubernetes.io/metadata.name"]
                .as_str()
                .expect("team");
            let order: Vec<&Value> = q["spec"]["resourceGroups"][0]["flavors"]
                .as_sequence()
                .expect("flavors")
                .iter()
                .collect();
            for f in &order {
                assert!(
                    flavors.contains_key(f["name"].as_str().unwrap_or("")),
                    "{label}: {file} names a flavor it does not define"
                );
            }
            for reversed in [false, true] {
                let mut order = order.clone();
                if reversed {
                    order.reverse();
                }
                let mut used = BTreeMap::new();
                for (w, (t, pods, _, _, _, unit)) in ws {
                    if t != team {
                        continue;
                    }
                    let planned: Vec<&str> = pools
                        .iter()
                        .filter(|p| {
                            p["region"] == region
                                && p["workloads"]
                                    .as_array()
                                    .is_some_and(|a| a.iter().any(|x| x == w.as_str()))
                        })
                        .filter_map(|p| p["name"].as_str())
                        .collect();
                    if planned.is_empty() {
                        continue;
                    }
                    // Its entry, or where it is split over pools, its parts in this region
                    // (each with its own replicas).
                    let entries: Vec<(&Value, f64)> = match values.get(w.as_str()) {
                        Some(pod) => vec![(pod, *pods)],
                        None => values
                            .as_mapping()
                            .into_iter()
                            .flat_map(|m| m.values())
                            .filter(|e| e["workload"] == w.as_str() && e["region"] == region)
                            .map(|e| (e, qty(&e["replicas"]["max"])))
                            .collect(),
                    };
                    assert!(!entries.is_empty(), "{label}: no entry for {w} in {region}");
                    for (pod, pods) in entries {
                        assert_eq!(pod["namespace"].as_str(), Some(team), "{label}: {w}");
                        assert_eq!(
                            pod["labels"]["kueue.x-k8s.io/queue-name"].as_str(),
                            Some("gpuplan")
                        );
                        // A gang whole on one flavor; other pods each where they fit.
                        for _ in 0..(pods / unit).round() as usize {
                            let got = assign(pod, *unit, &order, &flavors, &mut used)
                                .unwrap_or_else(|| {
                                    panic!(
                                        "{label}: {w} is admitted nowhere (reversed: {reversed})"
                                    )
                                });
                            let pool = flavor_pool(flavors[got], pools)["name"]
                                .as_str()
                                .unwrap_or("");
                            assert!(planned.contains(&pool), "{label}: {w} admitted to {got} ({pool}), planned {planned:?} (reversed: {reversed})");
                        }
                    }
                    *admitted.entry(w.clone()).or_default() += 1;
                }
            }
        }
    }
    for p in pools {
        for w in p["workloads"].as_array().into_iter().flatten() {
            let w = w.as_str().unwrap_or("");
            assert!(
                admitted.get(w).copied().unwrap_or(0) >= 2,
                "{label}: {w} never admitted"
            );
        }
    }
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

/// A plan's workloads by name: (team, pods at peak, cpu, memory GiB, GPUs per pod, pods
/// admitted together) from the plan text. Kueue admits a gang (`nodes`) all or nothing, and
/// the pods of any other workload one by one (its pod integration: a Workload per pod).
fn workloads(plan: &Path) -> BTreeMap<String, (String, f64, f64, f64, f64, f64)> {
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
                n("nodes").unwrap_or(1.0),
            ),
        );
    }
    out
}

fn check(plan: &Path, extra: &[&str], api: &str) {
    let (files, values, rec) = render(plan, extra);
    admission_follows_the_plan(
        &files,
        &values,
        &rec,
        &workloads(plan),
        &plan.display().to_string(),
    );
    // Each cluster's objects on their own: the same team has a ClusterQueue of the same name
    // in every cluster.
    for (file, objects) in &files {
        check_cluster(
            plan,
            objects,
            file.trim_end_matches(".yaml"),
            &values,
            &rec,
            api,
        );
    }
}

/// One cluster's Kueue objects: valid against the CRDs, flavors that are its pools', quotas
/// within the nodes, and every planned pod of each team within its queue's quota.
fn check_cluster(
    plan: &Path,
    objects: &[Value],
    region: &str,
    values: &Value,
    rec: &serde_json::Value,
    api: &str,
) {
    let objects = objects.to_vec();
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
        (
            "WorkloadPriorityClass",
            crd("kueue.x-k8s.io_workloadpriorityclasses.yaml", api),
        ),
        (
            "AdmissionCheck",
            crd("kueue.x-k8s.io_admissionchecks.yaml", api),
        ),
        (
            "ProvisioningRequestConfig",
            crd("kueue.x-k8s.io_provisioningrequestconfigs.yaml", api),
        ),
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
        let pool = flavor_pool(f, pools);
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
        // A flavor's own tolerations would let any pod past its taints (Kueue counts them as
        // the pod's): the pods tolerate their pool's taints themselves.
        assert!(
            f["spec"]["tolerations"].is_null(),
            "{name} tolerates nothing"
        );
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
            let pool = flavor_pool(flavors[&fname], pools);
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
        for pool in pools.iter().filter(|p| p["region"] == region) {
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
                .filter(|(_, f)| flavor_pool(f, pools)["name"] == pool["name"])
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
                let (_, pods, c, m, g, _) = ws[w];
                cpu += pods * c;
                mem += pods * m;
                // The resource a pod asks for is the one its values give it.
                let _ = g;
                let (res, count) = gpu_limit(&values[w.as_str()]);
                *gpu.entry(res).or_default() += pods * count;
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

const PLANS: [&str; 6] = [
    "plans/azure-inference.toml",
    "plans/aws-training.toml",
    "plans/minimal.toml",
    "tests/fixtures/render/operator-mig.toml",
    "tests/fixtures/render/one-team-two-pools.toml",
    "tests/fixtures/render/node-sizes.toml",
];

#[test]
fn every_example_renders_kueue_objects_that_admit_its_pods() {
    for p in PLANS {
        check(&root().join(p), &[], "v1beta2");
        // With Karpenter the flavors select what Terraform's and Karpenter's nodes share.
        check(&root().join(p), &["--karpenter"], "v1beta2");
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
    let objects: Vec<Value> = kueue_files(out.path())
        .into_iter()
        .flat_map(|(_, o)| o)
        .collect();
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
        taint(&spot["spec"]["nodeTaints"]) && spot["spec"]["tolerations"].is_null(),
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
    let values: Value = serde_yaml::from_str(&read("workloads/values.yaml")).expect("values");
    assert!(
        taint(&values["scoring"]["tolerations"]),
        "{:?}",
        values["scoring"]
    );
    assert_eq!(
        values["chat"]["resources"]["limits"]["nvidia.com/gpu"].as_u64(),
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
        let objects: Vec<Value> = render(plan, &[])
            .0
            .into_iter()
            .flat_map(|(_, o)| o)
            .collect();
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

/// The admission model over generated plans (as the invariant tests generate them), plain and
/// with `--karpenter`: every workload lands on its planned pool whatever the flavor order.
#[test]
fn generated_plans_admit_every_workload_to_its_planned_pool() {
    let dir = tempfile::tempdir().expect("tmp");
    let mut checked = 0;
    for seed in 1..=16u64 {
        let plan = dir.path().join(format!("gen-{seed}.toml"));
        let text = if seed % 2 == 0 {
            common::gen::generated(seed)
        } else {
            common::gen::generated_wide(seed)
        };
        std::fs::write(&plan, text).expect("plan");
        let out = tempfile::tempdir().expect("tmp");
        let ok = gpuplan()
            .arg("render")
            .arg(&plan)
            .arg("--out")
            .arg(out.path())
            .output()
            .expect("render")
            .status
            .success();
        if !ok {
            continue;
        }
        check(&plan, &[], "v1beta2");
        check(&plan, &["--karpenter"], "v1beta2");
        checked += 1;
    }
    assert!(checked >= 8, "only {checked} generated plans rendered");
}

/// Issue 74 item 1: a workload split over pools (4 spot + 6 reserved by a spot quota; 2 in
/// us-east-1 and 4 in us-west-2 by an on-demand quota) was one `workloads/values.yaml` entry
/// of all its replicas over every pool. A Job is one Kueue Workload with one pod set, and Kueue
/// gives a pod set one flavor (kueue `flavorassigner`), so a Job of 10 against flavors of 4
/// and 6 never starts. Each part is now its own entry: admitted whole, as one pod set, on its
/// own pool's flavor, in its own region's ClusterQueue, and the parts add up to the workload.
#[test]
fn every_part_of_a_split_workload_is_admitted_as_one_pod_set() {
    let dir = tempfile::tempdir().expect("tmp");
    let base = "version = 1\n\n[plan]\nname = \"q\"\nowner = \"platform\"\nprovider = \"aws\"\n";
    let batch = "[[workload]]\nname = \"embed-batch\"\nteam = \"search\"\nkind = \"batch\"\ngpus = 1\nskus = [\"g6.xlarge\"]\n";
    for (label, text, replicas, regions) in [
        (
            "spot quota",
            format!("{base}regions = [\"us-east-1\"]\n\n{batch}replicas = 10\ninterruptible = true\ncheckpoint_minutes = 10\n\n[[quota]]\nregion = \"us-east-1\"\nfamily = \"L-3819A6DF\"\nvcpus = 16\n"),
            10.0,
            1,
        ),
        (
            "regions",
            format!("{base}regions = [\"us-east-1\", \"us-west-2\"]\n\n{batch}replicas = 6\n\n[[quota]]\nregion = \"us-east-1\"\nfamily = \"L-DB2E81BA\"\nvcpus = 8\n\n[[quota]]\nregion = \"us-west-2\"\nfamily = \"L-DB2E81BA\"\nvcpus = 16\n"),
            6.0,
            2,
        ),
    ] {
        let plan = dir.path().join("plan.toml");
        std::fs::write(&plan, &text).expect("plan");
        let (files, values, rec) = render(&plan, &[]);
        let pools = rec["pools"].as_array().expect("pools");
        assert!(
            pools.len() >= 2,
            "{label}: the plan is meant to split: {rec:#}"
        );
        let entries = values.as_mapping().expect("entries");
        let parts: Vec<&Value> = entries
            .values()
            .filter(|e| e["labels"]["gpuplan.io/workload"] == "embed-batch")
            .collect();
        assert_eq!(parts.len(), pools.len(), "{label}: {values:?}");
        let total: f64 = parts.iter().map(|e| qty(&e["replicas"]["max"])).sum();
        assert_eq!(total, replicas, "{label}");
        let mut seen_regions = std::collections::BTreeSet::new();
        for e in parts {
            let pool = e["nodeSelector"]["gpuplan.io/pool"]
                .as_str()
                .unwrap_or_else(|| panic!("{label}: a part selects its pool alone: {e:?}"));
            let region = pools
                .iter()
                .find(|p| p["pool_label"] == pool)
                .and_then(|p| p["region"].as_str())
                .expect("its pool");
            assert_eq!(e["region"].as_str(), Some(region), "{label}: {e:?}");
            seen_regions.insert(region.to_owned());
            let (_, objects) = files
                .iter()
                .find(|(f, _)| f.trim_end_matches(".yaml") == region)
                .expect("its region's Kueue file");
            let flavors: BTreeMap<String, &Value> = objects
                .iter()
                .filter(|o| o["kind"] == "ResourceFlavor")
                .map(|o| (o["metadata"]["name"].as_str().unwrap_or("").to_owned(), o))
                .collect();
            let queue = objects
                .iter()
                .find(|o| {
                    o["kind"] == "ClusterQueue"
                        && o["spec"]["namespaceSelector"]["matchLabels"]
                            ["kubernetes.io/metadata.name"]
                            == "search"
                })
                .expect("the team's ClusterQueue");
            let order: Vec<&Value> = queue["spec"]["resourceGroups"][0]["flavors"]
                .as_sequence()
                .expect("flavors")
                .iter()
                .collect();
            // The whole part as one pod set, as Kueue admits a Job.
            let mut used = BTreeMap::new();
            let got = assign(e, qty(&e["replicas"]["max"]), &order, &flavors, &mut used)
                .unwrap_or_else(|| panic!("{label}: {e:?} is admitted nowhere"));
            assert_eq!(flavor_pool(flavors[got], pools)["pool_label"], pool, "{label}");
        }
        assert_eq!(seen_regions.len(), regions, "{label}");
    }
}

/// A part's key never takes another workload's name: `embed-batch` split beside a workload
/// named `embed-batch-1` gives keys that stay unique (YAML refuses a repeated key).
#[test]
fn a_parts_key_never_takes_another_workloads_name() {
    let dir = tempfile::tempdir().expect("tmp");
    let plan = dir.path().join("plan.toml");
    std::fs::write(
        &plan,
        "version = 1\n\n[plan]\nname = \"q\"\nowner = \"platform\"\nprovider = \"aws\"\nregions = [\"us-east-1\"]\n\n[[workload]]\nname = \"embed-batch\"\nteam = \"search\"\nkind = \"batch\"\ngpus = 1\nskus = [\"g6.xlarge\"]\nreplicas = 10\ninterruptible = true\ncheckpoint_minutes = 10\n\n[[workload]]\nname = \"embed-batch-1\"\nteam = \"search\"\nkind = \"batch\"\ngpus = 1\nskus = [\"g6.xlarge\"]\nreplicas = 1\n\n[[quota]]\nregion = \"us-east-1\"\nfamily = \"L-3819A6DF\"\nvcpus = 16\n",
    )
    .expect("plan");
    let (_, values, _) = render(&plan, &[]);
    let entries = values.as_mapping().expect("entries");
    let own = &values["embed-batch-1"];
    assert_eq!(
        own["labels"]["gpuplan.io/workload"], "embed-batch-1",
        "{values:?}"
    );
    let parts: f64 = entries
        .values()
        .filter(|e| e["labels"]["gpuplan.io/workload"] == "embed-batch")
        .map(|e| qty(&e["replicas"]["max"]))
        .sum();
    assert_eq!(parts, 10.0, "{values:?}");
}
