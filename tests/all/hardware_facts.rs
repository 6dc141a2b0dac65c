//! Facts as the hardware prints them and the providers sell them (issue 60): EC2's shapes
//! and EFA counts, MIG memory at most what `nvidia-smi` prints, GPU memory as CUDA reports
//! it, dated spot prices, Linux meters, retirements, and the host architecture named where
//! it left a size out.

use gpuplan::core::Provider;

use crate::data::{catalog, figures, json, run};

/// Rows of a fixture CSV whose leading `#` lines say where it came from.
fn fixture_rows(name: &str) -> Vec<std::collections::HashMap<String, String>> {
    let path = format!("{}/tests/fixtures/data/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).expect("fixture");
    let body: String = text
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| format!("{l}\n"))
        .collect();
    let mut rdr = csv::Reader::from_reader(body.as_bytes());
    let headers = rdr.headers().expect("header").clone();
    rdr.records()
        .map(|r| {
            let r = r.expect("row");
            headers
                .iter()
                .zip(r.iter())
                .map(|(h, v)| (h.to_owned(), v.to_owned()))
                .collect()
        })
        .collect()
}

#[test]
fn aws_shapes_and_efa_are_what_ec2_describes() {
    // Every AWS type the reference lists: its GPU count, vCPUs, memory and EFA interfaces as
    // EC2 DescribeInstanceTypes gives them; an EFA type is a multi-node candidate.
    let c = catalog();
    let pc = &c.providers[&Provider::Aws];
    let mut checked = 0;
    for r in fixture_rows("karpenter-instance-types-2026-07-11.csv") {
        let Some(s) = pc.skus.get(&r["instance_type"]) else {
            continue;
        };
        checked += 1;
        let efa: u32 = r["efa"].parse().unwrap();
        assert_eq!(s.efa_interfaces, Some(efa), "{}: EFA interfaces", s.name);
        assert_eq!(
            s.inter_node == gpuplan::catalog::InterNode::Efa,
            efa > 0,
            "{}: inter_node {:?} with {efa} EFA interface(s)",
            s.name,
            s.inter_node
        );
        assert_eq!(
            s.vcpus,
            r["vcpus"].parse::<u32>().unwrap(),
            "{}: vCPUs",
            s.name
        );
        let mem_gib = r["memory_mib"].parse::<f64>().unwrap() / 1024.0;
        assert!(
            (s.memory_gib - mem_gib).abs() < 1e-6,
            "{}: {} GiB RAM, EC2 says {mem_gib}",
            s.name,
            s.memory_gib
        );
        assert_eq!(
            s.cpu_architecture(),
            r["arch"],
            "{}: host architecture (kubernetes.io/arch)",
            s.name
        );
        // EC2 gives FPGAs (f2) no GPU or accelerator count: the catalog's is its own.
        let Ok(gpus) = r["gpu_count"].parse::<u32>() else {
            continue;
        };
        if gpus == 0 {
            // EC2 counts a fractional GPU (g6f) as 0: the catalog states its share.
            assert!(s.gpu_partition < 1.0, "{}: EC2 lists no whole GPU", s.name);
        } else {
            assert_eq!(s.gpu_count, gpus, "{}: GPU count", s.name);
        }
    }
    assert!(
        checked >= 70,
        "only {checked} AWS types matched the reference"
    );
    // The sizes the issue named: g5/g6/g6e from 8xlarge up carry EFA.
    for n in [
        "g5.8xlarge",
        "g6.48xlarge",
        "g6e.12xlarge",
        "g4dn.metal",
        "p5.4xlarge",
    ] {
        assert_eq!(
            pc.skus[n].inter_node,
            gpuplan::catalog::InterNode::Efa,
            "{n}"
        );
    }
    assert_eq!(pc.skus["g6e.48xlarge"].efa_interfaces, Some(4));
    // EC2 gives f2.48xlarge one EFA interface (vpc.amazonaws.com/efa: 1).
    assert_eq!(pc.skus["f2.48xlarge"].efa_interfaces, Some(1));
}

