//! The embedded provider data, checked as data: every SKU priced where it is offered (or
//! marked otherwise), every figure positive, dated no later than today and sourced, spot and
//! reserved below on-demand; and spot checks against the public figures the catalog was
//! rebuilt from (providers/README.md "Newer price data").

use crate::common;

use gpuplan::catalog::{Catalog, Figure, Price};
use gpuplan::core::{Date, Provider};

pub(crate) fn catalog() -> Catalog {
    Catalog::embedded(&Provider::ALL).expect("the embedded catalog loads")
}

pub(crate) fn figures(c: &Catalog) -> Vec<(Provider, String, String, &'static str, Price)> {
    let mut out = Vec::new();
    for (p, pc) in &c.providers {
        for ((sku, region), rp) in &pc.prices {
            for (kind, f) in [
                ("on-demand", &rp.on_demand),
                ("spot", &rp.spot),
                ("reserved-1y", &rp.reserved_1y),
                ("reserved-3y", &rp.reserved_3y),
                ("capacity-block", &rp.capacity_block),
            ] {
                if let Some(f) = f {
                    out.push((*p, sku.clone(), region.clone(), kind, f.clone()));
                }
            }
        }
    }
    out
}

#[test]
fn every_sku_is_priced_where_offered_or_says_why_not() {
    let c = catalog();
    for (p, pc) in &c.providers {
        for s in pc.skus.values() {
            let regions: Vec<&String> = pc
                .prices
                .iter()
                .filter(|((n, _), _)| n == &s.name)
                .map(|((_, r), _)| r)
                .collect();
            if s.unpriced.is_some() {
                assert!(
                    regions.is_empty(),
                    "{p} {} is marked unpriced but has prices in {regions:?}",
                    s.name
                );
                continue;
            }
            assert!(
                !regions.is_empty() || s.retired,
                "{p} {} has no price in any region and is neither retired nor marked unpriced",
                s.name
            );
            // Offered in a region = an on-demand price there: a spot or reserved figure
            // without the list price it discounts is a broken row.
            for r in regions {
                let rp = pc.price(&s.name, r).expect("listed");
                assert!(
                    rp.on_demand.is_some() || rp.capacity_block.is_some(),
                    "{p} {} in {r} has figures but no on-demand price",
                    s.name
                );
            }
        }
    }
}

#[test]
fn every_figure_is_positive_sourced_and_not_from_the_future() {
    let c = catalog();
    let today = Date::today();
    let all = figures(&c);
    assert!(all.len() > 3_000, "only {} figures", all.len());
    for (p, sku, region, kind, f) in &all {
        assert!(
            f.usd_per_hour.is_finite() && f.usd_per_hour > 0.0,
            "{p} {sku} {region} {kind}: {}",
            f.usd_per_hour
        );
        assert!(
            !f.source.trim().is_empty(),
            "{p} {sku} {region} {kind} has no source"
        );
        if let Some(d) = f.as_of {
            assert!(
                d <= today,
                "{p} {sku} {region} {kind} is dated {d}, after {today}"
            );
        }
    }
    for ((sku, region), b) in c.providers.values().flat_map(|pc| &pc.spot_bands) {
        assert!(
            !b.source.trim().is_empty(),
            "{sku} {region} band has no source"
        );
        if let Some(d) = b.as_of {
            assert!(d <= today, "{sku} {region} band dated {d}");
        }
    }
    for s in &c.sources {
        assert!(s.as_of <= today, "{} is dated {}", s.file, s.as_of);
        assert!(!s.source.trim().is_empty(), "{} has no source", s.file);
    }
    // Every embedded data file is listed with its date and source.
    for (path, _) in gpuplan::catalog::embedded_files() {
        if path != "sources.toml" {
            assert!(
                c.sources.iter().any(|s| s.file == path) || c.providers.is_empty(),
                "{path} is embedded but not in sources.toml"
            );
        }
    }
}

#[test]
fn spot_and_reserved_are_below_on_demand() {
    let c = catalog();
    for (p, pc) in &c.providers {
        for ((sku, region), rp) in &pc.prices {
            let Some(od) = rp.on_demand.as_ref().map(|x| x.usd_per_hour) else {
                continue;
            };
            for (kind, f) in [
                ("spot", &rp.spot),
                ("reserved-1y", &rp.reserved_1y),
                ("reserved-3y", &rp.reserved_3y),
            ] {
                if let Some(f) = f {
                    assert!(
                        f.usd_per_hour < od,
                        "{p} {sku} in {region}: {kind} {} is not below on-demand {od} ({})",
                        f.usd_per_hour,
                        f.source
                    );
                }
            }
            if let (Some(r1), Some(r3)) = (&rp.reserved_1y, &rp.reserved_3y) {
                assert!(
                    r3.usd_per_hour <= r1.usd_per_hour,
                    "{p} {sku} in {region}: 3-year {} above 1-year {}",
                    r3.usd_per_hour,
                    r1.usd_per_hour
                );
            }
        }
    }
}

