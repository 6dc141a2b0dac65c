//! `gpuplan review` on telemetry as a stock install exports it: kube-state-metrics v2 (every
//! 30 s at +7.1 s) and dcgm-exporter behind kube-prometheus-stack's ServiceMonitor (every
//! 15 s at +11.8 s, so its `pod`/`namespace` arrive as `exported_*`), with millisecond jitter.
//! The fleet: chat-api on AKS MIG (single strategy, 3g.40gb), embeddings matched only by
//! `app.kubernetes.io/name`, four notebooks time-sliced four ways on one T4, a nightly-eval Job
//! that finished after 2 h and was never cleaned up, a Pending pod, a stalled two-GPU job, a GPU
//! whose profiling metric is stuck at zero, a pod with no usage series, and nodes left empty.
//! The truth is worked out per second by hand below; every figure must be within 2%.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use crate::common;

use serde_json::Value;

/// 2026-09-01T00:00:00Z
pub(crate) const T0: i64 = 1_788_220_800;
pub(crate) const HOURS: i64 = 12;
pub(crate) const SPAN: f64 = (HOURS * 3600) as f64;
pub(crate) const H: f64 = 3600.0;

/// How a scrape is timed: interval and offset in ms, and jitter in ms (±).
#[derive(Clone, Copy)]
pub(crate) struct Scrape {
    pub(crate) every: i64,
    pub(crate) offset: i64,
    pub(crate) jitter: i64,
}

pub(crate) const KSM: Scrape = Scrape {
    every: 30_000,
    offset: 7_100,
    jitter: 5,
};
pub(crate) const DCGM: Scrape = Scrape {
    every: 15_000,
    offset: 11_800,
    jitter: 5,
};

/// Sample times (ms) of a scrape over the span, with a deterministic jitter.
pub(crate) fn times(s: Scrape) -> impl Iterator<Item = i64> {
    (0..)
        .map(move |i: i64| {
            let j = if s.jitter == 0 {
                0
            } else {
                (i * 7919 + 13) % (2 * s.jitter + 1) - s.jitter
            };
            T0 * 1000 + s.offset + s.every * i + j
        })
        .take_while(|t| *t < (T0 + HOURS * 3600) * 1000)
}

/// A scrape that may change once: `first`, then `then.1` from `then.0` seconds after T0 (a
/// kube-state-metrics interval changed mid-window).
#[derive(Clone, Copy)]
pub(crate) struct Sched {
    pub(crate) first: Scrape,
    pub(crate) then: Option<(f64, Scrape)>,
}

impl From<Scrape> for Sched {
    fn from(first: Scrape) -> Sched {
        Sched { first, then: None }
    }
}

pub(crate) fn sched_times(s: Sched) -> Vec<i64> {
    match s.then {
        None => times(s.first).collect(),
        Some((at, b)) => {
            let at = T0 * 1000 + (at * 1000.0) as i64;
            times(s.first)
                .filter(|t| *t < at)
                .chain(times(b).filter(|t| *t >= at))
                .collect()
        }
    }
}

/// Families of OpenMetrics lines, each printed contiguously after its `# TYPE`.
#[derive(Default)]
pub(crate) struct Om {
    pub(crate) families: BTreeMap<&'static str, String>,
    pub(crate) seconds: bool,
}

impl Om {
    /// One series: `value(t)` at each scrape time `t` (seconds since T0); `None` = no sample.
    pub(crate) fn series(
        &mut self,
        family: &'static str,
        labels: &str,
        s: impl Into<Sched>,
        value: impl Fn(f64) -> Option<f64>,
    ) {
        let out = self.families.entry(family).or_default();
        for ms in sched_times(s.into()) {
            let rel = (ms - T0 * 1000) as f64 / 1000.0;
            if let Some(v) = value(rel) {
                let ts = if self.seconds {
                    format!("{}.{:03}", ms / 1000, ms % 1000)
                } else {
                    ms.to_string()
                };
                let _ = writeln!(out, "{family}{{{labels}}} {v} {ts}");
            }
        }
    }
    pub(crate) fn text(&self) -> String {
        let mut s = String::new();
        for (f, lines) in &self.families {
            if self.seconds {
                let _ = writeln!(s, "# TYPE {f} gauge");
            }
            s.push_str(lines);
        }
        if self.seconds {
            s.push_str("# EOF\n");
        }
        s
    }
}

