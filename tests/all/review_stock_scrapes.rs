//! `gpuplan review` on the stock-install fleet of `review_stock.rs`: scrape timing, intervals and
//! offsets, short jobs, init containers, reservations advised from the floor, hostile and doubled
//! files, right-size advice.

use crate::common;
use crate::review_stock::assert_truth;
use crate::review_stock::close;
use crate::review_stock::dcgm_target;
use crate::review_stock::review;
use crate::review_stock::row;
use crate::review_stock::telemetry;
use crate::review_stock::telemetry_with;
use crate::review_stock::write;
use crate::review_stock::Om;
use crate::review_stock::Sched;
use crate::review_stock::Scrape;
use crate::review_stock::DCGM;
use crate::review_stock::H;
use crate::review_stock::KSM;
use crate::review_stock::KSM_TARGET;
use crate::review_stock::SPAN;
use crate::review_stock::T0;
use serde_json::Value;
use std::fmt::Write as _;
use std::path::Path;

#[test]
fn stock_labels_and_real_offsets_match_the_truth() {
    let dir = tempfile::tempdir().expect("tmp");
    let om = write(dir.path(), "fleet.om", &telemetry(true, false, KSM, DCGM));
    let (v, _) = review(&om, &[]);
    assert_truth(&v);
    // the Prometheus text format (milliseconds) of the same samples says the same
    let prom = write(
        dir.path(),
        "fleet.prom",
        &telemetry(false, false, KSM, DCGM),
    );
    let (w, _) = review(&prom, &[]);
    for key in [
        "teams",
        "workloads",
        "stalled",
        "pending",
        "idle_nodes",
        "pools",
        "coverage",
    ] {
        assert_eq!(v[key], w[key], "{key}");
    }
}

#[test]
fn virtual_gpu_copies_are_one_card() {
    let dir = tempfile::tempdir().expect("tmp");
    let om = write(dir.path(), "vgpu.om", &telemetry(true, true, KSM, DCGM));
    let (v, _) = review(&om, &[]);
    assert_truth(&v);
}

#[test]
fn the_figures_do_not_depend_on_scrape_timing() {
    // intervals, offsets and jitter a real install has: the same truth every time
    let dir = tempfile::tempdir().expect("tmp");
    for (i, (ksm, dcgm)) in [
        ((30_000, 0, 0), (15_000, 0, 0)),
        ((60_000, 59_999, 5), (30_000, 3_300, 5)),
        ((15_000, 14_000, 40), (10_000, 9_990, 40)),
        ((30_000, 29_000, 5), (5_000, 4_100, 5)),
    ]
    .into_iter()
    .enumerate()
    {
        let s = |(every, offset, jitter)| Scrape {
            every,
            offset,
            jitter,
        };
        let f = write(
            dir.path(),
            &format!("t{i}.om"),
            &telemetry(true, i % 2 == 1, s(ksm), s(dcgm)),
        );
        let (v, _) = review(&f, &[]);
        assert_truth(&v);
        for step in ["60s", "5m"] {
            let (w, _) = review(&f, &["--step", step]);
            assert_truth(&w);
        }
    }
}

