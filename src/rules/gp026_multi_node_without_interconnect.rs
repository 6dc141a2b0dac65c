use super::{Cx, Rule};
use crate::catalog::{InterNode, Sku};
use crate::plan::raw::Kind;

declare_rule! {
    /// # GP026 multi-node-without-interconnect
    ///
    /// ## What it does
    /// Flags multi-node training (`kind = "training"`, `nodes > 1`) on a SKU without a
    /// high-bandwidth interconnect: NVLink between the GPUs in a node and InfiniBand (Azure
    /// ND-series) or EFA (AWS P-series) between nodes. Checked on the pools the workload
    /// lands on, or on its allowed SKUs when it has no pool.
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
    /// Context article ("training wants A100 or H100 class with NVLink"); provider SKU docs
    /// (interconnect fields in providers/*/skus.toml).
    pub(crate) struct MultiNodeWithoutInterconnect { id: "GP026", name: "multi-node-without-interconnect", severity: Warning }
}

fn lacks(sku: &Sku) -> Option<&'static str> {
    match (sku.nvlink, sku.inter_node) {
        (true, InterNode::Infiniband | InterNode::Efa) => None,
        (false, InterNode::None) => Some("neither NVLink nor InfiniBand/EFA"),
        (false, _) => Some("no NVLink between its GPUs"),
        (true, InterNode::None) => Some("no InfiniBand/EFA between nodes"),
    }
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
                            .help("use an NVLink + InfiniBand/EFA SKU (Azure ND-series, AWS p4d/p5) for multi-node training")
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
                        cx.finding(skus.span(), format!("gang of {} nodes for `{}`, but none of its allowed SKUs has NVLink and InfiniBand/EFA", w.gang(), w.name.get()))
                            .label("no high-bandwidth interconnect")
                            .help("allow an ND-series (Azure) or p4d/p5 (AWS) SKU")
                            .workload(w.name.get()),
                    );
                }
            }
        }
    }
}