pub(crate) const KSM_TARGET: &str =
    "job=\"kube-state-metrics\",instance=\"10.244.0.9:8080\",service=\"kube-prometheus-stack-kube-state-metrics\",endpoint=\"http\"";

pub(crate) fn dcgm_target(node: &str) -> String {
    format!("job=\"nvidia-dcgm-exporter\",instance=\"{node}:9400\",namespace=\"gpu-operator\",pod=\"nvidia-dcgm-exporter-{}\",container=\"nvidia-dcgm-exporter\",service=\"nvidia-dcgm-exporter\",endpoint=\"gpu-metrics\"", &node[node.len() - 4..])
}

pub(crate) struct PodSpec {
    pub(crate) ns: &'static str,
    pub(crate) pod: &'static str,
    pub(crate) node: &'static str,
    pub(crate) resource: &'static str,
    pub(crate) gpus: f64,
    /// Phase at time t (seconds since T0).
    pub(crate) phase: fn(f64) -> &'static str,
    pub(crate) app: Option<&'static str>,
}

pub(crate) fn always_running(_: f64) -> &'static str {
    "Running"
}

pub(crate) fn pods() -> Vec<PodSpec> {
    let p = |ns, pod, node, resource, gpus| PodSpec {
        ns,
        pod,
        node,
        resource,
        gpus,
        phase: always_running,
        app: None,
    };
    let mut v = vec![
        p(
            "assistants",
            "chat-api-7d9f-a",
            "aks-servemig-14912-vmss000000",
            "nvidia_com_gpu",
            1.0,
        ),
        p(
            "assistants",
            "chat-api-7d9f-b",
            "aks-servemig-14912-vmss000001",
            "nvidia_com_gpu",
            1.0,
        ),
        PodSpec {
            app: Some("embeddings"),
            ..p(
                "search",
                "embed-svc-5c4f-x",
                "aks-servemig-14912-vmss000000",
                "nvidia_com_gpu",
                1.0,
            )
        },
        p(
            "research",
            "research-notebooks-0",
            "aks-notebooks-31337-vmss000000",
            "nvidia_com_gpu",
            1.0,
        ),
        p(
            "research",
            "research-notebooks-1",
            "aks-notebooks-31337-vmss000000",
            "nvidia_com_gpu",
            1.0,
        ),
        p(
            "research",
            "research-notebooks-2",
            "aks-notebooks-31337-vmss000000",
            "nvidia_com_gpu",
            1.0,
        ),
        p(
            "research",
            "research-notebooks-3",
            "aks-notebooks-31337-vmss000000",
            "nvidia_com_gpu",
            1.0,
        ),
        p(
            "research",
            "mystery-job-1",
            "gpu-node-x",
            "nvidia_com_gpu",
            2.0,
        ),
        p(
            "search",
            "batch-legacy-0",
            "gpu-node-y",
            "nvidia_com_gpu",
            1.0,
        ),
        p("search", "indexer-0", "gpu-node-z", "nvidia_com_gpu", 1.0),
    ];
    v.push(PodSpec {
        phase: |t| if t < 2.0 * H { "Running" } else { "Succeeded" },
        ..p(
            "assistants",
            "nightly-eval-28391-abc",
            "aks-evalspot-20001-vmss000000",
            "nvidia_com_gpu",
            1.0,
        )
    });
    v.push(PodSpec {
        phase: |t| {
            if (2.0 * H..4.0 * H).contains(&t) {
                "Pending"
            } else {
                "Gone"
            }
        },
        ..p(
            "assistants",
            "nightly-eval-28391-def",
            "",
            "nvidia_com_gpu",
            1.0,
        )
    });
    v
}

/// The fleet's telemetry. `vgpu`: dcgm-exporter with `--kubernetes-virtual-gpus` (a copy of
/// the T4's usage to each notebook, labelled `vgpu`), else the default (all of it to one).
pub(crate) fn telemetry(seconds: bool, vgpu: bool, ksm: Scrape, dcgm: Scrape) -> String {
    telemetry_replaced(seconds, vgpu, ksm, dcgm, None)
}