/// Issue 40 item 9: at a scrape interval longer than the step, a window with a sample stood
/// for the whole interval, so a pool's peak GPUs were the interval / step times too high (a
/// 2-node pool peaking at 5 GPUs) and the windows between samples held nothing, which took
/// the reservation floor to zero. Peaks and p95 of GPUs held never exceed what ran.
#[test]
fn a_scrape_longer_than_the_step_never_inflates_peaks() {
    let dir = tempfile::tempdir().expect("tmp");
    let slow = |offset| Scrape {
        every: 300_000,
        offset,
        jitter: 5,
    };
    let f = write(
        dir.path(),
        "slow.om",
        &telemetry(true, false, slow(7_100), slow(11_800)),
    );
    // What ran: chat-api on both MIG nodes and embeddings, 3g.40gb each (3/7 of a card);
    // the four notebooks on one time-sliced T4, the eval job on its node for its first 2 h,
    // and four GPUs of pods on unlabelled nodes; the peak holds p95 too (all held 12 h).
    let truth = [
        ("serve-mig", 3.0 * 3.0 / 7.0),
        ("notebooks", 1.0),
        ("eval-spot", 1.0),
        ("(no pool label)", 4.0),
    ];
    for step in ["60s", "120s", "5m"] {
        // (Totals are not asserted here: a 2-hour job's end is known to one 300 s scrape,
        // 4% of it, beyond `assert_truth`'s 2%.)
        let (v, _) = review(&f, &["--step", step]);
        for (pool, gpus) in truth {
            let r = v["pools"]
                .as_array()
                .expect("pools")
                .iter()
                .find(|p| p["pool"] == pool)
                .unwrap_or_else(|| panic!("{pool} in {:#}", v["pools"]));
            close(
                &format!("{pool} peak at {step}"),
                r["peak_gpus"].as_f64().unwrap_or(-1.0),
                gpus,
            );
            close(
                &format!("{pool} p95 at {step}"),
                r["p95_gpus"].as_f64().unwrap_or(-1.0),
                gpus,
            );
        }
        let stalled = v["stalled"].as_array().expect("stalled");
        assert_eq!(stalled.len(), 1, "{stalled:#?}");
        assert_eq!(stalled[0]["allocated_gpus"], 2.0, "{stalled:#?}");
        // Issue 61: the HTML chart's per-team peaks are the GPUs held, as the pools' are
        // (GPU-seconds of a 300 s sample over a 60 s step drew 1.67 times them).
        let html = common::gpuplan(Path::new("/nonexistent/gpuplan-test-cache"))
            .args([
                "review",
                "plans/azure-inference.toml",
                "--format",
                "html",
                "--metrics",
            ])
            .arg(&f)
            .args(["--step", step])
            .output()
            .expect("runs");
        let html = String::from_utf8_lossy(&html.stdout);
        let peaks: f64 = html
            .split("peak ")
            .skip(1)
            .filter_map(|s| s.split(" GPUs</text>").next()?.parse::<f64>().ok())
            .sum();
        let truth: f64 = truth.iter().map(|(_, g)| g).sum();
        eprintln!("{step}: chart peaks {peaks} truth {truth}");
        close(&format!("chart peaks at {step}"), peaks, truth);
    }
}

/// Each series counted at its own interval, in time: dcgm-exporter at 15 s on some nodes and
/// 30 s on others, and kube-state-metrics changed from 60 s to 30 s mid-window, give the
/// per-second truth (one interval per exporter for the whole window was +20% and -40% on
/// mixed targets, and -6% to +10% on the changed one).
#[test]
fn mixed_and_changing_scrape_intervals_match_the_truth() {
    let dir = tempfile::tempdir().expect("tmp");
    let fast = Scrape {
        every: 15_000,
        offset: 4_200,
        jitter: 5,
    };
    let slow = Scrape {
        every: 30_000,
        offset: 21_700,
        jitter: 5,
    };
    // A node's exporter by its name: the MIG, T4 and x nodes at 15 s, the others at 30 s.
    let mixed = |node: &str| -> Sched {
        if node.ends_with("000000") || node.ends_with('x') {
            fast.into()
        } else {
            slow.into()
        }
    };
    let changing = Sched {
        first: Scrape {
            every: 60_000,
            offset: 13_300,
            jitter: 5,
        },
        then: Some((
            5.0 * H + 1_417.0,
            Scrape {
                every: 30_000,
                offset: 2_900,
                jitter: 5,
            },
        )),
    };
    for (name, ksm) in [("mixed", Sched::from(KSM)), ("changing", changing)] {
        let f = write(
            dir.path(),
            &format!("{name}.om"),
            &telemetry_with(true, false, ksm, &mixed, None),
        );
        for step in ["60s", "5m", "12m"] {
            let (v, _) = review(&f, &["--step", step]);
            assert_truth(&v);
            // Issue 61: an exporter moved from 60 s to 30 s is said at both, never a blend.
            let ksm_seen = &v["coverage"]["kube_state_metrics_intervals_seconds"];
            match name {
                "changing" => assert_eq!(ksm_seen, &serde_json::json!([30.0, 60.0]), "{step}"),
                _ => assert_eq!(ksm_seen, &serde_json::json!([30.0]), "{step}"),
            }
            // Issue 42: the coverage line said DCGM "every 28 s", an average no target had.
            if step == "60s" {
                assert_eq!(
                    v["coverage"]["dcgm_intervals_seconds"],
                    serde_json::json!([15.0, 30.0]),
                    "{name}: {:#}",
                    v["coverage"]
                );
            }
        }
        let out = common::gpuplan(Path::new("/nonexistent/gpuplan-test-cache"))
            .args(["review", "plans/azure-inference.toml", "--metrics"])
            .arg(&f)
            .args(["--step", "60s"])
            .output()
            .expect("runs");
        let md = String::from_utf8_lossy(&out.stdout);
        assert!(
            md.contains("DCGM every 15 or 30 s (by target or over time)"),
            "{md}"
        );
    }
}

