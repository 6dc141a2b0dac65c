//! How a MIG pool's nodes are filled: which MIG manager partitions it, and under the GPU
//! Operator the distinct per-node fillings (each a node pool of its own, with its own
//! mig-parted config). Render writes the node pools from these, and the name authority
//! (`engine::names`) names them, so the two always count the same node pools.

use indexmap::IndexMap;

use super::RecPool;
use crate::core::{MigManager, Sharing};

/// One distinct node filling: the MIG layout of each of a node's GPUs, and how many nodes
/// carry it.
pub(crate) type Filling = (Vec<IndexMap<String, u32>>, u32);

impl RecPool {
    /// Who partitions this pool's GPUs into MIG instances: `None` when it runs no MIG.
    pub(crate) fn mig_partitioner(&self) -> Option<MigManager> {
        match self.sharing {
            Sharing::Mig => Some(self.mig_manager),
            Sharing::Dedicated | Sharing::TimeSlicing | Sharing::Mps | Sharing::SharedServer => {
                None
            }
        }
    }

    /// Whether the GPU Operator's mig-manager partitions this pool's GPUs (rather than AKS,
    /// or no MIG at all).
    pub(crate) fn operator_mig(&self) -> bool {
        self.mig_partitioner() == Some(MigManager::GpuOperator)
    }

    /// The distinct node fillings of an operator-MIG pool at its maximum, in the order of
    /// its GPUs; a last node with fewer GPUs in use is a filling of its own (its unused GPUs
    /// stay without MIG).
    pub(crate) fn node_fillings(&self) -> Vec<Filling> {
        let mut gpus: Vec<IndexMap<String, u32>> = Vec::new();
        match (&self.mig_layout, self.mig_configs.is_empty()) {
            (Some(l), _) => gpus.extend(std::iter::repeat_n(l.clone(), self.gpus.max as usize)),
            (None, false) => {
                // One set of the nodes the layouts fill; the copies kept for the availability
                // floor are filled the same way.
                let sets = self.mig_node_sets.max(1);
                for c in &self.mig_configs {
                    gpus.extend(std::iter::repeat_n(
                        c.layout.clone(),
                        (c.gpus / sets) as usize,
                    ));
                }
            }
            (None, true) => {}
        }
        let per = self.gpus_per_node.max(1) as usize;
        let mut kinds: Vec<Filling> = Vec::new();
        let copies = if self.mig_layout.is_none() {
            self.mig_node_sets.max(1)
        } else {
            1
        };
        for n in gpus.chunks(per) {
            match kinds.iter_mut().find(|(k, _)| k.as_slice() == n) {
                Some((_, c)) => *c += copies,
                None => kinds.push((n.to_vec(), copies)),
            }
        }
        kinds
    }

    /// How many node pools render writes for this pool: one per node filling under the GPU
    /// Operator's MIG, else one.
    pub(crate) fn node_pool_count(&self) -> usize {
        if self.operator_mig() {
            self.node_fillings().len().max(1)
        } else {
            1
        }
    }
}