/// [`telemetry`], with every dcgm-exporter pod replaced at `replaced` seconds: on
/// hostNetwork the new exporter keeps the node's `instance`, so the old and the new series
/// differ only by the exporter's own `pod`.
pub(crate) fn telemetry_replaced(
    seconds: bool,
    vgpu: bool,
    ksm: Scrape,
    dcgm: Scrape,
    replaced: Option<f64>,
) -> String {
    telemetry_with(seconds, vgpu, ksm.into(), &|_| dcgm.into(), replaced)
}

/// The fleet with kube-state-metrics on `ksm` (which may change mid-window) and each node's
/// dcgm-exporter on its own schedule.
pub(crate) fn telemetry_with(
    seconds: bool,
    vgpu: bool,
    ksm: Sched,
    dcgm_of: &dyn Fn(&str) -> Sched,
    replaced: Option<f64>,
) -> String {
    let mut om = Om {
        seconds,
        ..Om::default()
    };
    for p in pods() {
        let phase = p.phase;
        for ph in ["Pending", "Running", "Succeeded", "Failed", "Unknown"] {
            om.series(
                "kube_pod_status_phase",
                &format!(
                    "namespace=\"{}\",pod=\"{}\",uid=\"uid-{}\",phase=\"{ph}\",{KSM_TARGET}",
                    p.ns, p.pod, p.pod
                ),
                ksm,
                move |t| {
                    let now = phase(t);
                    (now != "Gone").then_some(if now == ph { 1.0 } else { 0.0 })
                },
            );
        }
        // scheduled: `false` while no node took it (kube-state-metrics exports all three
        // conditions, 1 on the current one)
        let unplaced = p.node.is_empty();
        for (cond, now) in [("true", !unplaced), ("false", unplaced), ("unknown", false)] {
            om.series(
                "kube_pod_status_scheduled",
                &format!(
                    "namespace=\"{}\",pod=\"{}\",uid=\"uid-{}\",condition=\"{cond}\",{KSM_TARGET}",
                    p.ns, p.pod, p.pod
                ),
                ksm,
                move |t| (phase(t) != "Gone").then_some(if now { 1.0 } else { 0.0 }),
            );
        }
        // requests: the node label is empty until scheduled
        let (gpus, node) = (p.gpus, p.node);
        om.series(
            "kube_pod_container_resource_requests",
            &format!("namespace=\"{}\",pod=\"{}\",uid=\"uid-{}\",container=\"main\",node=\"{node}\",resource=\"{}\",unit=\"integer\",{KSM_TARGET}", p.ns, p.pod, p.pod, p.resource),
            ksm,
            move |t| (phase(t) != "Gone").then_some(gpus),
        );
        // and its CPU, which the review must ignore
        om.series(
            "kube_pod_container_resource_requests",
            &format!("namespace=\"{}\",pod=\"{}\",uid=\"uid-{}\",container=\"main\",node=\"{node}\",resource=\"cpu\",unit=\"core\",{KSM_TARGET}", p.ns, p.pod, p.pod),
            ksm,
            move |t| (phase(t) != "Gone").then_some(4.0),
        );
        if let Some(app) = p.app {
            om.series(
                "kube_pod_labels",
                &format!("namespace=\"{}\",pod=\"{}\",uid=\"uid-{}\",label_app_kubernetes_io_name=\"{app}\",{KSM_TARGET}", p.ns, p.pod, p.pod),
                ksm,
                |_| Some(1.0),
            );
        }
    }
    // nodes: pool label, allocatable
    let nodes: [(&str, Option<&str>, f64); 7] = [
        ("aks-servemig-14912-vmss000000", Some("servemig"), 2.0),
        ("aks-servemig-14912-vmss000001", Some("servemig"), 2.0),
        ("aks-notebooks-31337-vmss000000", Some("notebooks"), 4.0),
        ("aks-evalspot-20001-vmss000000", Some("evalspot"), 1.0),
        ("gpu-node-x", None, 2.0),
        ("gpu-node-y", None, 1.0),
        ("gpu-node-z", None, 1.0),
    ];
    for (node, pool, gpus) in nodes {
        om.series(
            "kube_node_status_allocatable",
            &format!("node=\"{node}\",resource=\"nvidia_com_gpu\",unit=\"integer\",{KSM_TARGET}"),
            ksm,
            move |_| Some(gpus),
        );
        om.series(
            "kube_node_status_allocatable",
            &format!("node=\"{node}\",resource=\"cpu\",unit=\"core\",{KSM_TARGET}"),
            ksm,
            |_| Some(24.0),
        );
        let pool = pool
            .map(|p| format!(",label_kubernetes_azure_com_agentpool=\"{p}\""))
            .unwrap_or_default();
        om.series(
            "kube_node_labels",
            &format!("node=\"{node}\"{pool},label_kubernetes_io_os=\"linux\",{KSM_TARGET}"),
            ksm,
            |_| Some(1.0),
        );
    }
    // DCGM: one series per device the exporter sees, named for the pod holding it
    let dev = |om: &mut Om,
               node: &str,
               gpu: u32,
               mig: Option<(&str, u32)>,
               owner: Option<(&str, &str)>,
               extra: &str,
               metric: &'static str,
               f: Box<dyn Fn(f64) -> Option<f64>>| {
        let mig = mig
            .map(|(p, id)| format!(",GPU_I_PROFILE=\"{p}\",GPU_I_ID=\"{id}\""))
            .unwrap_or_default();
        let who = owner
            .map(|(ns, pod)| format!(",exported_namespace=\"{ns}\",exported_pod=\"{pod}\",exported_container=\"main\""))
            .unwrap_or_default();
        let labels = format!("gpu=\"{gpu}\",UUID=\"GPU-{node}-{gpu}\",pci_bus_id=\"00000001:00:00.0\",device=\"nvidia{gpu}\",modelName=\"NVIDIA A100 80GB PCIe\",Hostname=\"{node}\",DCGM_FI_DRIVER_VERSION=\"550.54.15\"{mig}{who}{extra},{}", dcgm_target(node));
        match replaced {
            None => om.series(metric, &labels, dcgm_of(node), f),
            Some(at) => {
                let f = std::rc::Rc::new(f);
                let (old, new) = (f.clone(), f);
                let before = labels.replace(
                    "pod=\"nvidia-dcgm-exporter-",
                    "pod=\"nvidia-dcgm-exporter-old-",
                );
                om.series(metric, &before, dcgm_of(node), move |t| {
                    if t < at {
                        old(t)
                    } else {
                        None
                    }
                });
                om.series(metric, &labels, dcgm_of(node), move |t| {
                    if t >= at {
                        new(t)
                    } else {
                        None
                    }
                });
            }
        }
    };
    let act = "DCGM_FI_PROF_GR_ENGINE_ACTIVE";
    let util = "DCGM_FI_DEV_GPU_UTIL";
    dev(
        &mut om,
        "aks-servemig-14912-vmss000000",
        0,
        Some(("3g.40gb", 1)),
        Some(("assistants", "chat-api-7d9f-a")),
        "",
        act,
        Box::new(|_| Some(0.6)),
    );
    dev(
        &mut om,
        "aks-servemig-14912-vmss000000",
        0,
        Some(("3g.40gb", 2)),
        Some(("search", "embed-svc-5c4f-x")),
        "",
        act,
        Box::new(|_| Some(0.2)),
    );
    dev(
        &mut om,
        "aks-servemig-14912-vmss000001",
        0,
        Some(("3g.40gb", 1)),
        Some(("assistants", "chat-api-7d9f-b")),
        "",
        act,
        Box::new(|_| Some(0.3)),
    );
    // the free instance on node 1 reports, with no pod
    dev(
        &mut om,
        "aks-servemig-14912-vmss000001",
        0,
        Some(("3g.40gb", 2)),
        None,
        "",
        act,
        Box::new(|_| Some(0.0)),
    );
    // the T4, 0.75 busy: all of it to notebook 3 by default, a copy to each with vgpu
    if vgpu {
        for i in 0..4 {
            let pod: &'static str = [
                "research-notebooks-0",
                "research-notebooks-1",
                "research-notebooks-2",
                "research-notebooks-3",
            ][i];
            dev(
                &mut om,
                "aks-notebooks-31337-vmss000000",
                0,
                None,
                Some(("research", pod)),
                &format!(",vgpu=\"{i}\""),
                act,
                Box::new(|_| Some(0.75)),
            );
        }
    } else {
        dev(
            &mut om,
            "aks-notebooks-31337-vmss000000",
            0,
            None,
            Some(("research", "research-notebooks-3")),
            "",
            act,
            Box::new(|_| Some(0.75)),
        );
    }
    // the Job, while it runs; then the GPU reports with no pod
    dev(
        &mut om,
        "aks-evalspot-20001-vmss000000",
        0,
        None,
        Some(("assistants", "nightly-eval-28391-abc")),
        "",
        act,
        Box::new(|t| (t < 2.0 * H).then_some(0.8)),
    );
    dev(
        &mut om,
        "aks-evalspot-20001-vmss000000",
        0,
        None,
        None,
        "",
        act,
        Box::new(|t| (t >= 2.0 * H).then_some(0.0)),
    );
    // a two-GPU job busy for 4 h, then idle for 8: stalled
    for gpu in 0..2 {
        dev(
            &mut om,
            "gpu-node-x",
            gpu,
            None,
            Some(("research", "mystery-job-1")),
            "",
            act,
            Box::new(|t| Some(if t < 4.0 * H { 1.0 } else { 0.0 })),
        );
    }
    // profiling counters held by another profiler: stuck at 0 while utilisation moves
    dev(
        &mut om,
        "gpu-node-y",
        0,
        None,
        Some(("search", "batch-legacy-0")),
        "",
        act,
        Box::new(|_| Some(0.0)),
    );
    dev(
        &mut om,
        "gpu-node-y",
        0,
        None,
        Some(("search", "batch-legacy-0")),
        "",
        util,
        Box::new(|_| Some(50.0)),
    );
    // indexer-0 on gpu-node-z: no usage series at all
    om.text()
}

