//! The figures a SKU and region failed a constraint by, in words.

use crate::core::num;
use crate::engine::recommend::candidate::Detail;

/// The figures a SKU and region failed a constraint by.
pub(super) fn detail(d: &Detail) -> String {
    match d {
        Detail::NoData { provider } => format!("the catalog has no data for {provider}"),
        Detail::Retired { sku } => {
            format!("`{sku}` is retired by the provider and cannot be created")
        }
        Detail::GpuShare { need, sku, share } => format!(
            "a replica needs {} GPU(s) and `{sku}` has a {share} share of one",
            num(*need)
        ),
        Detail::GpuMemory {
            need,
            n,
            gpu,
            offered,
            cap,
        } => format!(
            "a replica needs {} GiB and {n} x {gpu} give it {} GiB{}",
            num(*need),
            num(*offered),
            if *cap < 1.0 {
                format!(" under its server's cap of {}", num(*cap))
            } else {
                String::new()
            }
        ),
        Detail::CappedMemory {
            need,
            gpu,
            offered,
            cap,
        } => format!(
            "a replica needs {} GiB and one {gpu} gives it {} GiB under its server's cap of {}",
            num(*need),
            num(*offered),
            num(*cap)
        ),
        Detail::SharedMemory { need, gpu, has } => format!(
            "a replica needs {} GiB and one {gpu} has {} GiB",
            num(*need),
            num(*has)
        ),
        Detail::NoPrice { sku, region } => {
            format!("`{sku}` has no price in {region} in the catalog")
        }
        Detail::NotInSkus { sku } => format!("`{sku}` is not in the workload's `skus`"),
        Detail::NotInGpuModels { gpu } => {
            format!("{gpu} is not in the workload's `gpu_models`")
        }
        Detail::Precision {
            gpu,
            has,
            precision,
            needs,
        } => format!(
            "{gpu} (compute capability {}.{}) does not compute in {precision}, which needs {}.{}",
            has.0, has.1, needs.0, needs.1
        ),
        Detail::Restricted { sku, region, why } => format!(
            "`{sku}` cannot be deployed in {region} by this account: {why} (catalog refresh)"
        ),
        Detail::GpusPerNode { gpus, sku, has } => {
            format!("a replica needs {gpus} GPUs on one node and `{sku}` has {has}")
        }
        Detail::NoMig { gpu } => format!("{gpu} has no MIG"),
        Detail::AksNoMig { gpu } => {
            format!("AKS creates no MIG instances on {gpu} (mig_manager = aks)")
        }
        Detail::HostMig { sku, gpu } => format!(
            "the host sets MIG on `{sku}`'s {gpu} (SR-IOV vGPU): the guest cannot create MIG instances, and the size's partial siblings are the host's slices"
        ),
        Detail::NoMigProfile { gpu, need } => {
            format!("no MIG profile of {gpu} holds {} GiB", num(*need))
        }
        Detail::HostCpu {
            need,
            sku,
            allocatable,
        } => format!(
            "a replica needs {} vCPUs and `{sku}` has {} allocatable",
            num(*need),
            num(*allocatable)
        ),
        Detail::HostMemory {
            need,
            sku,
            allocatable,
        } => format!(
            "a replica needs {} GiB of RAM and `{sku}` has {} allocatable",
            num(*need),
            num(*allocatable)
        ),
        Detail::Interconnect { gang, sku, gap } => format!(
            "a {gang}-node gang needs InfiniBand or EFA between its nodes (and NVLink when a replica spans GPUs); `{sku}` has {gap}"
        ),
        Detail::Quota {
            need,
            family,
            region,
            limit,
            from,
        } => format!(
            "{} vCPUs of `{family}` needed in {region}, quota {} (from {from})",
            num(*need),
            num(*limit)
        ),
    }
}
