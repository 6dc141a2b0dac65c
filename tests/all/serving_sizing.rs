//! Issue 61 items 1-2: a service is sized from what arrives, not from the most a replica was
//! seen carrying nor from how long its clients waited. Three vLLM services are simulated
//! request by request from their arrivals (each replica a FIFO queue in front of its batch
//! slots, as vLLM's scheduler runs `max_num_seqs` requests and queues the rest; clients that
//! give up after their patience abort, which vLLM counts as `finished_reason="abort"`), and
//! exported as vLLM's V1 logger does (`vllm/v1/metrics/loggers.py`: the running and waiting
//! gauges, `kv_cache_usage_perc`, the time-to-first-token histogram with its real bounds and
//! `request_success_total` per finish reason). The true need is found by simulating the
//! busiest hour at each replica count, independently of the review's arithmetic.

use std::collections::BinaryHeap;
use std::fmt::Write as _;

use crate::common;
use crate::forecast::NOV7;

const STEP: i64 = 600;
const DAYS: i64 = 8;
/// vLLM's TTFT bounds (a subset of its buckets: any subset of a cumulative histogram is one).
const TTFT_LE: [f64; 12] = [
    0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 10.0, 20.0, 40.0, 80.0, 160.0,
];
/// The first token's own time without a queue, seconds.
const FIRST_TOKEN: f64 = 0.2;
/// KV cache a running request takes: eight fill it to 80%.
const KV_PER_REQUEST: f64 = 0.1;

/// A small deterministic generator (xorshift64*), so every run simulates the same requests.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        let v = self.0.wrapping_mul(0x2545_F491_4F6C_DD1D);
        ((v >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }
    fn exp(&mut self, mean: f64) -> f64 {
        -self.next().ln() * mean
    }
}

#[derive(Clone, Copy)]
struct Service {
    name: &'static str,
    replicas: usize,
    /// Requests one replica runs at once (`max_num_seqs`).
    slots: usize,
    /// Mean seconds a request runs (exponential).
    service: f64,
    objective: f64,
    /// Requests a second arriving at the whole service at time `t` (seconds into the run).
    rate: fn(f64) -> f64,
}

/// Busy by day: past what four replicas serve (4 requests a second) for hours at its peak.
fn chat_rate(t: f64) -> f64 {
    let hour = (t / 3600.0) % 24.0;
    let day = (std::f64::consts::PI * (hour - 6.0) / 14.0).sin().max(0.0);
    0.5 + 4.5 * day
}
/// Nearly idle.
fn rag_rate(_: f64) -> f64 {
    0.02
}
/// Quiet, with a 40-minute spike every six hours.
fn burst_rate(t: f64) -> f64 {
    if (t % 21_600.0) < 2_400.0 {
        1.0
    } else {
        0.05
    }
}

const SERVICES: [Service; 3] = [
    Service {
        name: "chat",
        replicas: 4,
        slots: 8,
        service: 8.0,
        objective: 1.0,
        rate: chat_rate,
    },
    Service {
        name: "rag",
        replicas: 4,
        slots: 8,
        service: 12.0,
        objective: 2.0,
        rate: rag_rate,
    },
    Service {
        name: "burst",
        replicas: 4,
        slots: 8,
        service: 16.0,
        objective: 1.0,
        rate: burst_rate,
    },
];

/// One replica's windows: seconds of requests running and waiting, first tokens per bound,
/// requests finished and aborted.
#[derive(Default)]
struct Replica {
    running: Vec<f64>,
    waiting: Vec<f64>,
    ttft: Vec<[f64; 13]>,
    done: Vec<f64>,
    aborted: Vec<f64>,
    /// Times to first token, for the true-need search.
    firsts: Vec<f64>,
}

/// Adds the seconds of `[from, to)` to each window they fall in.
fn spread(acc: &mut [f64], from: f64, to: f64) {
    let mut t = from;
    while t < to {
        let k = (t / STEP as f64) as usize;
        if k >= acc.len() {
            return;
        }
        let end = ((k + 1) as f64 * STEP as f64).min(to);
        acc[k] += end - t;
        t = end;
    }
}

