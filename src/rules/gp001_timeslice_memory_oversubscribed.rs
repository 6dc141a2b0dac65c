use super::{Cx, Rule};
use crate::core::num;
use crate::core::Sp;
use crate::engine::memory::{server_cap, time_sliced_cap};
use crate::plan::Workload;

declare_rule! {
    /// # GP001 timeslice-memory-oversubscribed
    ///
    /// ## What it does
    /// For a time-sliced pool, adds up the memory caps (`server.gpu_memory_utilization`;
    /// vLLM's default is 0.92 when only `engine = "vllm"` is given) of the instances that can
    /// share one GPU: the `time_slicing_replicas` largest caps among the workloads' replicas
    /// (a workload contributes at most its maximum replicas). It flags a sum above
    /// 1 - headroom (`time_slicing_memory_headroom` in providers/assumptions.toml, 0.05: the
    /// caps `recommend` writes add up to 0.95), and more replicas than leave each instance
    /// 1% of the card.
    ///
    /// ## Why is this bad?
    /// The cap is per instance: vLLM reserves that share of the card for itself whatever else
    /// runs there, and at start-up refuses to run unless that share is still free ("Free
    /// memory on device ... is less than desired GPU memory utilization"). The instances
    /// started before it hold their caps plus a CUDA context each (hundreds of MiB) outside
    /// any cap, so caps that add up to exactly 1.0 (4 x 0.25) still leave the last instance
    /// short, and it crash-loops at deploy time. Time-slicing has no memory isolation, so
    /// nothing stops it earlier.
    ///
    /// ## Example
    /// ```toml
    /// [[pool]]
    /// sharing = "time-slicing"
    /// time_slicing_replicas = 4
    /// workloads = ["chat-api"]      # server = { engine = "vllm" }  -> 0.92 each
    /// ```
    /// Use instead: `server = { engine = "vllm", gpu_memory_utilization = 0.23 }` (at most
    /// 0.95 / replicas), fewer replicas, or MIG for real isolation. Uneven caps are fine
    /// while the largest that can meet on one card add up to 0.95 (3 x 0.2 + 0.35).
    ///
    /// ## Source
    /// vLLM docs: gpu_memory_utilization "is a per-instance limit"; vLLM's worker start-up
    /// check (free memory at start against the requested share); NVIDIA device plugin:
    /// time-slicing shares memory and fault domain (context articles, reference §4);
    /// the headroom in providers/assumptions.toml.
    pub(crate) struct TimesliceMemoryOversubscribed { id: GP001, name: "timeslice-memory-oversubscribed", severity: Error }
}

impl Rule for TimesliceMemoryOversubscribed {
    fn check(&self, cx: &mut Cx<'_>) {
        let headroom = cx.catalog.assumptions.time_slicing_memory_headroom;
        let limit = 1.0 - headroom;
        for pool in cx.plan.pools() {
            if !pool.sharing().is_time_sliced() {
                continue;
            }
            let Some(replicas) = &pool.time_slicing_replicas else {
                continue;
            };
            let r = *replicas.get();
            let n = usize::try_from(r.max(1)).unwrap_or(usize::MAX);
            // Every instance that could land on one card, largest cap first.
            let mut instances: Vec<(f64, &Sp<Workload>, bool)> = Vec::new();
            for w in cx.plan.pool_workloads(pool) {
                let Some((cap, explicit)) = server_cap(w, cx.catalog) else {
                    continue;
                };
                let count = usize::try_from(w.replicas().max().max(1))
                    .unwrap_or(n)
                    .min(n);
                instances.extend(std::iter::repeat_n((cap, w, explicit), count));
            }
            if instances.is_empty() {
                continue;
            }
            instances.sort_by(|a, b| b.0.total_cmp(&a.0));
            instances.truncate(n);
            let total: f64 = instances.iter().map(|i| i.0).sum();
            // The cap `recommend` writes for this many shares, the one formula.
            let per = time_sliced_cap(u32::try_from(r).unwrap_or(u32::MAX), headroom);
            if total <= limit + 1e-9 && per >= 0.01 {
                continue;
            }
            let (_, w, _) = instances[0];
            let terms = terms(&instances);
            let message = if per < 0.01 {
                format!(
                    "{r} replicas leave each instance under 1% of one GPU's memory: no `server.gpu_memory_utilization` an inference server starts with fits"
                )
            } else {
                format!(
                    "the {} instances that can share one GPU reserve {terms} = {} of its memory, more than {} (the CUDA context of each other instance sits outside the caps): vLLM refuses to start an instance whose share is no longer free, so the last ones crash-loop",
                    instances.len(),
                    num((total * 100.0).round() / 100.0),
                    num(limit)
                )
            };
            let mut d = cx
                .finding(replicas.span(), message)
                .label(format!("{r} instances share one GPU"))
                .help(if per < 0.01 {
                    "lower `time_slicing_replicas`, or use MIG".to_owned()
                } else {
                    format!(
                        "caps that can meet on one card must add up to at most {}: {} per instance with {r} replicas; or lower `time_slicing_replicas`, or use MIG",
                        num(limit),
                        num(per)
                    )
                })
                .pool(pool.name.get())
                .workload(w.name.get());
            if let Some(u) = w
                .server
                .as_ref()
                .and_then(|s| s.gpu_memory_utilization.as_ref())
            {
                d = d.also(u.span(), "per-instance cap");
            }
            cx.push(d);
        }
    }
}

/// The caps that meet on one card as a sum: `3 x 0.2 (\`a\`) + 0.35 (\`b\`, the engine
/// default)`.
fn terms(instances: &[(f64, &Sp<Workload>, bool)]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < instances.len() {
        let (cap, w, explicit) = instances[i];
        let k = instances[i..]
            .iter()
            .take_while(|x| x.1.name.get() == w.name.get())
            .count();
        let source = if explicit { "" } else { ", the engine default" };
        out.push(if k > 1 {
            format!("{k} x {} (`{}`{source})", num(cap), w.name.get())
        } else {
            format!("{} (`{}`{source})", num(cap), w.name.get())
        });
        i += k;
    }
    out.join(" + ")
}