/// (allocated, used) GPU-seconds by name.
pub(crate) type Truth = BTreeMap<&'static str, (f64, f64)>;

/// The truth, per second: (allocated, used) GPU-seconds per team and per workload.
pub(crate) fn truth() -> (Truth, Truth) {
    let mig = 3.0 / 7.0;
    let chat = (2.0 * SPAN * mig, (0.6 + 0.3) * SPAN * mig);
    let emb = (SPAN * mig, 0.2 * SPAN * mig);
    let notebooks = (SPAN, 0.75 * SPAN);
    let eval = (2.0 * H, 0.8 * 2.0 * H);
    let mystery = (2.0 * SPAN, 2.0 * 4.0 * H);
    let legacy = (SPAN, 0.5 * SPAN);
    let workloads = BTreeMap::from([
        ("chat-api", chat),
        ("embeddings", emb),
        ("research-notebooks", notebooks),
        ("nightly-eval", eval),
    ]);
    // indexer-0's GPU-seconds are allocated, but have no data: not in "used"
    let teams = BTreeMap::from([
        ("assistants", (chat.0 + eval.0, chat.1 + eval.1)),
        ("search", (emb.0 + legacy.0 + SPAN, emb.1 + legacy.1)),
        (
            "research",
            (notebooks.0 + mystery.0, notebooks.1 + mystery.1),
        ),
    ]);
    (teams, workloads)
}