#[test]
fn mig_memory_is_at_most_what_nvidia_smi_prints() {
    // `nvidia-smi mig -lgip` Memory (GiB) as published; where two outputs differ, the smaller.
    // (GPU, profile, GiB, where it was printed)
    let published = [
        ("H200-141GB", "1g.18gb", 16.00, "NVIDIA/mig-parted#120"),
        ("H200-141GB", "1g.35gb", 32.25, "NVIDIA/mig-parted#120"),
        ("H200-141GB", "2g.35gb", 32.25, "NVIDIA/mig-parted#120"),
        ("H200-141GB", "3g.71gb", 69.50, "NVIDIA/mig-parted#120"),
        ("H200-141GB", "4g.71gb", 69.50, "NVIDIA/mig-parted#120"),
        ("H200-141GB", "7g.141gb", 139.75, "NVIDIA/mig-parted#120"),
        ("H100-94GB", "1g.12gb", 10.75, "NVIDIA/gpu-operator#900"),
        ("H100-94GB", "1g.24gb", 21.62, "NVIDIA/gpu-operator#900"),
        ("H100-94GB", "2g.24gb", 21.62, "NVIDIA/gpu-operator#900"),
        ("H100-94GB", "3g.47gb", 46.38, "NVIDIA/mig-parted#101"),
        (
            "GB200",
            "1g.23gb",
            20.00,
            "NVIDIA/gpu-operator#1303 (1g.24gb)",
        ),
        ("GB200", "1g.47gb", 45.50, "NVIDIA/mig-parted#227"),
        ("GB200", "2g.47gb", 45.50, "NVIDIA/mig-parted#227"),
        ("B200", "1g.23gb", 20.50, "NVIDIA/gpu-operator#1351"),
        ("B200", "1g.45gb", 44.25, "NVIDIA/mig-parted#166"),
        ("B200", "2g.45gb", 44.25, "NVIDIA/mig-parted#166"),
        (
            "A100-80GB",
            "1g.10gb",
            9.50,
            "published EKS GPU-sharing guide",
        ),
        (
            "RTX-PRO-6000-BSE",
            "1g.24gb",
            23.12,
            "bigstack-oss/cubecos#312",
        ),
        (
            "RTX-PRO-6000-BSE",
            "2g.48gb",
            46.50,
            "bigstack-oss/cubecos#312",
        ),
    ];
    let c = catalog();
    for (gpu, profile, gib, source) in published {
        let m = c.gpu(gpu).unwrap().mig.as_ref().unwrap();
        let p = m.profiles.iter().find(|p| p.name == profile).unwrap();
        assert!(
            p.memory_gib <= gib + 1e-9,
            "{gpu} {profile}: credited {} GiB, {source} prints {gib}",
            p.memory_gib
        );
        assert!(
            m.driver_memory_source.contains(&format!("{gib:.2}")),
            "{gpu}: the source names {gib:.2}"
        );
    }
    // An estimated figure is never above a measured one of the same memory-slice share on the
    // same GPU: 3g and 4g share 4 slices, 1g.Ngb and 2g.Ngb two.
    for g in c.gpus.values() {
        let Some(m) = &g.mig else { continue };
        for a in &m.profiles {
            for b in &m.profiles {
                if a.memory_slices == b.memory_slices {
                    assert!(
                        (a.memory_gib - b.memory_gib).abs() < 1e-9,
                        "{}: {} and {} hold the same slices",
                        g.name,
                        a.name,
                        b.name
                    );
                }
            }
        }
    }
}

#[test]
fn no_undated_spot_price_is_used_and_azure_spot_is_dated_where_known() {
    let c = catalog();
    for (p, sku, region, kind, f) in figures(&c) {
        if kind == "spot" {
            assert!(
                f.as_of.is_some(),
                "{p} {sku} {region}: an undated spot figure ({}) is used as a price",
                f.source
            );
        }
    }
    let az = &c.providers[&Provider::Azure];
    let spot = |sku: &str, region: &str| {
        az.prices
            .get(&(sku.to_owned(), region.to_owned()))
            .and_then(|p| p.spot.clone())
    };
    // The dated Retail capture: ND96amsr_A100_v4 in westeurope, $10.65 against $40.96.
    let we = spot("Standard_ND96amsr_A100_v4", "westeurope").expect("dated EU spot");
    assert!((we.usd_per_hour - 10.65012).abs() < 1e-6);
    assert_eq!(
        we.as_of.map(|d| d.to_string()).as_deref(),
        Some("2026-08-20")
    );
    // No dated figure for eastus offline: unknown, not the undated 11% row.
    assert!(spot("Standard_ND96amsr_A100_v4", "eastus").is_none());
}

