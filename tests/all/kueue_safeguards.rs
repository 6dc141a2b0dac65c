//! Kueue's safeguards for gangs and expensive nodes, checked on the Configuration keys Kueue
//! reads: `waitForPodsReady` with its requeuing strategy for gangs, the ProvisioningRequest
//! admission check for pools that scale from zero, and the priority classes that order
//! user-facing work above batch.

use std::collections::BTreeMap;
use std::path::Path;

use serde_yaml::Value;

use crate::kueue::{gpuplan, kueue_files};

/// The keys Kueue's Configuration reads under `waitForPodsReady` and its requeuing strategy
/// (kubernetes-sigs/kueue `apis/config/{v1beta1,v1beta2}/configuration_types.go` @ ff69552e,
/// their json tags; `enable` is v1beta1's alone).
const WAIT_KEYS: [&str; 5] = [
    "enable",
    "timeout",
    "blockAdmission",
    "requeuingStrategy",
    "recoveryTimeout",
];
const REQUEUE_KEYS: [&str; 4] = [
    "timestamp",
    "backoffLimitCount",
    "backoffBaseSeconds",
    "backoffMaxSeconds",
];

/// Every WorkloadPriorityClass of a render's Kueue files: name -> value.
fn priority_classes(dir: &Path) -> BTreeMap<String, i64> {
    kueue_files(dir)
        .iter()
        .flat_map(|(_, os)| os.iter())
        .filter(|o| o["kind"] == "WorkloadPriorityClass")
        .map(|o| {
            (
                o["metadata"]["name"].as_str().unwrap_or("").to_owned(),
                o["value"].as_i64().unwrap_or(0),
            )
        })
        .collect()
}

fn rendered_dir(plan: &str, extra: &[&str]) -> tempfile::TempDir {
    let out = tempfile::tempdir().expect("tmp");
    gpuplan()
        .args(["render", plan, "--out"])
        .arg(out.path())
        .args(extra)
        .assert()
        .success();
    out
}

/// Issue 41: Kueue's safeguards for gangs and expensive nodes. A plan with a gang gets
/// `waitForPodsReady` with a timeout as long as its slowest gang's start; pools that scale from
/// zero get the ProvisioningRequest admission check on their flavors (not under Karpenter,
/// which serves no ProvisioningRequest); every workload names a WorkloadPriorityClass that
/// orders user-facing work above batch.
#[test]
fn gangs_and_scale_from_zero_pools_get_kueue_safeguards() {
    for (api, config_api) in [
        ("v1beta2", "config.kueue.x-k8s.io/v1beta2"),
        ("v1beta1", "config.kueue.x-k8s.io/v1beta1"),
    ] {
        let out = rendered_dir("plans/aws-training.toml", &["--kueue-api", api]);
        let values: Value = serde_yaml::from_str(
            &std::fs::read_to_string(out.path().join("kueue/values.yaml")).expect("values"),
        )
        .expect("yaml");
        let config: Value = serde_yaml::from_str(
            values["managerConfig"]["controllerManagerConfigYaml"]
                .as_str()
                .expect("manager config"),
        )
        .expect("config yaml");
        assert_eq!(config["apiVersion"].as_str(), Some(config_api));
        assert_eq!(config["kind"].as_str(), Some("Configuration"));
        let wait = config["waitForPodsReady"]
            .as_mapping()
            .expect("waitForPodsReady");
        for k in wait.keys() {
            assert!(WAIT_KEYS.contains(&k.as_str().unwrap_or("")), "{k:?}");
        }
        assert_eq!(wait.contains_key("enable"), api == "v1beta1");
        for k in config["waitForPodsReady"]["requeuingStrategy"]
            .as_mapping()
            .expect("requeuing")
            .keys()
        {
            assert!(REQUEUE_KEYS.contains(&k.as_str().unwrap_or("")), "{k:?}");
        }
        // pretrain-7b: a 4-node gang with no restart_minutes, so the assumptions' start time:
        // 10 x (1 + log2 4) to acquire + 20 to pull + 5 to load = 55 minutes.
        assert_eq!(config["waitForPodsReady"]["timeout"].as_str(), Some("55m"));
        assert_eq!(
            config["waitForPodsReady"]["blockAdmission"].as_bool(),
            Some(false)
        );
        // The chart's integrations stay.
        let frameworks = config["integrations"]["frameworks"]
            .as_sequence()
            .expect("frameworks");
        for f in ["batch/job", "jobset.x-k8s.io/jobset", "pod", "deployment"] {
            assert!(frameworks.iter().any(|x| x.as_str() == Some(f)), "{f}");
        }

        // us-east-1's pools scale from zero: the check runs on exactly their flavors.
        let objects = kueue_files(out.path())
            .into_iter()
            .find(|(f, _)| f == "us-east-1.yaml")
            .expect("us-east-1")
            .1;
        let of_kind = |k: &'static str| objects.iter().filter(move |o| o["kind"] == k);
        let check = of_kind("AdmissionCheck").next().expect("AdmissionCheck");
        assert_eq!(
            check["spec"]["controllerName"].as_str(),
            Some("kueue.x-k8s.io/provisioning-request")
        );
        let config_name = check["spec"]["parameters"]["name"].as_str().expect("name");
        let prc = of_kind("ProvisioningRequestConfig").next().expect("config");
        assert_eq!(prc["metadata"]["name"].as_str(), Some(config_name));
        assert_eq!(
            prc["spec"]["provisioningClassName"].as_str(),
            Some("best-effort-atomic-scale-up.autoscaling.x-k8s.io")
        );
        for q in of_kind("ClusterQueue") {
            let own: Vec<&str> = q["spec"]["resourceGroups"][0]["flavors"]
                .as_sequence()
                .expect("flavors")
                .iter()
                .filter_map(|f| f["name"].as_str())
                .collect();
            let checked: Vec<&str> = q["spec"]["admissionChecksStrategy"]["admissionChecks"][0]
                ["onFlavors"]
                .as_sequence()
                .expect("onFlavors")
                .iter()
                .filter_map(|f| f.as_str())
                .collect();
            assert!(!checked.is_empty() && checked.iter().all(|f| own.contains(f)));
        }
        // Every workload names a class defined where it runs.
        let classes = priority_classes(out.path());
        let workloads: Value = serde_yaml::from_str(
            &std::fs::read_to_string(out.path().join("workloads/values.yaml")).expect("values"),
        )
        .expect("yaml");
        for (w, v) in workloads.as_mapping().expect("workloads") {
            let class = v["labels"]["kueue.x-k8s.io/priority-class"]
                .as_str()
                .expect("class");
            assert!(classes.contains_key(class), "{w:?}: {class}");
        }
    }
    // Under Karpenter no ProvisioningRequest check: Karpenter does not serve them.
    let out = rendered_dir("plans/aws-training.toml", &["--karpenter"]);
    for (_, objects) in kueue_files(out.path()) {
        assert!(objects.iter().all(|o| o["kind"] != "AdmissionCheck"));
        assert!(objects
            .iter()
            .all(|o| o["spec"].get("admissionChecksStrategy").is_none()));
    }
    // No gang, no manager configuration; user-facing work outranks the rest.
    let out = rendered_dir("plans/azure-inference.toml", &[]);
    assert!(!out.path().join("kueue/values.yaml").exists());
    let classes = priority_classes(out.path());
    assert!(classes["gpuplan-user-facing"] > classes["gpuplan-serving"]);
    assert!(classes["gpuplan-serving"] > classes["gpuplan-batch"]);
}