#[test]
fn newest_dated_figure_wins_and_says_where_it_came_from() {
    let c = catalog();
    let aws = c.provider(Provider::Aws).expect("aws");
    let azure = c.provider(Provider::Azure).expect("azure");
    let od = |pc: &gpuplan::catalog::ProviderCatalog, sku: &str, region: &str| {
        pc.price(sku, region)
            .and_then(|p| p.on_demand.clone())
            .unwrap_or_else(|| panic!("{sku} {region} has an on-demand price"))
    };
    let d = |s: &str| Date::parse(s);
    // AWS us-east-1: the 2026-07-20 table (after the June 2025 cut), not the SkyPilot $98.32.
    for (sku, usd) in [
        ("p5.48xlarge", 55.04),
        ("p4d.24xlarge", 21.957642),
        ("p4de.24xlarge", 27.44705),
        ("p5en.48xlarge", 63.296),
        ("p5.4xlarge", 6.88),
        ("p6-b200.48xlarge", 113.9328),
        ("p6-b300.48xlarge", 142.416),
    ] {
        let p = od(aws, sku, "us-east-1");
        assert_eq!(p.usd_per_hour, usd, "{sku}");
        assert_eq!(p.as_of, d("2026-07-20"), "{sku}: {}", p.source);
        assert!(p.source.contains("ondemand-us-east-1-2026-07-20.csv"));
    }
    // Other regions: the 2025-11-30 snapshot.
    let p = od(aws, "p5.48xlarge", "eu-north-1");
    assert_eq!((p.usd_per_hour, p.as_of), (58.8928, d("2025-11-30")));
    let p = od(aws, "p4d.24xlarge", "us-west-2");
    assert_eq!(p.as_of, d("2025-11-30"));
    // Types only the SkyPilot rows list keep them, undated.
    let p = od(aws, "dl1.24xlarge", "us-west-2");
    assert_eq!((p.usd_per_hour, p.as_of), (13.10904, None), "{}", p.source);
    // A spot-only row is no offer (p5e has no on-demand price in any source).
    assert!(!aws.prices.keys().any(|(s, _)| s == "p5e.48xlarge"));
    // Local Zones are not regions.
    assert!(aws.price("p5.48xlarge", "us-east-1-atl-1").is_none());

    // Spot price and band from the 2025-11-30 snapshot, which moved the bands.
    let band = |sku: &str, region: &str| aws.band(sku, region).expect("band").label.clone();
    assert_eq!(band("p5.48xlarge", "us-east-1"), "5-10%");
    assert_eq!(band("p5en.48xlarge", "us-east-1"), "10-15%");
    assert_eq!(band("p4d.24xlarge", "us-east-1"), ">20%");
    assert_eq!(band("g6e.xlarge", "us-west-2"), ">20%");
    let b = aws.band("p5.48xlarge", "us-east-1").expect("band");
    assert_eq!(b.as_of, d("2025-11-30"));
    let s = aws
        .price("p5.48xlarge", "us-east-1")
        .and_then(|p| p.spot.clone())
        .expect("spot");
    // Spot as bought: the zones' average ($28.11), never the cheapest zone ($13.22), which
    // stays a note.
    assert_eq!((s.usd_per_hour, s.as_of), (28.106467, d("2025-11-30")));
    let cheapest = aws
        .price("p5.48xlarge", "us-east-1")
        .and_then(|p| p.spot_cheapest_zone);
    assert_eq!(cheapest, Some(13.2182));
    // The older advisor file stays the fallback for a type the snapshot lacks.
    let dl1 = aws.band("dl1.24xlarge", "us-east-1").expect("dl1 band");
    assert_eq!(dl1.as_of, d("2025-06-28"));

    // Reserved, offline: the term is in the source. p5.48xlarge has no 1-year standard RI, so
    // the 1-year figure is the convertible one.
    let rp = aws.price("p5.48xlarge", "us-east-1").expect("p5");
    let r1 = rp.reserved_1y.as_ref().expect("1y");
    assert_eq!(r1.usd_per_hour, 43.344);
    assert!(
        r1.source.contains("1-year convertible, no upfront"),
        "{}",
        r1.source
    );
    let r3 = rp.reserved_3y.as_ref().expect("3y");
    assert_eq!(r3.usd_per_hour, 23.77728);
    assert!(
        r3.source.contains("3-year standard, no upfront"),
        "{}",
        r3.source
    );
    let g = aws.price("g6e.12xlarge", "us-east-1").expect("g6e");
    assert_eq!(
        g.reserved_1y.as_ref().map(|p| p.usd_per_hour),
        Some(6.61036)
    );
    // p5en sells no RI at all.
    let en = aws.price("p5en.48xlarge", "us-east-1").expect("p5en");
    assert!(en.reserved_1y.is_none() && en.reserved_3y.is_none());

    // Azure: the 2026-06-18 table everywhere, the 2026-09-16 capture where it is newer.
    let h200 = od(azure, "Standard_ND96isr_H200_v5", "eastus2");
    assert_eq!((h200.usd_per_hour, h200.as_of), (84.80, d("2026-06-18")));
    assert_eq!(
        od(azure, "Standard_ND96isr_H200_v5", "westus3").usd_per_hour,
        84.80
    );
    assert!(
        !azure.offered("Standard_ND96isr_H200_v5", "eastus"),
        "H200 v5 is not sold in eastus"
    );
    let h100 = od(azure, "Standard_ND96isr_H100_v5", "eastus");
    assert_eq!((h100.usd_per_hour, h100.as_of), (98.32, d("2026-09-16")));
    for sku in [
        "Standard_ND96isr_MI300X_v5",
        "Standard_ND128isr_NDR_GB200_v6",
        "Standard_NCC40ads_H100_v5",
    ] {
        assert!(
            azure.prices.keys().any(|(s, _)| s == sku),
            "{sku} has prices"
        );
    }
    // The undated SkyPilot spot rows are no price: spot in eastus is unknown offline, and the
    // dated EU Retail capture prices westeurope.
    assert!(azure
        .price("Standard_NC24ads_A100_v4", "eastus")
        .is_some_and(|p| p.spot.is_none()));
    let we = azure
        .price("Standard_NC24ads_A100_v4", "westeurope")
        .and_then(|p| p.spot.clone())
        .expect("dated spot in westeurope");
    assert_eq!(we.as_of, d("2026-08-20"));
    assert!(azure
        .prices
        .values()
        .all(|p| p.reserved_1y.is_none() && p.reserved_3y.is_none()));
    // Promo rows and retired sizes.
    assert!(!azure.skus.keys().any(|s| s.ends_with("_Promo")));
    for s in [
        "Standard_NC6",
        "Standard_NC12",
        "Standard_NC24",
        "Standard_NC24r",
        "Standard_NV6",
        "Standard_NV12",
        "Standard_NV24",
    ] {
        assert!(azure.skus[s].retired, "{s} is retired");
    }
}