#[test]
fn a_window_longer_than_the_data_adds_no_idle_cost() {
    let dir = tempfile::tempdir().expect("tmp");
    let om = write(dir.path(), "fleet.om", &telemetry(true, false, KSM, DCGM));
    let (short, _) = review(&om, &[]);
    let (long, err) = review(&om, &["--window", "90d"]);
    assert_truth(&long);
    assert_eq!(long["coverage"]["requested_seconds"], 90 * 86_400);
    assert!(err.contains("covers"), "{err}");
    assert_eq!(short["idle_pools"], long["idle_pools"]);
    assert!(
        !long["recommendations"]
            .as_array()
            .expect("advice")
            .iter()
            .any(|a| a["kind"] == "shrink-pool"),
        "{:#}",
        long["recommendations"]
    );
}

#[test]
fn several_clusters_are_never_merged() {
    let dir = tempfile::tempdir().expect("tmp");
    let one = telemetry(false, false, KSM, DCGM);
    let tagged = |c: &str| one.replace("job=\"", &format!("cluster=\"{c}\",job=\""));
    let f = write(dir.path(), "two.prom", &(tagged("east") + &tagged("west")));
    let out = common::gpuplan(Path::new("/nonexistent/gpuplan-test-cache"))
        .args(["review", "plans/azure-inference.toml", "--metrics"])
        .arg(&f)
        .assert()
        .code(2)
        .get_output()
        .clone();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--cluster") && err.contains("east, west"),
        "{err}"
    );
    let (v, _) = review(&f, &["--cluster", "west"]);
    assert_truth(&v);
}

/// Two dozen six-minute jobs at odd times: at a 12-minute step each is counted by its own
/// samples, not by whether a step landed on it.
#[test]
fn short_jobs_are_counted_exactly_at_a_long_step() {
    let mut om = Om {
        seconds: true,
        ..Om::default()
    };
    let starts: Vec<f64> = (0..24).map(|i| 977.0 + f64::from(i) * 1_777.7).collect();
    for (i, s) in starts.iter().copied().enumerate() {
        let pod = format!("nightly-eval-short-{i}");
        let running = move |t: f64| (s..s + 360.0).contains(&t);
        for ph in ["Running", "Succeeded"] {
            om.series(
                "kube_pod_status_phase",
                &format!("namespace=\"assistants\",pod=\"{pod}\",phase=\"{ph}\",{KSM_TARGET}"),
                KSM,
                move |t| {
                    (t >= s).then_some(if (ph == "Running") == running(t) {
                        1.0
                    } else {
                        0.0
                    })
                },
            );
        }
        om.series(
            "kube_pod_container_resource_requests",
            &format!("namespace=\"assistants\",pod=\"{pod}\",container=\"main\",node=\"aks-evalspot-20001-vmss000000\",resource=\"nvidia_com_gpu\",unit=\"integer\",{KSM_TARGET}"),
            KSM,
            move |t| (t >= s).then_some(1.0),
        );
        om.series(
            "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
            &format!("gpu=\"0\",UUID=\"GPU-e\",Hostname=\"aks-evalspot-20001-vmss000000\",exported_namespace=\"assistants\",exported_pod=\"{pod}\",{}", dcgm_target("aks-evalspot-20001-vmss000000")),
            DCGM,
            move |t| running(t).then_some(0.5),
        );
    }
    // between jobs the GPU reports with no pod, as dcgm-exporter does
    let busy = starts.clone();
    om.series(
        "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
        &format!(
            "gpu=\"0\",UUID=\"GPU-e\",Hostname=\"aks-evalspot-20001-vmss000000\",{}",
            dcgm_target("aks-evalspot-20001-vmss000000")
        ),
        DCGM,
        move |t| (!busy.iter().any(|s| (*s..s + 360.0).contains(&t))).then_some(0.0),
    );
    let dir = tempfile::tempdir().expect("tmp");
    let f = write(dir.path(), "short.om", &om.text());
    for step in ["12m", "1h"] {
        let (v, _) = review(&f, &["--step", step]);
        let eval = row(&v, "workloads", "workload", "nightly-eval");
        close(
            "short jobs allocated",
            eval["allocated_gpu_seconds"].as_f64().unwrap_or(0.0),
            24.0 * 360.0,
        );
        close(
            "short jobs used",
            eval["used_gpu_seconds"].as_f64().unwrap_or(0.0),
            24.0 * 180.0,
        );
        assert_eq!(eval["pods"], 24);
    }
}

