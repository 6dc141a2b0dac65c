use super::*;

fn plan(min: i64, max: i64, user_facing: bool) -> Plan {
    let catalog =
        crate::catalog::Catalog::embedded(&[crate::core::Provider::Aws]).expect("catalog");
    let kind = if user_facing {
        "inference\"\nuser_facing = true\n# \""
    } else {
        "batch"
    };
    let text = format!("version = 1\n[plan]\nname = \"p\"\nowner = \"o\"\nprovider = \"aws\"\nregions = [\"us-east-1\"]\n\n[[workload]]\nname = \"w\"\nteam = \"t\"\nkind = \"{kind}\"\nreplicas = {{ min = {min}, max = {max} }}\nskus = [\"g6.xlarge\"]\n");
    crate::plan::Plan::load(crate::source::SourceFile::new("p.toml", text), &catalog)
        .unwrap_or_else(|_| panic!("plan"))
}

proptest::proptest! {
    #![proptest_config(proptest::test_runner::Config::with_cases(48))]
    /// Whatever the history: min <= max, max >= 1, a band around its centre, an idle
    /// workload never grown, a fixed count exactly when min = max.
    #[test]
    fn proposals_are_well_formed(
        per_hour in proptest::collection::vec(0usize..9, 24 * 8..24 * 40),
        busy in 0.0f64..1.0,
        min in 0i64..4,
        span in 0i64..6,
        user_facing in proptest::bool::ANY,
    ) {
        let max = min.max(1) + span;
        let p = plan(min, max, user_facing);
        let mut t = Telemetry { step: 3600, ..Telemetry::default() };
        for (h, n) in per_hour.iter().enumerate() {
            let w = h as i64 * 3600;
            t.covered_windows.insert(w);
            t.sampled_windows.insert(w);
            for i in 0..*n {
                let runs = t.pods.entry(("t".into(), format!("w-{i}"))).or_default();
                if runs.is_empty() {
                    runs.push(Default::default());
                }
                let pod = &mut runs[0];
                pod.namespace = "t".into();
                pod.pod = format!("w-{i}");
                pod.allocated.insert(w, 3600.0);
                pod.used.insert(w, 3600.0 * busy);
                pod.has_usage = true;
            }
        }
        t.covered = per_hour.len() as i64 * 3600;
        t.to = t.covered;
        t.data_to = Some(t.covered);
        let rows = [WorkloadRow {
            workload: "w".into(),
            team: "t".into(),
            figures: super::super::rows::Figures {
                allocated_gpu_seconds: 0.0,
                used_gpu_seconds: 0.0,
                no_data_gpu_seconds: 0.0,
                efficiency: Some(busy),
                efficiency_of_shared_cards: false,
                idle_cost_usd: 0.0,
                pending_gpu_seconds: 0.0,
            },
            planned_utilization: None,
            usd_per_million_tokens: None,
            pods: 0,
            matched_pods: Default::default(),
            crashloop_share: None,
        }];
        let m = Method {
            headroom: 0.15,
            min_days: 7.0,
            min_trend_days: 14,
            consolidation_target: 0.5,
            low_utilization: 0.25,
            user_facing_min_nodes: 2,
        };
        let nq = forecast(&p, &t, &rows, &BTreeMap::new(), &[], &m);
        for team in &nq.teams {
            proptest::prop_assert!(team.band_low <= team.projected_gpus + 1e-9);
            proptest::prop_assert!(team.projected_gpus <= team.band_high + 1e-9);
        }
        for f in &nq.workloads {
            let pr = &f.proposed;
            proptest::prop_assert!(pr.max >= 1 && pr.min >= 0 && pr.min <= pr.max, "{pr:?}");
            // A fixed count is one number; a range keeps its form even where its bounds
            // meet (issue 42: a shrinking autoscaled workload became fixed).
            proptest::prop_assert!(!pr.fixed || pr.min == pr.max, "{pr:?}");
            proptest::prop_assert_eq!(pr.fixed, f.current.parse::<i64>().is_ok());
            if busy < m.low_utilization {
                proptest::prop_assert!(pr.max <= max, "idle grown: {pr:?} over {max}");
            }
            proptest::prop_assert!(f.band_low <= f.projected_replicas + 1e-9);
            // User-facing work keeps its availability floor (two nodes) warm, up to its peak
            // (issue 56: a next plan lowered a service to one warm replica).
            if user_facing {
                proptest::prop_assert!(pr.min >= 2.min(max), "{pr:?} under the floor");
            }
            // Consolidation never raises a workload above what it held (issue 56), but for
            // the floor it keeps.
            let held = per_hour.iter().copied().max().unwrap_or(0) as i64;
            let floor = if user_facing { 2.min(max) } else { 1 };
            if pr.basis == Basis::Consolidated {
                proptest::prop_assert!(pr.max <= held.max(floor), "{pr:?} above {held} held");
            }
        }
        if per_hour.iter().all(|n| *n == 0) {
            proptest::prop_assert!(nq.workloads.is_empty());
        }
    }
}
