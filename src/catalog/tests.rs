use super::*;

/// Product names as GPU feature discovery (`nvidia.com/gpu.product`) and dcgm-exporter
/// (`modelName`, from NVML) print them.
#[test]
fn product_names_as_clusters_report_them_are_catalog_models() {
    let c = Catalog::embedded(&[]).expect("catalog");
    let named = |p: &str| c.gpu_named(p).map(|g| g.name.as_str());
    assert_eq!(named("Tesla-T4"), Some("T4"));
    assert_eq!(named("Tesla T4"), Some("T4"));
    assert_eq!(named("NVIDIA A100-SXM4-80GB"), Some("A100-80GB"));
    assert_eq!(named("NVIDIA-A100-SXM4-40GB"), Some("A100-40GB"));
    assert_eq!(named("NVIDIA A100 80GB PCIe"), Some("A100-80GB"));
    assert_eq!(named("NVIDIA H100 80GB HBM3"), Some("H100-80GB"));
    assert_eq!(named("NVIDIA H100 NVL"), Some("H100-94GB"));
    assert_eq!(named("NVIDIA A10G"), Some("A10G"));
    assert_eq!(named("NVIDIA A10"), Some("A10"));
    assert_eq!(named("NVIDIA L40S"), Some("L40S"));
    assert_eq!(named("Tesla V100-SXM2-16GB"), Some("V100-16GB"));
    assert_eq!(named("NVIDIA GeForce RTX 4090"), None);
}

#[test]
fn node_disks_come_in_tiers_so_a_new_model_rarely_resizes_a_pool() {
    let c = Catalog::embedded(&[]).expect("catalog");
    let a = &c.assumptions;
    // A 7B bf16 model (13 GiB), then a 1B one added beside it: the same tier, so the EKS
    // node group is not replaced and the AKS pool not rotated.
    let one = a.node_disk_gib(&[13.04], 0.0);
    assert_eq!(one, a.node_disk_gib(&[13.04, 1.86], 0.0));
    assert!([128, 256, 512, 1024].contains(&one), "{one}");
    // AKS's 128 GB default is the floor; a 70B model crosses into a larger tier.
    assert_eq!(a.node_disk_gib(&[], 128.0), 128);
    assert_eq!(a.node_disk_gib(&[130.4], 0.0), 512);
}

#[test]
fn kube_reserved_cpu_follows_the_published_schedules() {
    let c = Catalog::embedded(&[Provider::Azure, Provider::Aws]).expect("catalog");
    let a = &c.assumptions;
    let close = |got: f64, want: f64| assert!((got - want).abs() < 1e-9, "{got} vs {want}");
    // AKS: the table's points, a point between them, and its last slope beyond 64 cores.
    close(a.kube_reserved_cpu(Provider::Azure, 4.0), 0.140);
    close(a.kube_reserved_cpu(Provider::Azure, 64.0), 0.740);
    close(a.kube_reserved_cpu(Provider::Azure, 24.0), 0.340);
    close(a.kube_reserved_cpu(Provider::Azure, 96.0), 1.060);
    // EKS: 6% of the first core, 1% of the second, 0.5% of the next two, 0.25% after.
    close(a.kube_reserved_cpu(Provider::Aws, 1.0), 0.060);
    close(a.kube_reserved_cpu(Provider::Aws, 4.0), 0.080);
    close(
        a.kube_reserved_cpu(Provider::Aws, 48.0),
        0.060 + 0.010 + 0.010 + 44.0 * 0.0025,
    );
    close(
        a.kube_reserved_cpu(Provider::Aws, 192.0),
        0.080 + 188.0 * 0.0025,
    );
}
