use super::{Cx, Rule};
use crate::catalog::Sku;
use crate::plan::raw::Kind;

declare_rule! {
    /// # GP026 multi-node-without-interconnect
    ///
    /// ## What it does
    /// Flags multi-node training (`kind = "training"`, `nodes > 1`) on a SKU without a
    /// high-bandwidth fabric between nodes: InfiniBand (Azure ND-series) or EFA (every AWS
    /// type EC2 gives EFA interfaces: p4d/p5, and also g4dn, g5, g6 and g6e from 8xlarge up,
    /// g7e, gr6.8xlarge, trn1). Checked on the pools the workload lands on, or on its allowed
    /// SKUs when it has no pool. NVLink inside a node speeds tensor parallelism but is not
    /// required of a gang; `recommend` applies the same test, so it never places a gang where
    /// this rule would fire.
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
    pub(crate) struct MultiNodeWithoutInterconnect { id: "GP026", name: "multi-node-without-interconnect", severity: Warning }
}

fn lacks(sku: &Sku) -> Option<&'static str> {
    sku.gang_gap()
}

impl Rule for MultiNodeWithoutInterconnect {
    fn check(&self, cx: &mut Cx<'_>) {
        for w in cx.plan.workloads() {
            if w.kind() != Kind::Training || w.gang() <= 1 {
                continue;
            }
            let pools = cx.pools_of(w);
            for pool in &pools {
                let Some(sku) = cx.pool_sku(pool) else {
                    continue;
                };
                if let Some(why) = lacks(sku) {
                    cx.push(
                        cx.finding(pool.sku.span(), format!("gang of {} nodes for `{}` on `{}`, which has {why}", w.gang(), w.name.get(), sku.name))
                            .label("no high-bandwidth interconnect")
                            .help("use a SKU with InfiniBand or EFA between nodes (Azure ND-series; AWS p4d/p5, or g5/g6/g6e 8xlarge and up) for multi-node training")
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
                    .all(|s| lacks(s).is_some());
                if !skus.is_empty() && all_lack {
                    cx.push(
                        cx.finding(skus.span(), format!("gang of {} nodes for `{}`, but none of its allowed SKUs has InfiniBand or EFA between nodes", w.gang(), w.name.get()))
                            .label("no high-bandwidth interconnect")
                            .help("allow an ND-series (Azure) or an EFA type (AWS p4d/p5, g5/g6/g6e 8xlarge and up)")
                            .workload(w.name.get()),
                    );
                }
            }
        }
    }
}