/// One replica fed `rate / replicas` for `seconds`: FIFO in front of its slots, a client that
/// would wait longer than `patience` gives up.
fn replica(s: &Service, seconds: f64, patience: f64, seed: u64) -> Replica {
    let windows = (seconds / STEP as f64).ceil() as usize;
    let mut r = Replica {
        running: vec![0.0; windows],
        waiting: vec![0.0; windows],
        ttft: vec![[0.0; 13]; windows],
        done: vec![0.0; windows],
        aborted: vec![0.0; windows],
        firsts: Vec::new(),
    };
    let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    // Each slot's next free time, earliest first.
    let mut free: BinaryHeap<std::cmp::Reverse<u64>> =
        (0..s.slots).map(|_| std::cmp::Reverse(0)).collect();
    let ms = |t: f64| (t * 1000.0) as u64;
    let window = |t: f64| ((t / STEP as f64) as usize).min(windows - 1);
    let mut t = 0.0;
    loop {
        // Piecewise-constant rate, memoryless arrivals: redraw at each window's rate.
        let lambda = (s.rate)(t) / s.replicas as f64;
        t += rng.exp(1.0 / lambda.max(1e-9));
        if t >= seconds {
            return r;
        }
        let std::cmp::Reverse(first_free) = *free.peek().expect("slots");
        let start = t.max(first_free as f64 / 1000.0);
        if start - t > patience {
            spread(&mut r.waiting, t, t + patience);
            r.aborted[window(t + patience)] += 1.0;
            continue;
        }
        free.pop();
        let end = start + rng.exp(s.service);
        free.push(std::cmp::Reverse(ms(end)));
        spread(&mut r.waiting, t, start);
        spread(&mut r.running, start, end);
        let first = start - t + FIRST_TOKEN;
        r.firsts.push(first);
        let b = TTFT_LE.iter().position(|le| first <= *le).unwrap_or(12);
        r.ttft[window(start + FIRST_TOKEN)][b] += 1.0;
        r.done[window(end)] += 1.0;
    }
}

/// The fleet's OpenMetrics file: kube-state-metrics and dcgm-exporter for each pod, and vLLM's
/// V1 series.
pub(crate) fn fleet(patience: f64) -> String {
    let ksm = "job=\"kube-state-metrics\",instance=\"10.244.0.9:8080\"";
    let mut fam: std::collections::BTreeMap<&str, String> = std::collections::BTreeMap::new();
    let seconds = (DAYS * 86_400) as f64;
    for (si, s) in SERVICES.iter().enumerate() {
        for i in 0..s.replicas {
            let r = replica(s, seconds, patience, (si * 100 + i + 1) as u64);
            let (pod, node) = (
                format!("{}-7d9f-{i}", s.name),
                format!("node-{}-{i}", s.name),
            );
            let uid = format!("u-{pod}");
            let v = format!("namespace=\"ai\",pod=\"{pod}\",job=\"vllm\",instance=\"10.244.{si}.{i}:8000\",model_name=\"meta-llama/Llama-3.1-8B-Instruct\",engine=\"0\"");
            let (mut ttft, mut done, mut aborted) = ([0.0f64; 13], 0.0, 0.0);
            for k in 0..r.running.len() {
                let t = NOV7 + k as i64 * STEP + 5;
                let mut line = |f: &'static str, labels: &str, x: f64| {
                    let _ = writeln!(fam.entry(f).or_default(), "{f}{{{labels}}} {x} {t}");
                };
                line(
                    "kube_pod_status_phase",
                    &format!(
                        "namespace=\"ai\",pod=\"{pod}\",uid=\"{uid}\",phase=\"Running\",{ksm}"
                    ),
                    1.0,
                );
                line("kube_pod_container_resource_requests", &format!("namespace=\"ai\",pod=\"{pod}\",uid=\"{uid}\",container=\"main\",node=\"{node}\",resource=\"nvidia_com_gpu\",unit=\"integer\",{ksm}"), 1.0);
                let running = r.running[k] / STEP as f64;
                let busy = (running / s.slots as f64).min(1.0);
                line("DCGM_FI_PROF_GR_ENGINE_ACTIVE", &format!("gpu=\"0\",UUID=\"GPU-{node}\",modelName=\"NVIDIA A100 80GB PCIe\",Hostname=\"{node}\",exported_namespace=\"ai\",exported_pod=\"{pod}\",exported_container=\"main\",job=\"nvidia-dcgm-exporter\",namespace=\"gpu-operator\",pod=\"dcgm-{node}\""), (busy * 1000.0).round() / 1000.0);
                line("vllm:num_requests_running", &v, running);
                line("vllm:num_requests_waiting", &v, r.waiting[k] / STEP as f64);
                line("vllm:kv_cache_usage_perc", &v, running * KV_PER_REQUEST);
                for (b, n) in r.ttft[k].iter().enumerate() {
                    ttft[b] += n;
                }
                let mut cumulative = 0.0;
                for (b, n) in ttft.iter().enumerate() {
                    cumulative += n;
                    let le = TTFT_LE.get(b).map_or("+Inf".to_owned(), |x| x.to_string());
                    line(
                        "vllm:time_to_first_token_seconds_bucket",
                        &format!("{v},le=\"{le}\""),
                        cumulative,
                    );
                }
                done += r.done[k];
                aborted += r.aborted[k];
                line(
                    "vllm:request_success_total",
                    &format!("{v},finished_reason=\"stop\""),
                    done,
                );
                line(
                    "vllm:request_success_total",
                    &format!("{v},finished_reason=\"abort\""),
                    aborted,
                );
            }
        }
    }
    let mut out = String::new();
    for (f, lines) in fam {
        let kind = match f {
            "vllm:time_to_first_token_seconds_bucket" => "histogram",
            "vllm:request_success_total" => "counter",
            _ => "gauge",
        };
        let family = f
            .strip_suffix("_bucket")
            .or_else(|| f.strip_suffix("_total"))
            .unwrap_or(f);
        let _ = writeln!(out, "# TYPE {family} {kind}");
        out.push_str(&lines);
    }
    out + "# EOF\n"
}