#[test]
fn every_azure_price_is_a_linux_meter() {
    // A Windows meter carries the licence; a Linux node pool never pays it. The capture's
    // `os` column is not always right, so the product name decides.
    let windows = |product: &str| {
        product.ends_with(" Windows") || product.ends_with(" Win") || product.contains(" Win ")
    };
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/providers/azure/retail-eu-2026-08-20.csv"
    ))
    .unwrap();
    for line in text.lines().skip(1) {
        let product = line
            .split("productName '")
            .nth(1)
            .and_then(|s| s.split('\'').next());
        let product = product.unwrap_or_else(|| panic!("no productName in {line}"));
        assert!(!windows(product), "a Windows meter in the catalog: {line}");
    }
    // Every embedded on-demand figure for a size and region the capture prices both ways is
    // the Linux one (the 2026-06-18 table carried the Windows $10.74 for NCC40ads_H100_v5).
    let key = |n: &str| n.replace('_', "").to_lowercase();
    let c = catalog();
    let az = &c.providers[&Provider::Azure];
    let mut linux = std::collections::HashMap::new();
    let mut win = std::collections::HashMap::new();
    for r in fixture_rows("retail-gpu-eu-2026-08-20.csv") {
        if r["priority"] != "on-demand" {
            continue;
        }
        let k = (key(&r["arm_sku_name"]), r["region"].clone());
        let v: f64 = r["usd_per_hour"].parse().unwrap();
        if windows(&r["product_name"]) || r["os"] == "windows" {
            win.insert(k, v);
        } else {
            linux.insert(k, v);
        }
    }
    let mut compared = 0;
    for ((sku, region), p) in &az.prices {
        let k = (key(sku), region.clone());
        let (Some(od), Some(l), Some(w)) = (&p.on_demand, linux.get(&k), win.get(&k)) else {
            continue;
        };
        if (l - w).abs() < 1e-9 {
            continue;
        }
        compared += 1;
        assert!(
            (od.usd_per_hour - l).abs() < 1e-6,
            "{sku} in {region}: on-demand {} from {}, the Linux meter is {l} (Windows {w})",
            od.usd_per_hour,
            od.source
        );
    }
    assert!(compared > 50, "only {compared} sizes compared");
    let ncc = &az.prices[&(
        "Standard_NCC40ads_H100_v5".to_owned(),
        "westeurope".to_owned(),
    )];
    assert!((ncc.on_demand.as_ref().unwrap().usd_per_hour - 8.9).abs() < 1e-9);
}

#[test]
fn gpu_memory_is_what_cuda_reports_with_a_source() {
    let c = catalog();
    for g in c.gpus.values() {
        assert!(!g.usable_memory_source.trim().is_empty(), "{}", g.name);
        assert!(g.memory_gib <= g.nominal_memory_gib + 1e-9, "{}", g.name);
        if let Some(m) = &g.mig {
            for p in &m.profiles {
                assert!(p.memory_gib <= g.memory_gib + 1e-9, "{} {}", g.name, p.name);
            }
        }
    }
    // nvidia-smi's FB totals (MiB): the figures the fit rules must use.
    for (name, mib) in [
        ("T4", 15_360.0),
        ("A10G", 23_028.0),
        ("L4", 23_034.0),
        ("L40S", 46_068.0),
        ("H100-80GB", 81_559.0),
        ("H200-141GB", 143_771.0),
    ] {
        let g = c.gpu(name).unwrap();
        assert!(
            (g.memory_gib * 1024.0 - mib).abs() < 1e-6,
            "{name}: {} GiB",
            g.memory_gib
        );
    }
    // A partitioned size's GPU is its share of the card.
    let aws = &c.providers[&Provider::Aws];
    let g6f = c.sku_gpu(&aws.skus["g6f.large"]).unwrap();
    assert!((g6f.memory_gib - 23_034.0 / 1024.0 / 8.0).abs() < 1e-9);
}

