//! Azure's SR-IOV vGPU sizes (issue 60): the NC RTX PRO 6000 BSE v6 sizes as Microsoft sells
//! them, MIG replicas on the host's slices (the guest cannot create MIG instances there), and
//! the node pools render with the GRID driver AKS installs.

use serde::Deserialize;

use crate::data::{json, run};

const FIXTURE: &str = "tests/fixtures/render/ncv6-host-mig.toml";
const TODAY: &str = "2026-12-07";

/// A plan of one MIG workload of four 20 GiB replicas at a quarter of the compute each (the
/// 1g.24gb slice of an RTX PRO 6000); a test appends its own lines to the workload or pools.
const SLICED: &str = r#"version = 1
[plan]
name = "sliced"
owner = "platform"
provider = "azure"
regions = ["eastus"]
[cluster]
mig_manager = "gpu-operator"
[[workload]]
name = "sliced"
team = "search"
kind = "inference"
replicas = 4
sharing = "mig"
gpu_fraction = 0.25
gpu_memory_gib = 20
"#;

/// `catalog --sku NAME --format json`.
fn sku_doc(name: &str) -> serde_json::Value {
    json(&run(
        &["catalog", "--sku", name, "--format", "json"],
        None,
        TODAY,
    ))
}

/// A SKU document's on-demand $/h in `region`.
fn on_demand(v: &serde_json::Value, region: &str) -> Option<f64> {
    let name = &v["name"];
    v["regions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["region"] == region)
        .unwrap_or_else(|| panic!("{name} is not priced in {region}"))["on_demand_usd_per_hour"]
        .as_f64()
}

fn fixture() -> String {
    format!("{}/{FIXTURE}", env!("CARGO_MANIFEST_DIR"))
}

/// The fixture rendered with `extra` arguments: the directory (kept alive) and its path.
fn rendered(extra: &[&str]) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let out_dir = dir.path().join("out");
    let fixture = fixture();
    let mut args = vec![
        "render",
        fixture.as_str(),
        "--out",
        out_dir.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let out = run(&args, None, TODAY);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (dir, out_dir)
}

#[test]
fn ncv6_sizes_are_listed_priced_and_shaped_as_microsoft_sells_them() {
    // GPU share and GPU memory: Microsoft's size page (nc-rtxpro6000-bse-v6-series), as
    // microsoft/physical-ai-toolchain's GPU configuration tables it (NC36ds 1/4 24 GB, NC72ds
    // 1/2 48 GB, NC144ds 1 96 GB, NC288ds 2 192 GB). vCPUs and RAM of NC24lds, NC144ds/lds and
    // NC288ds/lds: Azure Resource SKUs (microsoft/aspire AksNodeVmSizes). On-demand in eastus:
    // karpenter-provider-azure's generated price table of 2026-06-18.
    let sizes = [
        (
            "Standard_NC24lds_xl_RTXPRO6000BSE_v6",
            1,
            0.25,
            24,
            72.0,
            1.13,
        ),
        (
            "Standard_NC36ds_xl_RTXPRO6000BSE_v6",
            1,
            0.25,
            36,
            132.0,
            1.442,
        ),
        (
            "Standard_NC36lds_xl_RTXPRO6000BSE_v6",
            1,
            0.25,
            36,
            72.0,
            1.243,
        ),
        (
            "Standard_NC72ds_xl_RTXPRO6000BSE_v6",
            1,
            0.5,
            72,
            264.0,
            2.83,
        ),
        (
            "Standard_NC72lds_xl_RTXPRO6000BSE_v6",
            1,
            0.5,
            72,
            132.0,
            2.44,
        ),
        (
            "Standard_NC144ds_xl_RTXPRO6000BSE_v6",
            1,
            1.0,
            144,
            516.0,
            5.5,
        ),
        (
            "Standard_NC144lds_xl_RTXPRO6000BSE_v6",
            1,
            1.0,
            144,
            264.0,
            5.5,
        ),
        (
            "Standard_NC288ds_xl_RTXPRO6000BSE_v6",
            2,
            1.0,
            288,
            1032.0,
            11.0,
        ),
        (
            "Standard_NC288lds_xl_RTXPRO6000BSE_v6",
            2,
            1.0,
            288,
            516.0,
            11.0,
        ),
    ];
    for (name, gpus, share, vcpus, ram, eastus) in sizes {
        let v = sku_doc(name);
        assert_eq!(v["gpu_model"], "RTX-PRO-6000-BSE", "{name}");
        assert_eq!(v["gpu_count"], gpus, "{name}");
        assert_eq!(v["gpu_partition"].as_f64(), Some(share), "{name}");
        assert_eq!(v["vcpus"], vcpus, "{name}");
        assert_eq!(v["memory_gib"].as_f64(), Some(ram), "{name}");
        assert_eq!(v["vgpu"], true, "{name}");
        assert_eq!(v["host_mig"], true, "{name}");
        assert_eq!(v["cpu_architecture"], "amd64", "{name}");
        // A share of the card never offers more than that share of its usable memory.
        let mem = v["gpu_memory_gib"].as_f64().unwrap();
        assert!(mem <= 96.0 * share + 1e-9, "{name}: {mem}");
        assert_eq!(on_demand(&v, "eastus"), Some(eastus), "{name}");
    }
    // NC A10 v4: Resource SKUs' shapes, the share deduced from them (NC32ads's two whole
    // cards, NC16ads half of it, NC8ads half again); priced in westus3 by the same table.
    for (name, gpus, share, vcpus, ram, westus3) in [
        ("Standard_NC8ads_A10_v4", 1, 0.5, 8, 100.0, 1.1),
        ("Standard_NC16ads_A10_v4", 1, 1.0, 16, 200.0, 2.2),
        ("Standard_NC32ads_A10_v4", 2, 1.0, 32, 400.0, 4.4),
    ] {
        let v = sku_doc(name);
        assert_eq!(
            (
                v["gpu_count"] == gpus,
                v["gpu_partition"].as_f64(),
                v["vcpus"] == vcpus
            ),
            (true, Some(share), true),
            "{name}"
        );
        assert_eq!(v["memory_gib"].as_f64(), Some(ram), "{name}");
        assert_eq!(on_demand(&v, "westus3"), Some(westus3), "{name}");
    }
    // The A10 partitions are vGPU too (GRID driver), but A10 has no MIG; passthrough sizes
    // are neither.
    for (name, vgpu, host_mig) in [
        ("Standard_NV6ads_A10_v5", true, false),
        ("Standard_NC8ads_A10_v4", true, false),
        ("Standard_NC40ads_H100_v5", false, false),
    ] {
        let v = sku_doc(name);
        assert_eq!(
            (v["vgpu"] == vgpu, v["host_mig"] == host_mig),
            (true, true),
            "{name}"
        );
    }
}

#[test]
fn mig_replicas_take_the_hosts_slices_and_never_a_whole_ncv6_card() {
    let out = run(&["recommend", "--format", "json", &fixture()], None, TODAY);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = json(&out);
    let pool_of = |w: &str| {
        v["pools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["workloads"].as_array().unwrap().iter().any(|x| x == w))
            .unwrap_or_else(|| panic!("{w} placed"))
            .clone()
    };
    // A 20 GiB replica at a quarter of the compute takes the host's 1g.24gb slice: the cheapest
    // quarter size, NC24lds at $1.13/h; 4 nodes x 730 h.
    let small = pool_of("small-api");
    assert_eq!(
        small["sku"], "Standard_NC24lds_xl_RTXPRO6000BSE_v6",
        "{small:#}"
    );
    assert_eq!(small["nodes"]["max"], 4);
    assert_eq!(
        small["sharing"], "dedicated",
        "the pool is a plain GPU pool"
    );
    assert!((small["monthly_cost_usd"].as_f64().unwrap() - 4.0 * 730.0 * 1.13).abs() < 0.01);
    let why = small["why"].to_string();
    assert!(why.contains("MIG by the host"), "{why}");
    // 40 GiB at half the compute: the half slice (2g.48gb), NC72lds at $2.44/h.
    let mid = pool_of("mid-api");
    assert_eq!(
        mid["sku"], "Standard_NC72lds_xl_RTXPRO6000BSE_v6",
        "{mid:#}"
    );
    assert!((mid["monthly_cost_usd"].as_f64().unwrap() - 2.0 * 730.0 * 2.44).abs() < 0.01);
    // Neither MIG workload is put on a whole card, which the guest cannot partition.
    for p in [&small, &mid] {
        assert!(p["mig_layout"].is_null(), "{p:#}");
    }

    // A MIG workload allowed only whole NCv6 cards has nowhere to go, and says why.
    let dir = tempfile::tempdir().expect("tempdir");
    let plan = dir.path().join("whole.toml");
    let text = format!("{SLICED}skus = [\"Standard_NC144ds_xl_RTXPRO6000BSE_v6\"]\n");
    let out = run(
        &["recommend", "--format", "json", plan.to_str().unwrap()],
        Some((&plan, &text)),
        TODAY,
    );
    let v = json(&out);
    let unmet = v["unsatisfied"].to_string();
    assert!(
        unmet.contains("the host sets MIG") && unmet.contains("cannot create MIG instances"),
        "{unmet}"
    );
    assert!(v["pools"].as_array().unwrap().is_empty(), "{v:#}");
}

#[test]
fn vgpu_pools_render_with_the_grid_driver_and_the_single_strategy() {
    let (_dir, out_dir) = rendered(&[]);
    let tf = std::fs::read_to_string(out_dir.join("terraform/main.tf")).expect("main.tf");
    // Every pool here is a vGPU size: AKS installs the GRID driver on each (AgentBaker's
    // rtxPro6000GPUDriverSizes and ConvergedGPUDriverSizes), none is left driverless.
    assert_eq!(tf.matches("gpu_driver = \"Install\"").count(), 5, "{tf}");
    assert!(!tf.contains("gpu_driver = \"None\""), "{tf}");
    assert!(
        !tf.contains("gpu_instance"),
        "AKS cannot partition a vGPU: {tf}"
    );
    // The RTX PRO pools keep the MIG manager off (4 of them); the A10 pool has no MIG.
    let off = tf
        .lines()
        .filter(|l| l.contains("\"nvidia.com/gpu.deploy.mig-manager\"") && l.ends_with("\"false\""))
        .count();
    assert_eq!(off, 4, "{tf}");
    let helm =
        std::fs::read_to_string(out_dir.join("helm/gpu-operator-values.yaml")).expect("helm");
    let values: serde_yaml::Value = serde_yaml::from_str(&helm).expect("helm values parse");
    let data = &values["devicePlugin"]["config"]["data"];
    let flags = |name: &str| -> serde_yaml::Value {
        let text = data[name]
            .as_str()
            .unwrap_or_else(|| panic!("{name} in {helm}"));
        serde_yaml::from_str::<serde_yaml::Value>(text).expect("config")["flags"]["migStrategy"]
            .clone()
    };
    assert_eq!(flags("gpuplan-mig-single"), "single");
    // The time-sliced RTX PRO pool's own sharing config runs the single strategy too.
    let sliced = data
        .as_mapping()
        .unwrap()
        .keys()
        .filter_map(|k| k.as_str())
        .find(|k| k.contains("time-slicing"))
        .expect("a sharing config")
        .to_owned();
    assert_eq!(flags(&sliced), "single");
    assert!(
        tf.lines()
            .any(|l| l.contains("\"nvidia.com/device-plugin.config\"")
                && l.contains(&format!("\"{sliced}\""))),
        "{tf}"
    );
}

#[test]
fn a_declared_geometry_on_a_host_mig_size_is_refused_and_its_slice_pool_passes() {
    let dir = tempfile::tempdir().expect("tempdir");
    // The errors `check` finds with one pool of `nodes` x `sku` holding the workload.
    let check = |sku: &str, nodes: u32, sharing: &str| {
        let plan = dir.path().join("plan.toml");
        let pool = format!(
            "[[pool]]\nname = \"rtx\"\nsku = \"{sku}\"\nregion = \"eastus\"\nnodes = {nodes}\n{sharing}\nworkloads = [\"sliced\"]\n"
        );
        let out = run(
            &["check", "--format", "json", plan.to_str().unwrap()],
            Some((&plan, &format!("{SLICED}{pool}"))),
            TODAY,
        );
        let errors: Vec<String> = json(&out)["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["severity"] == "error")
            .map(|f| format!("{} {}", f["rule"], f["message"]))
            .collect();
        errors
    };
    let whole = "Standard_NC144ds_xl_RTXPRO6000BSE_v6";
    // The guest cannot partition a whole NC144ds: GP015, even under the GPU Operator.
    let errors = check(whole, 1, "sharing = \"mig\"\nmig_profile = \"1g.24gb\"");
    assert!(
        errors.len() == 1 && errors[0].contains("GP015") && errors[0].contains("host sets MIG"),
        "{errors:?}"
    );
    // Four quarter sizes are four of the host's 1g.24gb slices: no GP027 for the MIG workload
    // on their dedicated pool.
    let quarter = "Standard_NC36ds_xl_RTXPRO6000BSE_v6";
    let errors = check(quarter, 4, "sharing = \"dedicated\"");
    assert!(errors.is_empty(), "{errors:?}");
    // The same dedicated pool on a whole card is not a slice: GP027 still says so.
    let errors = check(whole, 4, "sharing = \"dedicated\"");
    assert!(errors.iter().any(|e| e.contains("GP027")), "{errors:?}");
}

#[test]
fn karpenter_lets_aks_install_the_grid_driver_on_vgpu_sizes() {
    let (_dir, out_dir) = rendered(&["--karpenter"]);
    let text = std::fs::read_to_string(out_dir.join("karpenter/karpenter.yaml")).expect("yaml");
    let classes: Vec<serde_yaml::Value> = serde_yaml::Deserializer::from_str(&text)
        .map(|d| serde_yaml::Value::deserialize(d).expect("doc"))
        .filter(|d| d["kind"] == "AKSNodeClass")
        .collect();
    // The notebooks' time-sliced NC144ds pool scales from zero: Karpenter adds its nodes, and
    // AKS installs their GRID driver (`Driver`, the CRD's enum), never `None`.
    assert!(!classes.is_empty(), "{text}");
    for c in &classes {
        assert_eq!(c["spec"]["gpu"]["mode"], "Driver", "{text}");
    }
}

#[test]
fn a_half_a10_v4_is_planned_where_a_workload_names_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let plan = dir.path().join("a10.toml");
    let text = SLICED
        .replace("\"eastus\"", "\"westus3\"")
        .replace("sharing = \"mig\"\ngpu_fraction = 0.25\ngpu_memory_gib = 20\n", "")
        + "gpu_fraction = 0.5\ngpu_memory_gib = 8\nskus = [\"Standard_NC8ads_A10_v4\", \"Standard_NC16ads_A10_v4\"]\n";
    let out = run(
        &["recommend", "--format", "json", plan.to_str().unwrap()],
        Some((&plan, &text)),
        TODAY,
    );
    let v = json(&out);
    let pool = &v["pools"][0];
    // Half an A10 holds the replica for half the whole card's price: 4 x 730 h x $1.10.
    assert_eq!(pool["sku"], "Standard_NC8ads_A10_v4", "{v:#}");
    assert!((v["total_monthly_cost_usd"].as_f64().unwrap() - 4.0 * 730.0 * 1.1).abs() < 0.01);
}