pub(crate) fn review(file: &Path, extra: &[&str]) -> (Value, String) {
    let out = common::gpuplan(Path::new("/nonexistent/gpuplan-test-cache"))
        .env_remove("GPUPLAN_PROMETHEUS_URL")
        .args([
            "review",
            "plans/azure-inference.toml",
            "--format",
            "json",
            "--metrics",
        ])
        .arg(file)
        .args(extra)
        .assert()
        .code(0)
        .get_output()
        .clone();
    (
        crate::common::contract(&out.stdout).expect("json"),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The review through a Prometheus server, as JSON; a refusal names the server's reason.
/// Every section of the review JSON a server's answers feed.
pub(crate) const EVERY_SECTION: [&str; 8] = [
    "teams",
    "workloads",
    "stalled",
    "pending",
    "idle_nodes",
    "pools",
    "idle_pools",
    "recommendations",
];

/// The 12 hours of `om` at `step`, reviewed from the file and through the server at `url`:
/// both hold to the truth, and `keys` agree within rounding.
pub(crate) fn server_agrees_with_file(om: &Path, url: &str, step: &str, keys: &[&str]) {
    let window = [
        "--from",
        "2026-09-01T00:00:00Z",
        "--to",
        "2026-09-01T12:00:00Z",
        "--step",
        step,
    ];
    let (file, _) = review(om, &window);
    assert_truth(&file);
    let server = review_server(url, &window);
    assert_truth(&server);
    for key in keys {
        common::prometheus::assert_close(&server[*key], &file[*key], key);
    }
}

pub(crate) fn review_server(url: &str, window: &[&str]) -> Value {
    let out = common::gpuplan(Path::new("/nonexistent/gpuplan-test-cache"))
        .args([
            "review",
            "plans/azure-inference.toml",
            "--format",
            "json",
            "--prometheus",
            url,
        ])
        .args(window)
        .output()
        .expect("runs");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{window:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    crate::common::contract(&out.stdout).expect("json")
}

pub(crate) fn row<'a>(v: &'a Value, list: &str, key: &str, name: &str) -> &'a Value {
    v[list]
        .as_array()
        .and_then(|a| a.iter().find(|r| r[key] == name))
        .unwrap_or_else(|| panic!("no {list} row {name}: {v:#}"))
}

pub(crate) fn close(what: &str, got: f64, want: f64) {
    let tol = 0.02 * want.abs().max(1.0);
    assert!(
        (got - want).abs() <= tol,
        "{what}: {got} against a truth of {want}"
    );
}

pub(crate) fn assert_truth(v: &Value) {
    let (teams, workloads) = truth();
    for (team, (a, u)) in teams {
        let r = row(v, "teams", "team", team);
        close(
            &format!("{team} allocated"),
            r["allocated_gpu_seconds"].as_f64().unwrap_or(-1.0),
            a,
        );
        close(
            &format!("{team} used"),
            r["used_gpu_seconds"].as_f64().unwrap_or(-1.0),
            u,
        );
    }
    for (w, (a, u)) in workloads {
        let r = row(v, "workloads", "workload", w);
        close(
            &format!("{w} allocated"),
            r["allocated_gpu_seconds"].as_f64().unwrap_or(-1.0),
            a,
        );
        close(
            &format!("{w} used"),
            r["used_gpu_seconds"].as_f64().unwrap_or(-1.0),
            u,
        );
        close(
            &format!("{w} efficiency"),
            r["efficiency"].as_f64().unwrap_or(-1.0) * 100.0,
            u / a * 100.0,
        );
    }
    // the no-data pod is said, never read as 0%
    close(
        "search no data",
        row(v, "teams", "team", "search")["no_data_gpu_seconds"]
            .as_f64()
            .unwrap_or(-1.0),
        SPAN,
    );
    let nodata = v["coverage"]["pods_without_usage"]
        .as_array()
        .expect("list");
    assert_eq!(nodata.len(), 1, "{nodata:#?}");
    assert_eq!(nodata[0]["pod"], "indexer-0");
    // only the two-GPU job is stalled: not the finished Job, not a notebook on a busy T4
    let stalled = v["stalled"].as_array().expect("stalled");
    assert_eq!(stalled.len(), 1, "{stalled:#?}");
    assert_eq!(stalled[0]["pod"], "mystery-job-1");
    close(
        "stalled seconds",
        stalled[0]["seconds"].as_f64().unwrap_or(0.0),
        8.0 * H,
    );
    assert_eq!(stalled[0]["allocated_gpus"], 2.0);
    // the Pending pod is unmet demand, not allocation
    let pending = v["pending"].as_array().expect("pending");
    assert_eq!(pending.len(), 1, "{pending:#?}");
    assert_eq!(pending[0]["pod"], "nightly-eval-28391-def");
    close(
        "pending",
        pending[0]["gpu_seconds"].as_f64().unwrap_or(0.0),
        2.0 * H,
    );
    // and it was never scheduled: all of it unscheduled
    close(
        "unscheduled",
        pending[0]["unscheduled_gpu_seconds"]
            .as_f64()
            .unwrap_or(0.0),
        2.0 * H,
    );
    // the eval node sat empty for the 10 h after its Job finished
    let eval = row(v, "idle_nodes", "node", "aks-evalspot-20001-vmss000000");
    close(
        "empty eval node",
        eval["empty_seconds"].as_f64().unwrap_or(0.0),
        10.0 * H,
    );
    // the second serve-mig node kept one 3g.40gb instance free all along, and its card's
    // seventh slice is in no instance (two 3g.40gb): the node is paid whole, so both are idle
    let mig = row(v, "idle_nodes", "node", "aks-servemig-14912-vmss000001");
    close(
        "free MIG instance and stranded slice",
        mig["idle_gpu_seconds"].as_f64().unwrap_or(0.0),
        SPAN * 4.0 / 7.0,
    );
    close(
        "stranded slice",
        mig["stranded_gpu_seconds"].as_f64().unwrap_or(0.0),
        SPAN / 7.0,
    );
    // the first is full but for that slice
    let full = row(v, "idle_nodes", "node", "aks-servemig-14912-vmss000000");
    close(
        "stranded slice of the full node",
        full["idle_gpu_seconds"].as_f64().unwrap_or(0.0),
        SPAN / 7.0,
    );
    // the fallback signal is named for the GPU it was used on
    assert!(
        v["pools"]
            .as_array()
            .expect("pools")
            .iter()
            .any(|p| p["signal"].as_str().is_some_and(|s| s.contains("GPU_UTIL"))),
        "{:#}",
        v["pools"]
    );
    close(
        "covered",
        v["coverage"]["covered_seconds"].as_f64().unwrap_or(0.0),
        SPAN,
    );
}

pub(crate) fn write(dir: &Path, name: &str, text: &str) -> std::path::PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).expect("write");
    p
}

