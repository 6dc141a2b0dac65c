//! Issue 56: rendered workloads ask for what was priced. A user-facing workload whose pool was
//! raised to its availability floor keeps a warm pod on each of those nodes (a drain of one
//! never evicts the only one); work nobody waits on keeps its own minimum.

use crate::common;

use std::path::Path;

use serde_yaml::Value;

/// `workloads/values.yaml` of a render of `plan_text`, and terraform/main.tf.
fn render(plan_text: &str) -> (Value, String) {
    let (_dir, out) = common::rendered(plan_text, &[]);
    let values = std::fs::read_to_string(out.join("workloads/values.yaml")).expect("values");
    let tf = std::fs::read_to_string(out.join("terraform/main.tf")).expect("main.tf");
    (serde_yaml::from_str(&values).expect("yaml"), tf)
}

fn replicas(values: &Value, w: &str) -> (u64, u64) {
    let r = &values[w]["replicas"];
    (
        r["min"].as_u64().expect("min"),
        r["max"].as_u64().expect("max"),
    )
}

const HEAD: &str = r#"version = 1
[plan]
name = "floors"
owner = "o"
provider = "aws"
regions = ["us-east-1"]
"#;

#[test]
fn user_facing_work_keeps_its_availability_floor_warm_and_other_work_its_own_minimum() {
    let plan = format!(
        r#"{HEAD}
[[workload]]
name = "api"
team = "t"
kind = "inference"
user_facing = true
replicas = {{ min = 1, max = 4 }}
gpus = 1
skus = ["g6.xlarge"]

[[workload]]
name = "search"
team = "t"
kind = "inference"
user_facing = true
availability_floor = 3
replicas = {{ min = 1, max = 6 }}
gpus = 1
skus = ["g6.xlarge"]

[[workload]]
name = "scoring"
team = "s"
kind = "batch"
replicas = {{ min = 1, max = 3 }}
gpus = 1
skus = ["g6.xlarge"]
"#
    );
    let (values, tf) = render(&plan);
    // The default floor is two nodes (providers/assumptions.toml `user_facing_min_nodes`).
    assert_eq!(replicas(&values, "api"), (2, 4));
    assert_eq!(replicas(&values, "search"), (3, 6));
    assert_eq!(replicas(&values, "scoring"), (1, 3));
    // The nodes those warm pods need are the ones priced: the pools keep at least as many.
    let mins: Vec<u64> = tf
        .lines()
        .filter_map(|l| l.trim().strip_prefix("min_size"))
        .filter_map(|v| v.trim().trim_start_matches('=').trim().parse().ok())
        .collect();
    assert!(mins.iter().any(|&m| m >= 3), "{mins:?}");
}

#[test]
fn a_user_facing_floor_never_exceeds_the_peak() {
    let plan = format!(
        r#"{HEAD}
[[workload]]
name = "solo"
team = "t"
kind = "inference"
user_facing = true
availability_floor = 3
replicas = 2
gpus = 1
skus = ["g6.xlarge"]
"#
    );
    let (values, _) = render(&plan);
    assert_eq!(replicas(&values, "solo"), (2, 2));
}

/// `render --declared` renders only declared pools: a workload none of them serves is named
/// on stderr, not left out silently.
#[test]
fn render_declared_names_the_workloads_it_leaves_out() {
    let dir = tempfile::tempdir().expect("tempdir");
    let run = common::gpuplan(Path::new("/nonexistent/gpuplan-test-cache"))
        .args([
            "render",
            "--declared",
            "tests/fixtures/rules/GP035/fires.toml",
            "--out",
        ])
        .arg(dir.path().join("out"))
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains(
            "renders no nodes for 1 workload(s) no declared pool serves (GP035): `reranker`"
        ),
        "{stderr}"
    );
}
