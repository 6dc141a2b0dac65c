//! The review's questions, asked the same way of a Prometheus server and of a file.
//!
//! Each [`Query`] is one PromQL expression of the form
//! `ACROSS by (LABELS) (REWRITE(OVER_over_time(SELECTOR[STEP - 1ms])))`, evaluated at the end
//! of every step window. The file reader computes the same expression itself from the raw
//! samples ([`Collector`]), so both paths hand [`super::assemble`] identical [`Answers`] and
//! cannot disagree. Over-time functions read only the raw samples inside each window: no
//! lookback, so a series that ends mid-window ends there (an instant query would carry it
//! five minutes on), and a six-minute job is counted by its own samples, not by whether a
//! step happened to land on it.

mod answers;
mod collector;
mod spec;
mod table;

pub(crate) use answers::{increments, Answers, Row};
pub(crate) use collector::Collector;
pub(crate) use spec::{promql_escape, sample_max, wanted, Grid, Query, MAX_GPUS, Q};
#[cfg(test)]
pub(crate) use table::prometheus_label;
pub(crate) use table::{NODE_LABELS, QUERIES};

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    #[test]
    fn the_allowlist_render_writes_is_every_label_the_review_reads() {
        let nodes: Vec<String> = crate::core::labels::ALLOWLIST_NODES
            .iter()
            .map(|l| prometheus_label(l))
            .collect();
        let read: Vec<&str> = NODE_LABELS
            .iter()
            .copied()
            .filter(|l| l.starts_with("label_"))
            .collect();
        assert_eq!(nodes, read);
        let pods: Vec<String> = crate::core::labels::ALLOWLIST_PODS
            .iter()
            .map(|l| prometheus_label(l))
            .collect();
        let by_pods: Vec<&str> = QUERIES
            .iter()
            .filter(|q| q.metrics == ["kube_pod_labels"])
            .flat_map(|q| q.by.iter().copied().filter(|l| l.starts_with("label_")))
            .collect();
        for l in &by_pods {
            assert!(
                pods.iter().any(|p| p == l),
                "{l} is read but not allow-listed"
            );
        }
        assert_eq!(pods.len(), by_pods.len());
    }

    use super::*;

    #[test]
    fn windows_are_right_open_and_prometheus_ends_them_a_millisecond_early() {
        let g = Grid {
            from: 100,
            step: 60,
            windows: 2,
        };
        assert_eq!(g.window(99_999), None);
        assert_eq!(g.window(100_000), Some(0));
        assert_eq!(g.window(159_999), Some(0));
        assert_eq!(g.window(160_000), Some(1));
        assert_eq!(g.window(219_999), Some(1));
        assert_eq!(g.window(220_000), None);
        assert_eq!(g.window_ending(159_999), Some(0));
        assert_eq!(g.window_ending(219_999), Some(1));
        assert_eq!(g.window_ending(160_000), None);
        assert_eq!(g.window_ending(279_999), None);
    }

    #[test]
    fn wanted_names_are_the_queries_metrics() {
        let mut from_queries: Vec<&str> = QUERIES
            .iter()
            .flat_map(|q| q.metrics.iter().copied())
            .collect();
        from_queries.sort_unstable();
        from_queries.dedup();
        for m in &from_queries {
            assert!(wanted(m), "{m}");
        }
        for m in [
            "kube_pod_created",
            "DCGM_FI_DEV_FB_USED",
            "up",
            "kube_pod_status_phase_x",
        ] {
            assert!(!wanted(m), "{m}");
        }
        assert_eq!(from_queries.len(), 28);
    }

    #[test]
    fn a_label_value_is_escaped_as_promql_reads_it() {
        assert_eq!(super::promql_escape("a\\b\"c\nd"), "a\\\\b\\\"c\\nd");
    }

    #[test]
    fn promql_reads_as_written() {
        let q = Answers::query(Q::Running);
        assert_eq!(
            q.promql(60, Some("prod"), false),
            // Rewritten into labels of their own, grouped, then named back: raw series never
            // collide (two exporters on hostNetwork differing only by their own `pod`).
            "max by (cluster, namespace, pod) (label_replace(label_replace(max by (cluster, gpuplan_namespace, gpuplan_pod) (label_replace(label_replace(label_replace(label_replace(label_replace(label_replace(sum_over_time(kube_pod_status_phase{phase=\"Running\",cluster=\"prod\"}[59999ms]), \"gpuplan_namespace\", \"$1\", \"namespace\", \"(?s)(.+)\"), \"gpuplan_pod\", \"$1\", \"pod\", \"(?s)(.+)\"), \"gpuplan_pod\", \"$1\", \"pod_name\", \"(?s)(.+)\"), \"gpuplan_namespace\", \"$1\", \"pod_namespace\", \"(?s)(.+)\"), \"gpuplan_pod\", \"$1\", \"exported_pod\", \"(?s)(.+)\"), \"gpuplan_namespace\", \"$1\", \"exported_namespace\", \"(?s)(.+)\")), \"namespace\", \"$1\", \"gpuplan_namespace\", \"(?s)(.*)\"), \"pod\", \"$1\", \"gpuplan_pod\", \"(?s)(.*)\"))"
        );
        // A metric's names each on their own, joined by `or`: `*_over_time` drops the name,
        // and two names one pod exports would otherwise be two series of one labelset.
        assert!(Answers::query(Q::Tokens).promql(60, None, true).contains(
            "(max_over_time(vllm:generation_tokens_total{}[60000ms]) or max_over_time(vllm_generation_tokens_total{}[60000ms]))"
        ));
    }

    #[test]
    fn the_collector_evaluates_like_promql() {
        let g = Grid {
            from: 0,
            step: 60,
            windows: 2,
        };
        let mut c = Collector::new(g, None);
        let labels = |pod: &str| {
            let mut m = BTreeMap::new();
            m.insert("namespace".into(), "gpu-operator".into());
            m.insert("pod".into(), "dcgm".into());
            m.insert("exported_namespace".into(), "ml".into());
            m.insert("exported_pod".into(), pod.into());
            m.insert("gpu".into(), "0".into());
            m
        };
        let a = c
            .series(
                "a",
                "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
                || Some(labels("p")),
                false,
            )
            .expect("labels")
            .expect("wanted");
        for (ms, v) in [(0, 0.5), (26_800, 0.5), (41_800, 0.25), (60_000, 1.0)] {
            c.sample(a, ms, v);
        }
        c.sample(a, 60_000, 1.0);
        let ans = c.finish();
        let rows: Vec<_> = ans.get(Q::Active).collect();
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].0[Answers::col(Q::Active, "pod")], "p");
        assert_eq!(rows[0].0[Answers::col(Q::Active, "namespace")], "ml");
        assert_eq!(rows[0].1.get(&0), Some(&1.25));
        assert_eq!(rows[0].1.get(&1), Some(&1.0));
        let counts: Vec<_> = ans.get(Q::ActiveCount).collect();
        assert_eq!(counts[0].1.get(&0), Some(&3.0));
    }
}

/// The README says how many queries every figure comes from; held to the table (issue 75:
/// it said twenty-six where there were 29).
#[cfg(test)]
#[test]
fn the_readme_counts_the_queries() {
    let readme = include_str!("../../../README.md");
    let said = format!("Every figure comes from {} fixed queries", QUERIES.len());
    assert!(readme.contains(&said), "README does not say: {said}");
}