/// The fewest replicas whose simulated p95 time to first token meets the objective at the
/// service's busiest rate, clients patient: the truth the review is judged against.
fn true_need(s: &Service) -> usize {
    let peak = (0..DAYS * 86_400 / 60)
        .map(|m| (s.rate)((m * 60) as f64))
        .fold(0.0, f64::max);
    for n in 1..=64 {
        // every replica of n at the peak rate for long enough to read a p95
        let per = peak / n as f64;
        let seconds = (40_000.0 / per).max(3_600.0);
        let mut firsts = Vec::new();
        for seed in 0..3u64 {
            firsts.extend(replica_at(s, per, seconds, 900 + seed).firsts);
        }
        firsts.sort_by(f64::total_cmp);
        let p95 = firsts[(firsts.len() as f64 * 0.95) as usize];
        if p95 <= s.objective {
            return n;
        }
    }
    panic!("{} never meets its objective", s.name);
}

/// One replica at a constant `per` requests a second, clients patient.
fn replica_at(s: &Service, per: f64, seconds: f64, seed: u64) -> Replica {
    thread_local!(static RATE: std::cell::Cell<f64> = const { std::cell::Cell::new(0.0) });
    RATE.with(|r| r.set(per));
    let constant = Service {
        replicas: 1,
        rate: |_| RATE.with(std::cell::Cell::get),
        ..*s
    };
    replica(&constant, seconds, f64::INFINITY, seed)
}

const PLAN: &str = r#"version = 1
[plan]
name = "serving"
owner = "platform"
provider = "azure"
regions = ["eastus"]

[[workload]]
name = "chat"
team = "ai"
kind = "inference"
replicas = 4
gpus = 1
skus = ["Standard_NC24ads_A100_v4"]
server = { engine = "vllm" }
ttft_p95_seconds = 1.0

[[workload]]
name = "rag"
team = "ai"
kind = "inference"
replicas = 4
gpus = 1
skus = ["Standard_NC24ads_A100_v4"]
server = { engine = "vllm" }
ttft_p95_seconds = 2.0

[[workload]]
name = "burst"
team = "ai"
kind = "inference"
replicas = 4
gpus = 1
skus = ["Standard_NC24ads_A100_v4"]
server = { engine = "vllm" }
ttft_p95_seconds = 1.0
"#;

pub(crate) fn review(dir: &std::path::Path, om: &str, tag: &str) -> serde_json::Value {
    let file = dir.join(format!("{tag}.om"));
    std::fs::write(&file, om).expect("om");
    review_from(dir, &["--metrics", file.to_str().expect("utf-8")], tag)
}

/// The review of the simulated plan from a source (`--metrics FILE`, `--prometheus URL`),
/// writing next quarter's plan to `TAG.toml`.
pub(crate) fn review_from(dir: &std::path::Path, source: &[&str], tag: &str) -> serde_json::Value {
    review_with(dir, PLAN, source, Some(&dir.join(format!("{tag}.toml"))))
}

