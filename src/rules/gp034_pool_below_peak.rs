use super::{Cx, Rule};
use crate::engine::holds::{peak_nodes, Binding};

declare_rule! {
    /// # GP034 pool-below-peak
    ///
    /// ## What it does
    /// Flags a declared pool whose `nodes` maximum cannot hold its workloads at their peak:
    /// whole GPUs, the time-sliced or MPS replicas its GPUs are shared into, the MIG instances
    /// of its profile or layouts, the vCPUs and memory a node has left for pods (after the
    /// kubelet's reservation and DaemonSets), and gangs of a node per member. The count is a
    /// lower bound (every dimension summed, each workload packed whole on its own), so a pool
    /// below it fails whatever the scheduler does. A workload several pools serve counts in
    /// each with the replicas the others cannot hold at their `nodes.max`, and a MIG pool's
    /// layouts carry each profile's instances side by side (the GPUs needed are the most any
    /// profile needs), as the packer places them.
    ///
    /// ## Why is this bad?
    /// The replicas past what the pool holds stay Pending at exactly the hour they are needed,
    /// and every cost shown for the plan (`recommend`'s comparison, `diff`) prices a pool
    /// that does not run the work: a pool of 3 one-GPU nodes for 6 one-GPU replicas looks
    /// like a 50% saving.
    ///
    /// ## Example
    /// ```toml
    /// [[workload]]
    /// name = "api"
    /// replicas = { min = 2, max = 6 }
    /// gpus = 1
    ///
    /// [[pool]]
    /// sku = "g6.xlarge"     # 1 GPU
    /// nodes = { min = 2, max = 3 }
    /// workloads = ["api"]
    /// ```
    /// Use instead: `nodes.max` at least what the message gives, or fewer replicas at peak.
    ///
    /// ## Source
    /// Kubernetes scheduling: a pod is placed only on a node with its requests free
    /// (extended resources, cpu, memory); the cluster autoscaler adds nodes only up to a node
    /// group's maximum. Allocatable = capacity less kube-reserved (the EKS AMI formula, the
    /// AKS table) and DaemonSets, as `recommend` sizes nodes.
    pub(crate) struct PoolBelowPeak { id: GP034, name: "pool-below-peak", severity: Error }
}

impl Rule for PoolBelowPeak {
    fn check(&self, cx: &mut Cx<'_>) {
        for pool in cx.plan.pools() {
            let Some(need) = peak_nodes(cx.catalog, cx.plan, pool) else {
                continue;
            };
            let max = pool.nodes().max().max(0);
            if i64::from(need.nodes) <= max || pool.workloads.is_empty() {
                continue;
            }
            let what = match need.binding {
                Binding::Gpus => "GPUs",
                Binding::Shares => "time-sliced replicas",
                Binding::MigInstances => "MIG instances",
                Binding::Vcpus => "allocatable vCPUs",
                Binding::Memory => "allocatable memory",
                Binding::Gang => "gang members, a node each",
            };
            let per = need
                .replicas_per_node
                .map(|n| format!(" ({n} replica(s) per node)"))
                .unwrap_or_default();
            let needed = if need.nodes == u32::MAX {
                "more than any number of nodes: a replica fits no node".to_owned()
            } else {
                format!("at least {} nodes", need.nodes)
            };
            cx.push(
                cx.finding(
                    pool.nodes.span(),
                    format!(
                        "pool `{}` grows to {max} x `{}`, but its workloads need {needed} at peak, bound by {what}{per}: the replicas past it never run",
                        pool.name.get(),
                        pool.sku.get()
                    ),
                )
                .label(format!("at most {max} node(s)"))
                .help(if need.nodes == u32::MAX {
                    "use a larger SKU, or lower the replica's cpu or memory".to_owned()
                } else {
                    format!("raise `nodes.max` to at least {}, or lower the workloads' peak replicas", need.nodes)
                })
                .pool(pool.name.get()),
            );
        }
    }
}