#[test]
fn new_gpu_models_are_described() {
    let c = catalog();
    for (name, gib, mig) in [
        ("H200-141GB", 141.0, Some("7g.141gb")),
        ("B200", 180.0, Some("7g.180gb")),
        ("B300", 269.0, Some("7g.269gb")),
        ("GB200", 186.0, Some("7g.186gb")),
        ("MI300X", 192.0, None),
    ] {
        let g = c.gpu(name).unwrap_or_else(|| panic!("{name}"));
        assert_eq!(g.nominal_memory_gib, gib, "{name}");
        match (mig, &g.mig) {
            (Some(p), Some(spec)) => {
                assert!(spec.profile(p).is_some(), "{name} has {p}");
                assert!(spec.placement_source.starts_with("assumed"), "{name}");
            }
            (None, None) => {}
            _ => panic!("{name}: MIG support is wrong"),
        }
    }
    let aws = c.provider(Provider::Aws).expect("aws");
    let gb = &aws.skus["p6e-gb200.36xlarge"];
    assert!(gb.unpriced.is_some() && gb.arm64);
    assert!(!aws.prices.keys().any(|(s, _)| s == "p6e-gb200.36xlarge"));
}

#[test]
fn stale_limits_differ_by_kind_of_figure() {
    let c = catalog();
    let a = &c.assumptions;
    assert_eq!(a.stale_limit(Figure::Spot), 30);
    assert_eq!(a.stale_limit(Figure::SpotBand), 90);
    assert_eq!(a.stale_limit(Figure::OnDemand), 180);
    assert_eq!(a.stale_limit(Figure::Reserved), 180);
    assert_eq!(a.stale_limit(Figure::CapacityBlock), 7);
}

