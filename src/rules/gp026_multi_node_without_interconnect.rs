use super::{Cx, Rule};
use crate::core::Kind;

declare_rule! {
    /// # GP026 multi-node-without-interconnect
    ///
    /// ## What it does
    /// Flags multi-node training (`kind = "training"`, `nodes > 1`) on a SKU without a
    /// high-bandwidth fabric between nodes: InfiniBand (Azure ND-series) or EFA (every AWS
    /// type EC2 gives EFA interfaces: p4d/p5, and also g4dn, g5, g6 and g6e from 8xlarge up,
    /// g7e, gr6.8xlarge, trn1). Checked on the pools the workload lands on, or on its allowed
    /// SKUs when it has no pool. A gang whose replicas span several GPUs also needs NVLink
    /// between them; a gang of one-GPU replicas needs only the fabric. `recommend` applies the
    /// same test, so it never places a gang where this rule would fire.
    ///
    /// ## Why is this bad?
    /// Data- and tensor-parallel training exchanges gradients every step; over PCIe and
    /// ordinary Ethernet the GPUs spend most of their paid time waiting for the network.
    ///
    /// ## Example
    /// ```toml
    /// kind = "training"
    /// nodes = 4
    /// skus = ["Standard_NC96ads_A100_v4"]   # PCIe A100, no InfiniBand
    /// ```
    /// Use instead: `Standard_ND96amsr_A100_v4` / `Standard_ND96isr_H100_v5`, or
    /// `p4d.24xlarge` / `p5.48xlarge`.
    ///
    /// ## Source
    /// Context article ("training wants A100 or H100 class with NVLink"); EC2
    /// DescribeInstanceTypes EFA interface counts (`efa_interfaces` in providers/aws/skus.toml,
    /// from Karpenter's generated instance-type reference); Azure size docs (InfiniBand).
    pub(crate) struct MultiNodeWithoutInterconnect { id: GP026, name: "multi-node-without-interconnect", severity: Warning }
}

impl Rule for MultiNodeWithoutInterconnect {
    fn check(&self, cx: &mut Cx<'_>) {
        for w in cx.plan.workloads() {
            if w.kind() != Kind::Training || w.gang() <= 1 {
                continue;
            }
            let gpus = u32::try_from(w.gpus().max(1)).unwrap_or(u32::MAX);
            let pools = cx.pools_of(w);
            for pool in &pools {
                let Some(sku) = cx.pool_sku(pool) else {
                    continue;
                };
                if let Some(why) = sku.gang_gap(gpus) {
                    cx.push(
                        cx.finding(pool.sku.span(), format!("gang of {} nodes for `{}` on `{}`, which has {why}", w.gang(), w.name.get(), sku.name))
                            .label("no high-bandwidth interconnect")
                            .help("use a SKU with InfiniBand or EFA between nodes, and NVLink when a replica spans GPUs (Azure ND-series; AWS p4d/p5, or for one-GPU replicas g5/g6/g6e 8xlarge and up)")
                            .workload(w.name.get())
                            .pool(pool.name.get()),
                    );
                }
            }
            if !pools.is_empty() {
                continue;
            }
            if let Some(skus) = &w.skus {
                let all_lack = skus
                    .iter()
                    .filter_map(|s| cx.sku(s.get()))
                    .all(|s| s.gang_gap(gpus).is_some());
                if !skus.is_empty() && all_lack {
                    cx.push(
                        cx.finding(skus.span(), format!("gang of {} nodes for `{}`, but none of its allowed SKUs has what it needs between nodes", w.gang(), w.name.get()))
                            .label("no high-bandwidth interconnect")
                            .help("allow an ND-series (Azure) or an EFA type (AWS p4d/p5, g5/g6/g6e 8xlarge and up)")
                            .workload(w.name.get()),
                    );
                }
            }
        }
    }
}