/// GPU requests of init containers and native sidecars: a plain init container runs before
/// the app and its GPU is reused; a sidecar (`restartPolicy: Always`) runs beside it.
#[test]
fn init_and_sidecar_requests_count_as_kubernetes_counts_them() {
    let mut om = Om {
        seconds: true,
        ..Om::default()
    };
    for pod in ["nightly-eval-init-0", "nightly-eval-sidecar-0"] {
        om.series(
            "kube_pod_status_phase",
            &format!("namespace=\"assistants\",pod=\"{pod}\",phase=\"Running\",{KSM_TARGET}"),
            KSM,
            |_| Some(1.0),
        );
        om.series(
            "kube_pod_container_resource_requests",
            &format!("namespace=\"assistants\",pod=\"{pod}\",container=\"main\",node=\"n-{pod}\",resource=\"nvidia_com_gpu\",unit=\"integer\",{KSM_TARGET}"),
            KSM,
            |_| Some(1.0),
        );
        om.series(
            "kube_pod_init_container_resource_requests",
            &format!("namespace=\"assistants\",pod=\"{pod}\",container=\"prep\",node=\"n-{pod}\",resource=\"nvidia_com_gpu\",unit=\"integer\",{KSM_TARGET}"),
            KSM,
            |_| Some(1.0),
        );
    }
    om.series(
        "kube_pod_init_container_info",
        &format!("namespace=\"assistants\",pod=\"nightly-eval-sidecar-0\",container=\"prep\",image=\"x\",restart_policy=\"Always\",{KSM_TARGET}"),
        KSM,
        |_| Some(1.0),
    );
    let dir = tempfile::tempdir().expect("tmp");
    let f = write(dir.path(), "init.om", &om.text());
    let (v, _) = review(&f, &[]);
    // 1 GPU for the init pod (max(1, 1)), 2 for the sidecar pod (1 + 1)
    let team = row(&v, "teams", "team", "assistants");
    close(
        "init and sidecar",
        team["allocated_gpu_seconds"].as_f64().unwrap_or(0.0),
        3.0 * SPAN,
    );
}