/// The JSON review of `plan` over the simulated week (2026-11-07 to -15, 600 s windows) from
/// a source, writing next quarter's plan to `next` where given.
pub(crate) fn review_with(
    dir: &std::path::Path,
    plan: &str,
    source: &[&str],
    next: Option<&std::path::Path>,
) -> serde_json::Value {
    review_at(dir, plan, source, next, "600s")
}

/// [`review_with`] in windows of `step` (`60s`).
pub(crate) fn review_at(
    dir: &std::path::Path,
    plan: &str,
    source: &[&str],
    next: Option<&std::path::Path>,
    step: &str,
) -> serde_json::Value {
    let path = dir.join("plan.toml");
    std::fs::write(&path, plan).expect("plan");
    let mut run = common::gpuplan(std::path::Path::new("/nonexistent/gpuplan-test-cache"));
    run.arg("review")
        .arg(&path)
        .args(source)
        .args([
            "--from",
            "2026-11-07T00:00:00Z",
            "--to",
            "2026-11-15T00:00:00Z",
        ])
        .args(["--step", step, "--format", "json"]);
    if let Some(next) = next {
        run.arg("--write-plan").arg(next);
    }
    common::ok_json(run.output().expect("run"))
}

fn proposed_max(v: &serde_json::Value, name: &str) -> i64 {
    v["next_quarter"]["workloads"]
        .as_array()
        .expect("workloads")
        .iter()
        .find(|w| w["workload"] == name)
        .and_then(|w| w["proposed"]["max"].as_i64())
        .unwrap_or_else(|| panic!("no proposal for {name}: {v:#}"))
}

/// Each service's next size is its true need plus at most half again (or one replica), the
/// same whether its clients give up after 60 s or wait 300 s; the idle one shrinks, the
/// saturated one grows, and the plan's comment names the arrivals that decided.
#[test]
fn services_are_sized_from_their_arrivals_whatever_their_clients_patience() {
    let dir = tempfile::tempdir().expect("tmp");
    let impatient = review(dir.path(), &fleet(60.0), "impatient");
    let patient = review(dir.path(), &fleet(300.0), "patient");
    for s in SERVICES {
        let need = true_need(&s) as i64;
        let (a, b) = (
            proposed_max(&impatient, s.name),
            proposed_max(&patient, s.name),
        );
        let most = need + (need / 2).max(1);
        assert!(
            (need..=most).contains(&a) && (need..=most).contains(&b),
            "{}: true need {need}, proposed {a} (60 s patience) and {b} (300 s)",
            s.name
        );
        assert_eq!(a, b, "{}: the size follows the clients' patience", s.name);
        eprintln!("{}: true need {need}, proposed {a}", s.name);
    }
    let next = std::fs::read_to_string(dir.path().join("patient.toml")).expect("next");
    assert!(
        next.contains("arrivals") && next.contains("Erlang C"),
        "{next}"
    );
    // One story: rag's GPU is 1% busy, but its size came from its arrivals on whole GPUs; no
    // slice is advised in the report nor written to the plan.
    let advice = impatient["recommendations"].as_array().expect("advice");
    assert!(
        !advice.iter().any(|a| a["kind"] == "right-size"),
        "{advice:#?}"
    );
    assert!(!next.contains("gpu_fraction"), "{next}");
    let chat = impatient["serving"]
        .as_array()
        .expect("serving")
        .iter()
        .find(|r| r["workload"] == "chat")
        .expect("chat");
    assert_eq!(chat["arrivals"]["slots_from"], "seen_full", "{chat:#}");
    assert_eq!(chat["arrivals"]["slots_per_replica"], 8.0, "{chat:#}");
    let service = chat["arrivals"]["service_seconds"]
        .as_f64()
        .expect("service");
    assert!((service - 8.0).abs() < 0.5, "{chat:#}");
    assert!(
        chat["arrivals"]["aborted_share"].as_f64().unwrap_or(0.0) > 0.01,
        "{chat:#}"
    );
}