pub(crate) fn run(
    args: &[&str],
    plan: Option<(&std::path::Path, &str)>,
    today: &str,
) -> std::process::Output {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut c = common::gpuplan(&dir.path().join("cache"));
    c.env("GPUPLAN_TODAY", today);
    if let Some((path, text)) = plan {
        std::fs::write(path, text).expect("plan");
    }
    c.args(args).output().expect("runs")
}

pub(crate) fn json(out: &std::process::Output) -> serde_json::Value {
    crate::common::contract(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

const STEADY: &str = r#"version = 1
[plan]
name = "steady"
owner = "platform"
provider = "aws"
regions = ["us-east-1"]
reservation_term = "3y"

[[workload]]
name = "chat"
team = "apps"
kind = "inference"
replicas = 4
gpus = 8
skus = ["p5.48xlarge"]
"#;

#[test]
fn a_steady_aws_floor_is_reserved_offline_with_its_break_even() {
    let dir = tempfile::tempdir().expect("tempdir");
    let plan = dir.path().join("steady.toml");
    let out = run(
        &[
            "recommend",
            "--format",
            "json",
            plan.to_str().expect("utf-8"),
        ],
        Some((&plan, STEADY)),
        "2026-12-03",
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = json(&out);
    let pool = &v["pools"][0];
    // 4 nodes all month: 3-year standard no-upfront RI at $23.77728 against $55.04 on-demand,
    // break-even at 43% utilisation.
    assert_eq!(pool["capacity"], "reserved-3y", "{pool:#}");
    let why = pool["why"].as_str().expect("why");
    assert!(
        why.to_string().contains("$23.7773/h against $55.04/h"),
        "{why}"
    );
    assert!(
        why.to_string().contains("breaks even at 43% utilisation"),
        "{why}"
    );
    let monthly = pool["monthly_cost_usd"].as_f64().expect("cost");
    assert!((monthly - 4.0 * 23.77728 * 730.0).abs() < 0.01, "{monthly}");
    // Without a recorded term the plan commits for one year at most, and `why` says what
    // three would save.
    let one_year = STEADY.replace("reservation_term = \"3y\"\n", "");
    let out = run(
        &[
            "recommend",
            "--format",
            "json",
            plan.to_str().expect("utf-8"),
        ],
        Some((&plan, &one_year)),
        "2026-12-03",
    );
    let v1 = json(&out);
    let p1 = &v1["pools"][0];
    assert_eq!(p1["capacity"], "reserved-1y", "{p1:#}");
    let why1 = p1["why"].as_str().expect("why");
    assert!(
        why1.contains("a 3-year term at $23.7773/h would save")
            && why1.contains("`reservation_term = \"1y\"` caps the commitment"),
        "{why1}"
    );
    // The on-demand alternative is the saving's reference, never the other way round.
    let od = pool["considered"]
        .as_array()
        .expect("considered")
        .iter()
        .find(|a| a["capacity"] == "on-demand")
        .expect("on-demand considered");
    assert!(od["delta_usd"].as_f64().is_some_and(|d| d > 0.0), "{od:#}");

    // A floor that is not steady (scale to zero allowed) gets no reservation.
    let bursty = STEADY.replace("replicas = 4", "replicas = { min = 0, max = 4 }");
    let out = run(
        &[
            "recommend",
            "--format",
            "json",
            plan.to_str().expect("utf-8"),
        ],
        Some((&plan, &bursty)),
        "2026-12-03",
    );
    assert_eq!(json(&out)["pools"][0]["capacity"], "on-demand");
}

#[test]
fn gp022_fires_when_a_figure_passes_its_limit_and_not_before() {
    let dir = tempfile::tempdir().expect("tempdir");
    let plan = dir.path().join("p.toml");
    let text = STEADY.to_owned()
        + "\n[[pool]]\nname = \"serve\"\nsku = \"p5.48xlarge\"\nregion = \"us-east-1\"\nnodes = 4\nworkloads = [\"chat\"]\n";
    let gp022 = |today: &str| -> Vec<String> {
        let out = run(
            &["check", "--format", "json", plan.to_str().expect("utf-8")],
            Some((&plan, &text)),
            today,
        );
        json(&out)["findings"]
            .as_array()
            .expect("findings")
            .iter()
            .filter(|f| f["rule"] == "GP022")
            .map(|f| f["message"].as_str().unwrap_or("").to_owned())
            .collect()
    };
    // The us-east-1 list price is dated 2026-07-20: 180 days later it is still within its
    // limit, 181 days later it is not.
    assert!(gp022("2027-01-16").is_empty(), "{:?}", gp022("2027-01-16"));
    let late = gp022("2027-01-17");
    assert_eq!(late.len(), 1, "{late:?}");
    assert!(
        late[0].contains("on-demand price of p5.48xlarge in us-east-1 is from 2026-07-20, 181 days old (the limit for on-demand prices is 180 days)"),
        "{late:?}"
    );
    // A spot pool relies on a spot price (30 days) and a band (90 days) from 2025-11-30.
    let spot = text.replace("nodes = 4\n", "nodes = 4\ncapacity = \"spot\"\n");
    std::fs::write(&plan, &spot).expect("plan");
    let out = run(
        &["check", "--format", "json", plan.to_str().expect("utf-8")],
        None,
        "2026-12-03",
    );
    let msgs: Vec<String> = json(&out)["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter(|f| f["rule"] == "GP022")
        .map(|f| f["message"].as_str().unwrap_or("").to_owned())
        .collect();
    assert!(
        msgs.iter()
            .any(|m| m.contains("spot price of p5.48xlarge in us-east-1 is from 2025-11-30")),
        "{msgs:?}"
    );
    assert!(
        msgs.iter().any(
            |m| m.contains("spot eviction band of p5.48xlarge in us-east-1 is from 2025-11-30")
        ),
        "{msgs:?}"
    );
}

#[test]
fn catalog_sku_dates_each_figure_by_its_source() {
    let out = run(
        &["catalog", "--sku", "p5.48xlarge", "--format", "json"],
        None,
        "2026-12-03",
    );
    let v = json(&out);
    let regions = v["regions"].as_array().expect("regions");
    let east = regions
        .iter()
        .find(|r| r["region"] == "us-east-1")
        .expect("us-east-1");
    assert_eq!(east["figures"]["on_demand"]["as_of"], "2026-07-20");
    assert_eq!(east["figures"]["on_demand"]["usd_per_hour"], 55.04);
    assert_eq!(east["figures"]["spot"]["as_of"], "2025-11-30");
    assert_eq!(east["figures"]["reserved_3y"]["usd_per_hour"], 23.77728);
    assert_eq!(east["spot_band"], "5-10%");
    assert_eq!(east["spot_band_as_of"], "2025-11-30");

    let out = run(&["catalog", "--sku", "p5.48xlarge"], None, "2026-12-03");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("on-demand, as of 2026-07-20"), "{text}");
    assert!(
        text.contains("aws/prices.csv (prices, undated (taken 2026-12-02))"),
        "{text}"
    );
    let out = run(
        &["catalog", "--sku", "Standard_NC24ads_A100_v4"],
        None,
        "2026-12-03",
    );
    let text = String::from_utf8_lossy(&out.stdout);
    // No undated spot figure is shown as a price: eastus spot is unknown offline.
    assert!(!text.contains("spot, undated"), "{text}");
    assert!(
        text.lines()
            .any(|l| l.trim_start().starts_with("eastus ") && l.contains("unknown")),
        "{text}"
    );
    assert!(
        text.contains("Azure reservation prices are unknown offline"),
        "{text}"
    );
}

#[test]
fn h200_on_azure_is_satisfiable_where_sold_and_retired_sizes_never_recommended() {
    let dir = tempfile::tempdir().expect("tempdir");
    let plan = dir.path().join("h200.toml");
    let text = r#"version = 1
[plan]
name = "h200"
owner = "platform"
provider = "azure"
regions = ["eastus", "eastus2"]

[[workload]]
name = "big"
team = "apps"
kind = "inference"
replicas = { min = 0, max = 2 }
gpus = 8
gpu_models = ["H200-141GB"]
"#;
    let out = run(
        &[
            "recommend",
            "--format",
            "json",
            plan.to_str().expect("utf-8"),
        ],
        Some((&plan, text)),
        "2026-12-03",
    );
    let v = json(&out);
    assert_eq!(v["pools"][0]["sku"], "Standard_ND96isr_H200_v5", "{v:#}");
    assert_eq!(v["pools"][0]["region"], "eastus2", "not sold in eastus");

    let retired = text.replace(
        "gpus = 8\ngpu_models = [\"H200-141GB\"]",
        "gpus = 1\nskus = [\"Standard_NC6\"]",
    );
    let out = run(
        &[
            "recommend",
            "--format",
            "json",
            plan.to_str().expect("utf-8"),
        ],
        Some((&plan, &retired)),
        "2026-12-03",
    );
    let v = json(&out);
    assert!(v["pools"].as_array().is_some_and(Vec::is_empty), "{v:#}");
    let why = v["unsatisfied"][0].to_string();
    assert!(why.to_string().contains("retired"), "{why}");
}