/// Reservation advice from the measured floor: 16 GPUs held 85% of the time and 8 the rest
/// gives one p5 node (the 10th percentile), priced at the catalog's AWS reserved rates, for
/// the plan's term only, and only from at least 30 covered days.
#[test]
fn reservations_are_advised_from_the_measured_floor_only() {
    let telemetry = |days: i64, step: i64| {
        let mut csv = String::from("timestamp,namespace,pod,allocated_gpus,used_gpus\n");
        for m in 0..(days * 1440 / step) {
            let t = T0 + m * step * 60;
            let _ = writeln!(csv, "{t},foundation,pretrain-7b-0,8,6");
            if m % 20 < 17 {
                let _ = writeln!(csv, "{t},foundation,pretrain-7b-1,8,6");
            }
        }
        csv
    };
    let dir = tempfile::tempdir().expect("tmp");
    let review = |plan: &Path, csv: &str| -> Value {
        let f = write(dir.path(), "p5.csv", csv);
        let out = common::gpuplan(Path::new("/nonexistent/gpuplan-test-cache"))
            .args(["review"])
            .arg(plan)
            .args(["--format", "json", "--csv"])
            .arg(&f)
            .assert()
            .code(0)
            .get_output()
            .clone();
        crate::common::contract(&out.stdout).expect("json")
    };
    let plan = Path::new("plans/aws-training.toml");
    // Two days: the floor is measured, but a one-year commitment is not advised from it.
    let v = review(plan, &telemetry(2, 1));
    let a = row(&v, "reservation_advice", "pool", "pretrain-p5");
    assert!(a["options"].as_array().is_some_and(Vec::is_empty), "{a:#}");
    assert!(
        a["note"]
            .as_str()
            .unwrap_or("")
            .contains("at least 30 covered days"),
        "{a:#}"
    );
    assert!(!v["recommendations"]
        .as_array()
        .expect("advice")
        .iter()
        .any(|r| r["kind"] == "reserve-floor"));

    // 31 days at 5-minute samples: advice, at the plan's default 1-year term only.
    let v = review(plan, &telemetry(31, 5));
    let a = row(&v, "reservation_advice", "pool", "pretrain-p5");
    assert_eq!(a["sku"], "p5.48xlarge");
    assert_eq!(a["p10_gpus"], 8.0, "{a:#}");
    assert_eq!(a["p50_gpus"], 16.0, "{a:#}");
    assert_eq!(a["nodes"], 1, "never above the floor: {a:#}");
    let options = a["options"].as_array().expect("options");
    assert!(
        !options.is_empty(),
        "the catalog has AWS reserved prices offline: {a:#}"
    );
    assert!(options.iter().all(|o| o["term"] == "reserved-1y"), "{a:#}");
    let od = a["on_demand_usd_per_month"].as_f64().unwrap_or(0.0);
    for o in options {
        let ri = o["usd_per_month"].as_f64().unwrap_or(0.0);
        close(
            "break-even",
            o["break_even_utilization"].as_f64().unwrap_or(0.0) * 100.0,
            ri / od * 100.0,
        );
        close(
            "saving",
            o["saving_usd_per_month"].as_f64().unwrap_or(0.0),
            od - ri,
        );
    }
    assert!(v["recommendations"]
        .as_array()
        .expect("advice")
        .iter()
        .any(|r| r["kind"] == "reserve-floor"));

    // A plan that records a 3-year term gets the 3-year option too.
    let three = dir.path().join("three.toml");
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(plan))
        .expect("plan")
        .replacen("[plan]\n", "[plan]\nreservation_term = \"3y\"\n", 1);
    std::fs::write(&three, text).expect("plan");
    let v = review(&three, &telemetry(31, 5));
    let a = row(&v, "reservation_advice", "pool", "pretrain-p5");
    assert!(
        a["options"]
            .as_array()
            .is_some_and(|o| o.iter().any(|o| o["term"] == "reserved-3y")),
        "{a:#}"
    );
}

/// Hostile files: a line without end, a device, a directory: refused, never read whole.
#[test]
fn hostile_files_are_refused_at_a_bound() {
    let dir = tempfile::tempdir().expect("tmp");
    let long = write(dir.path(), "long.prom", &"x".repeat(3 << 20));
    for (path, needle) in [
        (long.as_path(), "long.prom:1: a line longer than 1024 KiB"),
        (Path::new("/dev/zero"), "not a regular file"),
        (dir.path(), "not a regular file"),
    ] {
        let out = common::gpuplan(Path::new("/nonexistent/gpuplan-test-cache"))
            .args(["review", "plans/azure-inference.toml", "--metrics"])
            .arg(path)
            .timeout(std::time::Duration::from_secs(60))
            .assert()
            .code(2)
            .get_output()
            .clone();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(needle), "{}: {err}", path.display());
    }
}

/// A file concatenated twice (two exports merged) counts each sample once, and says so; a
/// contradicting copy keeps the first and says so.
#[test]
fn a_file_concatenated_twice_counts_once() {
    let dir = tempfile::tempdir().expect("tmp");
    let one = telemetry(false, false, KSM, DCGM);
    let f = write(dir.path(), "twice.prom", &format!("{one}{one}"));
    let (v, err) = review(&f, &[]);
    assert_truth(&v);
    assert!(
        err.contains("duplicate sample(s) of the same series and time counted once"),
        "{err}"
    );
    let changed = one.replace("} 0.75 ", "} 0.25 ");
    let f = write(dir.path(), "conflict.prom", &format!("{one}{changed}"));
    let (v, err) = review(&f, &[]);
    assert_truth(&v);
    assert!(err.contains("contradict an earlier one"), "{err}");
}

