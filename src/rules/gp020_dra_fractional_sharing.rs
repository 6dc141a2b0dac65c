use super::{Cx, Rule};

declare_rule! {
    /// # GP020 dra-fractional-sharing
    ///
    /// ## What it does
    /// Flags a workload that requests its GPU through Kubernetes Dynamic Resource Allocation
    /// (`dra = true`), with a sharper message when it relies on DRA for a fraction of a GPU.
    ///
    /// ## Why is this bad?
    /// Core DRA is GA (Kubernetes 1.34), but the part that shares one device across pods,
    /// Consumable Capacity, is alpha and Partitionable Devices is beta. On the vendor side,
    /// NVIDIA's DRA driver supports multi-node NVLink ComputeDomains officially, while GPU
    /// allocation, dynamic MIG included, is not yet officially supported and its kubelet
    /// plugin ships disabled by default.
    ///
    /// ## Example
    /// ```toml
    /// dra = true
    /// gpu_fraction = 0.25
    /// ```
    /// Use instead: the device plugin with MIG or time-slicing today; revisit DRA with the
    /// current release notes.
    ///
    /// ## Source
    /// Kubernetes DRA feature stages; NVIDIA k8s-dra-driver docs (context article).
    pub(crate) struct DraFractionalSharing { id: GP020, name: "dra-fractional-sharing", severity: Warning }
}

impl Rule for DraFractionalSharing {
    fn check(&self, cx: &mut Cx<'_>) {
        for w in cx.plan.workloads() {
            let Some(flag) = w
                .dra
                .as_ref()
                .filter(|_| w.claim().is_unsupported_allocation())
            else {
                continue;
            };
            let fractional = w.gpu_fraction.is_some() || w.sharing().splits_a_card();
            let msg = if fractional {
                format!("`{}` relies on DRA to share a GPU: consumable capacity is alpha and NVIDIA's DRA GPU allocation (dynamic MIG included) is not yet officially supported", w.name.get())
            } else {
                format!("`{}` requests its GPU through DRA: NVIDIA's DRA GPU allocation is not yet officially supported and its kubelet plugin ships disabled", w.name.get())
            };
            cx.push(
                cx.finding(flag.span(), msg)
                    .label("DRA")
                    .help("use the NVIDIA device plugin (MIG, time-slicing) for production; check the DRA driver's release notes before relying on it")
                    .workload(w.name.get()),
            );
        }
    }
}