#[test]
fn retirements_and_corrections_hold() {
    let c = catalog();
    let az = &c.providers[&Provider::Azure];
    for n in [
        "Standard_NV4as_v4",
        "Standard_NV8as_v4",
        "Standard_NV16as_v4",
        "Standard_NV32as_v4",
    ] {
        assert!(az.skus[n].retired, "{n} retired 2026-09-30");
    }
    // AKS partitions A100, H100 and H200 only.
    for g in c.gpus.values() {
        let aks = g.mig.as_ref().is_some_and(|m| !m.aks_profiles.is_empty());
        let family = ["A100", "H100", "H200"]
            .iter()
            .any(|f| g.name.starts_with(f));
        assert_eq!(aks, family, "{}: AKS MIG profiles", g.name);
    }
    assert_eq!(az.skus["Standard_ND128isr_NDR_GB200_v6"].memory_gib, 900.0);
    assert_eq!(
        az.skus["Standard_NCC40ads_H100_v5"].quota_family,
        "StandardNCCads2023Family"
    );
    for (g, id) in [("GB200", "0x294110DE"), ("B300", "0x318210DE")] {
        let m = c.gpu(g).unwrap().mig.as_ref().unwrap();
        assert!(m.pci_device_ids.iter().any(|d| d == id), "{g}");
    }
}

#[test]
fn h200_mig_replicas_get_slices_that_hold_them() {
    // 16.5 GiB replicas: H200's 1g.18gb gives 16.00 GiB (NVIDIA/mig-parted#120), so they take
    // 1g.35gb (32.25), four to a GPU: 56 of them need 14 GPUs, two p5en nodes.
    let dir = tempfile::tempdir().expect("tempdir");
    let plan = dir.path().join("h200.toml");
    let text = r#"version = 1
[plan]
name = "h200-mig"
owner = "platform"
provider = "aws"
regions = ["us-east-1"]
[cluster]
mig_manager = "gpu-operator"
[[workload]]
name = "small"
team = "search"
kind = "inference"
replicas = 56
gpu_fraction = 0.14
gpu_memory_gib = 16.5
sharing = "mig"
gpu_models = ["H200"]
"#;
    let out = run(
        &["recommend", "--format", "json", plan.to_str().unwrap()],
        Some((&plan, text)),
        "2026-12-02",
    );
    let v = json(&out);
    let pool = &v["pools"][0];
    assert_eq!(pool["sku"], "p5en.48xlarge", "{pool:#}");
    assert_eq!(pool["nodes"]["max"], 2, "{pool:#}");
    assert!(!pool.to_string().contains("1g.18gb"), "{pool:#}");
    // 2 nodes x 730 h x $63.296/h (the 2026-07-20 us-east-1 table).
    let cost = v["total_monthly_cost_usd"].as_f64().unwrap();
    assert!((cost - 2.0 * 730.0 * 63.296).abs() < 0.01, "{cost}");
}

#[test]
fn an_arm_host_is_marked_and_named_where_it_was_left_out() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = run(
        &["catalog", "--sku", "g5g.xlarge", "--format", "json"],
        None,
        "2026-12-02",
    );
    assert_eq!(json(&out)["cpu_architecture"], "arm64");
    let out = run(
        &["catalog", "--sku", "g4dn.xlarge", "--format", "json"],
        None,
        "2026-12-02",
    );
    assert_eq!(json(&out)["cpu_architecture"], "amd64");
    // A 10 GiB replica: the cheaper T4G host is left out (not named), and the why-line says so.
    let plan = dir.path().join("t4.toml");
    let text = r#"version = 1
[plan]
name = "t4"
owner = "platform"
provider = "aws"
regions = ["us-east-1"]
[[workload]]
name = "small"
team = "search"
kind = "inference"
replicas = 2
gpus = 1
gpu_memory_gib = 10
"#;
    let out = run(
        &["recommend", "--format", "json", plan.to_str().unwrap()],
        Some((&plan, text)),
        "2026-12-02",
    );
    let v = json(&out);
    assert_eq!(v["pools"][0]["sku"], "g4dn.xlarge", "{v:#}");
    let why = v["pools"][0]["why"].to_string();
    assert!(
        why.contains("Arm hosts") && why.contains("`g5g.xlarge`"),
        "{why}"
    );
}
