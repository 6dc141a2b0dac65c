use super::{Cx, Rule};
use crate::core::Sharing;

declare_rule! {
    /// # GP027 sharing-setting-contradiction
    ///
    /// ## What it does
    /// Flags sharing settings the device plugin rejects or that contradict the pool's mode:
    /// `time_slicing_replicas` below 2; replicas set on a pool that is not time-sliced or MPS,
    /// or missing on one that is; MIG geometry on a pool that is not MIG, or a MIG pool with
    /// neither `mig_profile` nor `mig_layout` (or both); a workload whose `sharing` differs
    /// from the pool it lands on. A MIG workload on a dedicated pool of a partial size whose
    /// host sets MIG (Azure's NC RTX PRO 6000 BSE v6) is what it asked for: the VM's GPU is
    /// the host's MIG instance.
    ///
    /// ## Why is this bad?
    /// The device plugin refuses `replicas < 2` ("number of replicas must be >= 2") and the
    /// node advertises no GPUs; the other cases deploy something other than what the plan
    /// says, so every cost and isolation figure derived from it is wrong.
    ///
    /// ## Example
    /// ```toml
    /// sharing = "time-slicing"
    /// time_slicing_replicas = 1
    /// ```
    /// Use instead: `time_slicing_replicas = 2` or more, or `sharing = "dedicated"`.
    ///
    /// ## Source
    /// NVIDIA k8s-device-plugin api/config/v1/replicas.go (reference §7).
    pub(crate) struct SharingSettingContradiction { id: GP027, name: "sharing-setting-contradiction", severity: Error }
}

impl Rule for SharingSettingContradiction {
    fn check(&self, cx: &mut Cx<'_>) {
        for pool in cx.plan.pools() {
            let name = pool.name.get();
            let sharing = pool.sharing();
            let shared = sharing.is_replicated();
            let mut report = |span, msg: String, help: &str| {
                let d = cx
                    .finding(span, msg)
                    .label("contradicts the pool's sharing")
                    .help(help.to_owned())
                    .pool(name);
                cx.push(d);
            };
            match &pool.time_slicing_replicas {
                Some(r) if *r.get() < 2 => report(r.span(), format!("`time_slicing_replicas = {}` on pool `{name}`: the device plugin requires at least 2", r.get()), "set 2 or more, or use `sharing = \"dedicated\"`"),
                Some(r) if !shared => report(r.span(), format!("pool `{name}` sets `time_slicing_replicas` but its sharing is `{}`", sharing.as_str()), "remove it, or set `sharing = \"time-slicing\"` (or \"mps\")"),
                None if shared => report(pool.sharing.as_ref().map_or(pool.name.span(), |s| s.span()), format!("pool `{name}` is `{}` but sets no `time_slicing_replicas`", sharing.as_str()), "set `time_slicing_replicas` (2 or more)"),
                _ => {}
            }
            let mig_span = pool.mig_span();
            let geometries = usize::from(pool.mig_profile.is_some())
                + usize::from(pool.mig_layout.is_some())
                + usize::from(pool.mig_layouts.is_some());
            match (sharing, mig_span.clone()) {
                (Sharing::Mig, None) => report(pool.sharing.as_ref().map_or(pool.name.span(), |s| s.span()), format!("MIG pool `{name}` has neither `mig_profile` nor `mig_layout`"), "set the geometry: `mig_profile` (uniform), `mig_layout` (per GPU) or `mig_layouts` (several per-GPU layouts)"),
                (Sharing::Mig, Some(_)) if geometries > 1 => report(mig_span.clone().unwrap_or(pool.name.span()), format!("pool `{name}` sets more than one of `mig_profile`, `mig_layout` and `mig_layouts`"), "keep one: `mig_profile` for a uniform geometry, `mig_layout` for one per-GPU layout, `mig_layouts` for several"),
                (Sharing::Mig, Some(_)) => {}
                (Sharing::Mps, Some(_)) => {} // GP005
                (s @ (Sharing::Dedicated | Sharing::TimeSlicing | Sharing::SharedServer), Some(span)) => report(span, format!("pool `{name}` sets MIG geometry but its sharing is `{}`", s.as_str()), "set `sharing = \"mig\"` or remove the geometry"),
                (Sharing::Dedicated | Sharing::TimeSlicing | Sharing::Mps | Sharing::SharedServer, None) => {}
            }
            let host_slice = cx
                .pool_sku(pool)
                .is_some_and(|s| s.gpu_partition < 1.0 && cx.catalog.host_mig(s));
            for w in cx.plan.pool_workloads(pool) {
                let ws = w.sharing();
                let fits = ws == sharing
                    || (ws.shares_server_process() && sharing.is_exclusive())
                    || (host_slice && ws.is_partitioned() && sharing.is_exclusive());
                if fits || (ws.needs_mps_daemon() && sharing.is_partitioned()) {
                    continue; // MPS on MIG is GP005
                }
                let d = cx
                    .finding(w.sharing.as_ref().map_or(w.name.span(), |s| s.span()), format!("`{}` expects `{}` but pool `{name}` is `{}`", w.name.get(), ws.as_str(), sharing.as_str()))
                    .label("workload sharing")
                    .also(pool.name.span(), "pool")
                    .help("make the workload's `sharing` match the pool, or move it to a pool of its kind")
                    .workload(w.name.get())
                    .pool(name);
                cx.push(d);
            }
        }
    }
}
