use super::{Cx, Rule};

declare_rule! {
    /// # GP005 mps-on-mig
    ///
    /// ## What it does
    /// Flags MPS combined with MIG: a pool with `sharing = "mps"` and a `mig_profile` or
    /// `mig_layout`, or a workload with `sharing = "mps"` placed on a MIG pool.
    ///
    /// ## Why is this bad?
    /// The NVIDIA device plugin does not support MPS on MIG devices: its MPS daemon logs
    /// "MPS sharing is not supported for MIG devices; skipping daemon creation" and the
    /// sharing you planned never happens (CUDA itself can run MPS inside a MIG instance, the
    /// plugin cannot hand it out).
    ///
    /// ## Example
    /// ```toml
    /// sharing = "mps"
    /// mig_profile = "3g.40gb"
    /// ```
    /// Use instead: MIG alone, or MPS on whole GPUs.
    ///
    /// ## Source
    /// NVIDIA k8s-device-plugin cmd/mps-control-daemon (reference §4).
    pub(crate) struct MpsOnMig { id: GP005, name: "mps-on-mig", severity: Error }
}

impl Rule for MpsOnMig {
    fn check(&self, cx: &mut Cx<'_>) {
        for pool in cx.plan.pools() {
            if pool.sharing().needs_mps_daemon() {
                if let Some(span) = pool.mig_span() {
                    cx.push(
                        cx.finding(span, format!("pool `{}` combines MPS with MIG, which the device plugin does not support", pool.name.get()))
                            .label("MIG geometry on an MPS pool")
                            .help("choose one: MIG slices, or MPS on whole GPUs")
                            .pool(pool.name.get()),
                    );
                }
            }
            if pool.sharing().is_partitioned() {
                for w in cx.plan.pool_workloads(pool) {
                    if w.sharing().needs_mps_daemon() {
                        let at = w.sharing.as_ref().map_or(w.name.span(), |s| s.span());
                        cx.push(
                            cx.finding(at, format!("`{}` wants MPS but lands on MIG pool `{}`: the device plugin does not run MPS on MIG devices", w.name.get(), pool.name.get()))
                                .label("MPS")
                                .help("use `sharing = \"mig\"` for this workload, or move it to an MPS pool of whole GPUs")
                                .workload(w.name.get())
                                .pool(pool.name.get()),
                        );
                    }
                }
            }
        }
    }
}