#[test]
pub(crate) fn old_label_names_and_unlabelled_series_are_read() {
    let dir = tempfile::tempdir().expect("tmp");
    // dcgm-exporter 1.x named pods `pod_name` / `pod_namespace`
    let text = telemetry(false, false, KSM, DCGM)
        .replace("exported_namespace=", "pod_namespace=")
        .replace("exported_pod=", "pod_name=")
        + "DCGM_FI_PROF_GR_ENGINE_ACTIVE{gpu=\"7\",Hostname=\"stray\"} 0.5 1788220811000\n";
    let f = write(dir.path(), "old.prom", &text);
    let (v, _) = review(&f, &[]);
    assert_truth(&v);
}

/// The same file through a real Prometheus (Debian's package, loaded with promtool) gives
/// the same review.
#[test]
#[ignore = "needs Debian's prometheus package; .ci/run installs it and runs this test"]
pub(crate) fn a_real_prometheus_agrees_with_the_file() {
    let dir = tempfile::tempdir().expect("tmp");
    let om = write(dir.path(), "fleet.om", &telemetry(true, false, KSM, DCGM));
    let (_server, url) = common::prometheus::start(dir.path(), &om);
    server_agrees_with_file(&om, &url, "60s", &EVERY_SECTION);
}

/// Issue 42: the same file through VictoriaMetrics with its default flags (Debian's
/// 1.79), which aligns range queries to the step unless asked not to: the review agrees
/// with the file and the truth at steps of 60 s and 5 m.
#[test]
#[ignore = "needs Debian's victoria-metrics package; .ci/run installs it and runs this test"]
pub(crate) fn a_real_victoria_metrics_with_default_flags_agrees_with_the_file() {
    let dir = tempfile::tempdir().expect("tmp");
    let om = write(dir.path(), "fleet.om", &telemetry(true, false, KSM, DCGM));
    let (_server, url) = common::victoria::start(dir.path(), &om);
    for step in ["60s", "5m"] {
        server_agrees_with_file(&om, &url, step, &EVERY_SECTION);
    }
}

/// dcgm-exporter on hostNetwork, its pods replaced mid-window (between scrapes, not on a
/// step): the old and the new exporter's series differ only by the exporter's own `pod`, and
/// the review sums over them before renaming `exported_pod`, so they never collide. Through a
/// real Prometheus at steps of 60 s, 5 m and 12 m the review agrees with the file and the
/// truth.
#[test]
#[ignore = "needs Debian's prometheus package; .ci/run installs it and runs this test"]
pub(crate) fn a_replaced_host_network_exporter_never_collides_in_prometheus() {
    let dir = tempfile::tempdir().expect("tmp");
    let om = write(
        dir.path(),
        "replaced.om",
        &telemetry_replaced(true, false, KSM, DCGM, Some(5.0 * H + 1234.5)),
    );
    let (_server, url) = common::prometheus::start(dir.path(), &om);
    for step in ["60s", "5m", "12m"] {
        server_agrees_with_file(
            &om,
            &url,
            step,
            &["teams", "workloads", "stalled", "idle_nodes", "pools"],
        );
    }
}
