use super::{Cx, Rule};
use crate::core::num;
use crate::engine::memory::server_cap;
use crate::plan::raw::Sharing;

declare_rule! {
    /// # GP001 timeslice-memory-oversubscribed
    ///
    /// ## What it does
    /// For a time-sliced pool, multiplies `time_slicing_replicas` by the largest
    /// `server.gpu_memory_utilization` of the workloads that can land on one GPU (vLLM's
    /// default is 0.92 when only `engine = "vllm"` is given) and flags a product above 1.0.
    ///
    /// ## Why is this bad?
    /// The cap is per instance: vLLM reserves that share of the card for itself whatever else
    /// runs there. Four instances at 0.92 ask for 3.68 cards of memory; the first starts and
    /// the rest die at start, in a crash loop at deploy time. Time-slicing has no memory
    /// isolation, so nothing stops it earlier.
    ///
    /// ## Example
    /// ```toml
    /// [[pool]]
    /// sharing = "time-slicing"
    /// time_slicing_replicas = 4
    /// workloads = ["chat-api"]      # server = { engine = "vllm" }  -> 0.92 each
    /// ```
    /// Use instead: `server = { engine = "vllm", gpu_memory_utilization = 0.22 }` (at most
    /// 1 / replicas, less headroom), fewer replicas, or MIG for real isolation.
    ///
    /// ## Source
    /// vLLM docs: gpu_memory_utilization "is a per-instance limit"; NVIDIA device plugin:
    /// time-slicing shares memory and fault domain (context articles, reference §4).
    pub(crate) struct TimesliceMemoryOversubscribed { id: "GP001", name: "timeslice-memory-oversubscribed", severity: Error }
}

impl Rule for TimesliceMemoryOversubscribed {
    fn check(&self, cx: &mut Cx<'_>) {
        for pool in cx.plan.pools() {
            if pool.sharing() != Sharing::TimeSlicing {
                continue;
            }
            let Some(replicas) = &pool.time_slicing_replicas else {
                continue;
            };
            let r = *replicas.get();
            let worst = cx
                .plan
                .pool_workloads(pool)
                .filter_map(|w| server_cap(w, cx.catalog).map(|(c, explicit)| (w, c, explicit)))
                .max_by(|a, b| a.1.total_cmp(&b.1));
            let Some((w, cap, explicit)) = worst else {
                continue;
            };
            let total = r as f64 * cap;
            if total <= 1.0 + 1e-9 {
                continue;
            }
            let source = if explicit {
                ""
            } else {
                " (the engine default)"
            };
            let mut d = cx
                .finding(
                    replicas.span(),
                    format!(
                        "{r} replicas x {} = {} of one GPU's memory: each `{}` instance reserves {}{source}, so instances after the first die at start",
                        num(cap), num(total), w.name.get(), num(cap)
                    ),
                )
                .label(format!("{r} instances share one GPU"))
                .help(format!(
                    "set `server.gpu_memory_utilization` to at most {} per instance, lower `time_slicing_replicas`, or use MIG",
                    num((1.0 / r as f64 * 0.95 * 100.0).floor() / 100.0)
                ))
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