/// A pod serving with two data-parallel engines (`--data-parallel-size 2`) exports each
/// engine's series under its own `engine` label: the pod runs both engines' requests, its
/// KV cache is the engines' mean, and its arrivals are both engines' finished requests.
#[test]
fn a_pods_data_parallel_engines_are_summed() {
    let dir = tempfile::tempdir().expect("tmp");
    let ksm = "job=\"kube-state-metrics\",instance=\"10.244.0.9:8080\"";
    let mut fam: std::collections::BTreeMap<&str, String> = std::collections::BTreeMap::new();
    for k in 0..(DAYS * 86_400 / STEP) {
        let t = NOV7 + k * STEP + 5;
        let mut line = |f: &'static str, labels: &str, x: f64| {
            let _ = writeln!(fam.entry(f).or_default(), "{f}{{{labels}}} {x} {t}");
        };
        let pod = "namespace=\"ai\",pod=\"chat-7d9f-0\"";
        line(
            "kube_pod_status_phase",
            &format!("{pod},uid=\"u-0\",phase=\"Running\",{ksm}"),
            1.0,
        );
        line("kube_pod_container_resource_requests", &format!("{pod},uid=\"u-0\",container=\"main\",node=\"n0\",resource=\"nvidia_com_gpu\",unit=\"integer\",{ksm}"), 2.0);
        for engine in ["0", "1"] {
            let v = format!("{pod},job=\"vllm\",instance=\"10.244.1.1:8000\",model_name=\"m\",engine=\"{engine}\"");
            line("vllm:num_requests_running", &v, 3.0);
            line("vllm:num_requests_waiting", &v, 0.0);
            line("vllm:kv_cache_usage_perc", &v, 0.3);
            // one request a second each, every request running 3 s
            line(
                "vllm:request_success_total",
                &format!("{v},finished_reason=\"stop\""),
                (k * STEP) as f64,
            );
        }
    }
    let mut om = String::new();
    for (f, lines) in fam {
        let (family, kind) = match f.strip_suffix("_total") {
            Some(c) => (c, "counter"),
            None => (f, "gauge"),
        };
        let _ = writeln!(om, "# TYPE {family} {kind}");
        om.push_str(&lines);
    }
    let v = review(dir.path(), &(om + "# EOF\n"), "dp");
    let chat = &v["serving"][0];
    assert_eq!(chat["workload"], "chat", "{v:#}");
    assert_eq!(chat["concurrency"]["p50"], 6.0, "{chat:#}");
    assert_eq!(chat["kv_cache"]["p50"], 0.3, "{chat:#}");
    assert_eq!(chat["arrivals"]["per_second"]["p50"], 2.0, "{chat:#}");
    // a counter's first sample is where counting starts: one window of 1,152 reads nothing
    let service = chat["arrivals"]["service_seconds"]
        .as_f64()
        .expect("service");
    assert!((service - 3.0).abs() < 0.01, "{chat:#}");
    // a request's share of one engine's cache is 0.1, so each engine holds 9 and the pod 18
    assert_eq!(chat["arrivals"]["slots_per_replica"], 18.0, "{chat:#}");
}

/// `server.max_num_seqs` reaches the serving values as the flag vLLM takes, and a batch of
/// none is refused where it is written.
#[test]
fn the_batch_limit_is_rendered_and_checked() {
    let plan = PLAN.replacen(
        "server = { engine = \"vllm\" }",
        "server = { engine = \"vllm\", max_num_seqs = 64 }",
        1,
    );
    let (_dir, out) = common::rendered(&plan, &[]);
    let values = std::fs::read_to_string(out.join("serving/values.yaml")).expect("values");
    let chat: serde_yaml::Value = serde_yaml::from_str(&values).expect("yaml");
    assert_eq!(chat["chat"]["vllm"]["maxNumSeqs"], 64, "{values}");
    assert!(chat["rag"]["vllm"].get("maxNumSeqs").is_none(), "{values}");
    let dir = tempfile::tempdir().expect("tmp");
    let bad = dir.path().join("plan.toml");
    std::fs::write(
        &bad,
        PLAN.replacen(
            "engine = \"vllm\" }",
            "engine = \"vllm\", max_num_seqs = 0 }",
            1,
        ),
    )
    .expect("plan");
    let out = common::gpuplan(std::path::Path::new("/nonexistent/gpuplan-test-cache"))
        .arg("check")
        .arg(&bad)
        .output()
        .expect("run");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("max_num_seqs") && err.contains("plan.toml:15:44"),
        "{err}"
    );
}