/// Right-size advice fits the GPU: on a T4 (no MIG) it is time-slicing whose replicas' memory
/// fits the card, never a MIG profile; on AKS's A100 only a profile AKS can create.
#[test]
fn right_size_advice_fits_the_gpu() {
    let mut csv = String::from("timestamp,namespace,pod,allocated_gpus,used_gpus\n");
    for m in 0..360 {
        let t = T0 + m * 60;
        let _ = writeln!(csv, "{t},research,research-notebooks-0,1,0.02");
        let _ = writeln!(csv, "{t},search,embeddings-0,1,0.05");
    }
    let dir = tempfile::tempdir().expect("tmp");
    let f = write(dir.path(), "low.csv", &csv);
    let out = common::gpuplan(Path::new("/nonexistent/gpuplan-test-cache"))
        .args([
            "review",
            "plans/azure-inference.toml",
            "--format",
            "json",
            "--csv",
        ])
        .arg(&f)
        .assert()
        .code(0)
        .get_output()
        .clone();
    let v: Value = crate::common::contract(&out.stdout).expect("json");
    let advice = |w: &str| {
        v["recommendations"]
            .as_array()
            .expect("advice")
            .iter()
            .find(|a| a["kind"] == "right-size" && a["workload"] == w)
            .cloned()
    };
    // notebooks: 3 GiB each on a T4, which CUDA reports as 15,360 MiB (15 GiB), not its
    // marketing 16: a 5-way share leaves each replica less than 3 GiB after the headroom, so
    // the 4-way share they have is already the smallest that holds them and no right-size
    // advice may shrink it (with 16 GiB it advised 5 ways, which would run out of memory).
    assert!(
        advice("research-notebooks").is_none_or(|a| {
            let c = a["change"].as_str().unwrap_or("");
            c.contains("time-slicing") && !c.contains("\"mig\"") && {
                let f: f64 = c
                    .split("gpu_fraction = ")
                    .nth(1)
                    .and_then(|r| r.split(',').next())
                    .and_then(|x| x.parse().ok())
                    .unwrap_or(1.0);
                15.0 * f * 0.95 >= 3.0
            }
        }),
        "{v:#}"
    );
    let e = advice("embeddings").expect("embeddings is over-sized");
    let change = e["change"].as_str().unwrap_or("");
    // 12 GiB: AKS creates 1g.10gb, 2g.20gb, ...: 2g.20gb is the smallest that holds it
    assert!(change.contains("2g.20gb"), "{e:#}");
}

/// Every series scraped twice (two Prometheus jobs, or replicas not deduplicated): each
/// copy differs by `instance`, and the figures are those of one.
#[test]
fn series_scraped_twice_count_once() {
    let dir = tempfile::tempdir().expect("tmp");
    let one = telemetry(false, false, KSM, DCGM);
    let again = one
        .replace(
            "instance=\"10.244.0.9:8080\"",
            "instance=\"10.244.0.10:8080\"",
        )
        .replace(":9400\"", ":9401\"");
    let f = write(dir.path(), "twice.prom", &format!("{one}{again}"));
    let (v, _) = review(&f, &[]);
    assert_truth(&v);
}

/// A step too small for the window is refused before anything is asked or read.
#[test]
fn a_step_too_small_for_the_window_is_refused() {
    let dir = tempfile::tempdir().expect("tmp");
    let om = write(dir.path(), "fleet.om", &telemetry(true, false, KSM, DCGM));
    for source in [
        vec!["--metrics", om.to_str().expect("utf-8")],
        vec![
            "--prometheus",
            "http://127.0.0.1:9",
            "--to",
            "2026-09-01T00:00:00Z",
        ],
    ] {
        let out = common::gpuplan(Path::new("/nonexistent/gpuplan-test-cache"))
            .args([
                "review",
                "plans/azure-inference.toml",
                "--step",
                "1s",
                "--window",
                "3660d",
            ])
            .args(&source)
            .assert()
            .code(2)
            .get_output()
            .clone();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("give a larger `--step`"), "{source:?}: {err}");
    }
}
