//! Issue 57: demand over time. An autoscaled workload's `typical_replicas` says what it runs
//! on average; the expected cost follows it, the at-maximum cost stays at `max`, and the
//! reservation `recommend` makes is the one GP023 accepts.

use crate::common;

use std::path::Path;

/// One user-facing chat service on g6.xlarge (L4), autoscaled 2..=6, at 730 hours.
fn plan(typical: Option<&str>) -> String {
    let t = typical.map_or(String::new(), |t| format!("typical_replicas = {t}\n"));
    format!(
        "version = 1\n\n[plan]\nname = \"auto\"\nowner = \"platform\"\nprovider = \"aws\"\nregions = [\"us-east-1\"]\n\n\
         [[workload]]\nname = \"chat\"\nteam = \"web\"\nkind = \"inference\"\nuser_facing = true\nreplicas = {{ min = 2, max = 6 }}\n{t}gpus = 1\nskus = [\"g6.xlarge\"]\n"
    )
}

fn offline() -> &'static Path {
    Path::new("/nonexistent/gpuplan-test-cache")
}

fn recommend(path: &Path) -> serde_json::Value {
    common::ok_json(
        common::gpuplan(offline())
            .args(["recommend", "--format", "json"])
            .arg(path)
            .output()
            .expect("runs"),
    )
}

#[test]
fn expected_cost_follows_the_typical_replicas_and_the_maximum_stays_the_ceiling() {
    let dir = tempfile::tempdir().expect("tmp");
    let write = |name: &str, text: String| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).expect("plan");
        p
    };
    let peak = recommend(&write("peak.toml", plan(None)));
    let typical = recommend(&write("typical.toml", plan(Some("3"))));
    let at_max = peak["total_monthly_cost_at_max_usd"].as_f64().expect("max");
    // Without a profile every replica is taken to run all its hours.
    assert_eq!(peak["total_monthly_cost_usd"].as_f64(), Some(at_max));
    assert_eq!(
        typical["total_monthly_cost_at_max_usd"].as_f64(),
        Some(at_max)
    );
    // 2 reserved-1y g6.xlarge all month ($0.5239/h), and 4 replicas above them on-demand
    // ($0.8048/h) for a quarter of the hours each: (3 - 2) / (6 - 2) of 730.
    let pool = &typical["pools"][0];
    assert_eq!(pool["capacity"], "reserved-1y", "{pool}");
    assert_eq!(pool["reserved_nodes"], 2, "{pool}");
    let by_hand = 2.0 * 730.0 * 0.5239 + 4.0 * 730.0 * 0.25 * 0.8048;
    let expected = typical["total_monthly_cost_usd"]
        .as_f64()
        .expect("expected");
    assert!((expected - by_hand).abs() < 0.05, "{expected} vs {by_hand}");
    assert!(expected < at_max);
    // At its floor the profile is the floor: only the reserved nodes.
    let floor = recommend(&write("floor.toml", plan(Some("2"))));
    let at_floor = floor["total_monthly_cost_usd"].as_f64().expect("floor");
    assert!((at_floor - 2.0 * 730.0 * 0.5239).abs() < 0.05, "{at_floor}");

    // The written plan prices its declared pool as recommend priced it, and GP023 does not
    // call the reservation recommend made idle.
    let written = dir.path().join("written.toml");
    common::ok(
        common::gpuplan(offline())
            .args(["recommend", "--write-plan"])
            .arg(&written)
            .arg(dir.path().join("typical.toml"))
            .output()
            .expect("runs"),
    );
    let text = std::fs::read_to_string(&written).expect("written");
    assert!(text.contains("typical_replicas = 3"), "{text}");
    let d = common::ok_json(
        common::gpuplan(offline())
            .args(["diff", "--format", "json"])
            .arg(dir.path().join("typical.toml"))
            .arg(&written)
            .output()
            .expect("runs"),
    );
    let declared = d["head"]["declared_monthly_cost_usd"]
        .as_f64()
        .expect("declared");
    assert!((declared - expected).abs() < 0.02, "{d}");
    let v = common::ok_json(
        common::gpuplan(offline())
            .args(["check", "--format", "json"])
            .arg(&written)
            .output()
            .expect("runs"),
    );
    let gp023 = v["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .any(|f| f["rule"] == "GP023");
    assert!(!gp023, "{v}");
}

#[test]
fn a_typical_count_outside_the_range_is_an_error_at_its_place() {
    let dir = tempfile::tempdir().expect("tmp");
    let p = dir.path().join("bad.toml");
    std::fs::write(&p, plan(Some("7.5"))).expect("plan");
    let out = common::gpuplan(offline())
        .arg("check")
        .arg(&p)
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("`typical_replicas = 7.5` is outside the replicas' range 2..=6")
            && err.contains("bad.toml:15:20"),
        "{err}"
    );
}

/// Pods of one workload: namespace, pod name prefix, how many run at (weekday, hour), and how
/// busy each keeps its GPU.
type Shape<'a> = (&'a str, &'a str, fn(u32, u32) -> usize, f64);

