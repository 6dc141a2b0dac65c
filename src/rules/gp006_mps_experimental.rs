use super::{Cx, Rule};

declare_rule! {
    /// # GP006 mps-experimental
    ///
    /// ## What it does
    /// Flags every pool and workload that uses MPS (`sharing = "mps"`).
    ///
    /// ## Why is this bad?
    /// MPS support in the NVIDIA device plugin is experimental (since v0.15.0). MPS caps each
    /// client's memory, but error containment is limited: a fatal GPU fault in one client is
    /// reported to all clients on that GPU. It is a shared fault domain with better manners.
    ///
    /// ## Example
    /// ```toml
    /// sharing = "mps"
    /// ```
    /// Use instead: MIG where the hardware has it; otherwise MPS with a `[[decision]]` for the
    /// shared fault domain and an `[[allow]]` for this rule.
    ///
    /// ## Source
    /// NVIDIA k8s-device-plugin README; NVIDIA MPS documentation (context article, table).
    pub(crate) struct MpsExperimental { id: GP006, name: "mps-experimental", severity: Warning }
}

impl Rule for MpsExperimental {
    fn check(&self, cx: &mut Cx<'_>) {
        for pool in cx.plan.pools() {
            if pool.sharing().needs_mps_daemon() {
                let at = pool.sharing.as_ref().map_or(pool.name.span(), |s| s.span());
                cx.push(
                    cx.finding(at, format!("pool `{}` uses MPS, which is experimental in the NVIDIA device plugin; a fatal fault in one client reaches every client on the GPU", pool.name.get()))
                        .label("MPS")
                        .help("prefer MIG on hardware that has it; otherwise record the shared fault domain in a `[[decision]]`")
                        .pool(pool.name.get()),
                );
            }
        }
        for w in cx.plan.workloads() {
            let on_mps_pool = cx
                .pools_of(w)
                .iter()
                .any(|p| p.sharing().needs_mps_daemon());
            if w.sharing().needs_mps_daemon() && !on_mps_pool {
                let at = w.sharing.as_ref().map_or(w.name.span(), |s| s.span());
                cx.push(
                    cx.finding(at, format!("`{}` uses MPS, which is experimental in the NVIDIA device plugin; a fatal fault in one client reaches every client on the GPU", w.name.get()))
                        .label("MPS")
                        .help("prefer MIG on hardware that has it; otherwise record the shared fault domain in a `[[decision]]`")
                        .workload(w.name.get()),
                );
            }
        }
    }
}