/// A CSV of running pods over four weeks from Monday 2026-11-02 00:00 UTC, every 300 s:
/// `pods(weekday, hour)` of each (namespace, prefix) at that time.
fn weeks_csv(dir: &Path, shapes: &[Shape<'_>]) -> std::path::PathBuf {
    use std::fmt::Write as _;
    let start = 1_762_041_600; // 2026-11-02T00:00:00Z, a Monday
    let mut s = String::from("timestamp,namespace,pod,allocated_gpus,used_gpus\n");
    for k in 0..(28 * 288) {
        let t = start + k * 300;
        let (day, hour) = (
            ((k * 300) / 86_400) as u32,
            (((k * 300) % 86_400) / 3600) as u32,
        );
        for (ns, prefix, pods, busy) in shapes {
            for i in 0..pods(day % 7, hour) {
                let _ = writeln!(s, "{t},{ns},{prefix}-{i},1,{busy}");
            }
        }
    }
    let p = dir.join("history.csv");
    std::fs::write(&p, s).expect("csv");
    p
}

fn review_write_plan(dir: &Path, plan: &str, csv: &Path) -> (String, serde_json::Value) {
    let (p, next) = (dir.join("plan.toml"), dir.join("next.toml"));
    std::fs::write(&p, plan).expect("plan");
    let out = common::gpuplan(offline())
        .arg("review")
        .arg(&p)
        .arg("--csv")
        .arg(csv)
        .args(["--format", "json", "--write-plan"])
        .arg(&next)
        .output()
        .expect("runs");
    let json = common::ok_json(out);
    (std::fs::read_to_string(&next).expect("next"), json)
}

/// Issue 57: notebooks that ran 08:00-20:00 on weekdays were written with `hours_per_month =
/// 730`: the CSV lists running pods, and the nights with no row were read as hours without
/// data. They are hours nothing ran: the next plan carries the measured hours and is priced
/// for them.
#[test]
fn a_weekday_fleet_is_written_with_the_hours_it_ran_and_priced_for_them() {
    let dir = tempfile::tempdir().expect("tmp");
    let csv = weeks_csv(
        dir.path(),
        &[(
            "research",
            "notebook",
            |d, h| if d < 5 && (8..20).contains(&h) { 6 } else { 0 },
            0.5,
        )],
    );
    let plan = "version = 1\n\n[plan]\nname = \"lab\"\nowner = \"platform\"\nprovider = \"azure\"\nregions = [\"eastus\"]\n\n\
                [[workload]]\nname = \"notebook\"\nteam = \"research\"\nkind = \"notebook\"\nreplicas = 6\ngpus = 1\nskus = [\"Standard_NC4as_T4_v3\"]\n";
    let (next, json) = review_write_plan(dir.path(), plan, &csv);
    assert_eq!(json["coverage"]["share"], 1.0, "{:#}", json["coverage"]);
    // 60 of every 168 hours: 260.7 h of a 730-h month (the span from the first Monday 08:00
    // to the last Friday 20:00 holds a little more than its share of weekdays).
    let hours: f64 = next
        .lines()
        .find_map(|l| l.strip_prefix("hours_per_month = "))
        .and_then(|l| l.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("hours written:\n{next}"));
    assert!((240.0..=300.0).contains(&hours), "{hours}\n{next}");
    // Priced for them: 6 x 260.7 h x $0.526 = $822.8 measured.
    std::fs::write(dir.path().join("next.toml"), &next).expect("next");
    let priced = recommend(&dir.path().join("next.toml"))["total_monthly_cost_usd"]
        .as_f64()
        .expect("cost");
    let measured = 6.0 * 730.0 * 60.0 / 168.0 * 0.526;
    assert!(
        (priced - measured).abs() / measured < 0.25,
        "{priced} vs {measured}"
    );
}

/// Issue 57: a service held 2 to 4 replicas (3 on average, p95 4) was written at its
/// projected maximum for every hour. The next plan carries the mean it held as
/// `typical_replicas`, and is priced near what ran.
#[test]
fn the_review_writes_the_replicas_a_service_typically_ran() {
    let dir = tempfile::tempdir().expect("tmp");
    let csv = weeks_csv(
        dir.path(),
        &[(
            "web",
            "chat",
            |_, h| match h {
                0..=7 => 2,
                8..=11 | 18..=23 => 3,
                _ => 4,
            },
            0.6,
        )],
    );
    let plan = "version = 1\n\n[plan]\nname = \"web\"\nowner = \"platform\"\nprovider = \"aws\"\nregions = [\"us-east-1\"]\n\n\
                [[workload]]\nname = \"chat\"\nteam = \"web\"\nkind = \"inference\"\nuser_facing = true\nreplicas = { min = 2, max = 8 }\nutilization = 0.6\ngpus = 1\nskus = [\"g6.xlarge\"]\n";
    let (next, json) = review_write_plan(dir.path(), plan, &csv);
    let w = &json["next_quarter"]["workloads"][0];
    // 8 h at 2, 10 h at 3, 6 h at 4: 70 / 24 = 2.92 replicas on average.
    let typical = w["proposed"]["typical_replicas"]
        .as_f64()
        .unwrap_or_else(|| panic!("{w:#}"));
    assert!((typical - 70.0 / 24.0).abs() < 0.05, "{w:#}");
    assert!(
        next.contains(&format!("typical_replicas = {typical}")),
        "{next}"
    );
    std::fs::write(dir.path().join("next.toml"), &next).expect("next");
    let r = recommend(&dir.path().join("next.toml"));
    let (expected, at_max) = (
        r["total_monthly_cost_usd"].as_f64().expect("expected"),
        r["total_monthly_cost_at_max_usd"].as_f64().expect("max"),
    );
    // What ran: 2.92 replicas all month on on-demand g6.xlarge at $0.8048/h; the
    // recommendation may reserve the floor, which costs less.
    let ran = 70.0 / 24.0 * 730.0 * 0.8048;
    assert!(
        expected <= ran * 1.25 && expected >= ran * 0.6,
        "{expected} vs {ran}"
    );
    assert!(expected < at_max, "{expected} < {at_max}");
}
