//! Putting replicas on nodes. A node offers GPU units (whole GPUs, or equal shares of its
//! GPUs when they are time-sliced), allocatable vCPUs and RAM; replicas are placed first fit
//! in decreasing order of the largest share they take, which never splits a replica across
//! nodes.

/// What one replica (or one prepared GPU) takes of a node.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Item {
    pub units: u32,
    pub cpu: f64,
    pub mem: f64,
}

/// What one node offers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NodeCap {
    pub units: u32,
    pub cpu: f64,
    pub mem: f64,
}

impl NodeCap {
    fn dominant(&self, i: &Item) -> f64 {
        let u = f64::from(i.units) / f64::from(self.units.max(1));
        let c = if self.cpu > 0.0 {
            i.cpu / self.cpu
        } else {
            0.0
        };
        let m = if self.mem > 0.0 {
            i.mem / self.mem
        } else {
            0.0
        };
        u.max(c).max(m)
    }
}

/// Nodes needed for `groups` of identical items (item, how many), first fit decreasing.
/// Returns the node count and the GPU units left unused on them.
pub fn nodes(groups: &[(Item, u32)], cap: NodeCap) -> (u32, u32) {
    let mut order: Vec<&(Item, u32)> = groups.iter().filter(|g| g.1 > 0).collect();
    order.sort_by(|a, b| {
        cap.dominant(&b.0)
            .total_cmp(&cap.dominant(&a.0))
            .then(b.0.units.cmp(&a.0.units))
            .then(b.0.cpu.total_cmp(&a.0.cpu))
            .then(b.0.mem.total_cmp(&a.0.mem))
    });
    // Remaining (units, cpu, mem) per open node.
    let mut bins: Vec<(u32, f64, f64)> = Vec::new();
    const EPS: f64 = 1e-9;
    for (item, count) in order {
        // Nodes only lose room, so a node too full for one copy is too full for the next:
        // each copy starts looking where the previous one was placed.
        let mut start = 0usize;
        for _ in 0..*count {
            let found = bins[start..]
                .iter()
                .position(|b| b.0 >= item.units && b.1 + EPS >= item.cpu && b.2 + EPS >= item.mem);
            let at = match found {
                Some(k) => start + k,
                None => {
                    bins.push((cap.units, cap.cpu, cap.mem));
                    bins.len() - 1
                }
            };
            let b = &mut bins[at];
            b.0 = b.0.saturating_sub(item.units);
            b.1 -= item.cpu;
            b.2 -= item.mem;
            start = at;
        }
    }
    let free = bins.iter().map(|b| b.0).sum();
    (u32::try_from(bins.len()).unwrap_or(u32::MAX), free)
}

/// Shares of one GPU (thousandths) packed onto GPUs, first fit decreasing; each GPU comes
/// back as the vCPUs and RAM of the replicas on it.
pub fn server_gpus(groups: &[(u32, f64, f64, u32)]) -> Vec<Item> {
    let mut order: Vec<&(u32, f64, f64, u32)> = groups.iter().filter(|g| g.3 > 0).collect();
    order.sort_by(|a, b| b.0.cmp(&a.0).then(b.1.total_cmp(&a.1)));
    let mut gpus: Vec<(u32, f64, f64)> = Vec::new();
    for (milli, cpu, mem, count) in order {
        let mut start = 0usize;
        for _ in 0..*count {
            let at = match gpus[start..].iter().position(|g| g.0 + milli <= 1000) {
                Some(k) => start + k,
                None => {
                    gpus.push((0, 0.0, 0.0));
                    gpus.len() - 1
                }
            };
            let g = &mut gpus[at];
            g.0 += milli;
            g.1 += cpu;
            g.2 += mem;
            start = at;
        }
    }
    gpus.into_iter()
        .map(|(_, cpu, mem)| Item { units: 1, cpu, mem })
        .collect()
}

/// Identical items counted once.
pub fn group(mut items: Vec<Item>) -> Vec<(Item, u32)> {
    items.sort_by(|a, b| {
        a.units
            .cmp(&b.units)
            .then(a.cpu.total_cmp(&b.cpu))
            .then(a.mem.total_cmp(&b.mem))
    });
    let mut out: Vec<(Item, u32)> = Vec::new();
    for i in items {
        match out.last_mut() {
            Some((last, n)) if *last == i => *n += 1,
            _ => out.push((i, 1)),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const CAP: NodeCap = NodeCap {
        units: 8,
        cpu: 86.4,
        mem: 1700.0,
    };

    #[test]
    fn whole_gpus_fill_nodes() {
        let g = [
            (
                Item {
                    units: 4,
                    cpu: 0.0,
                    mem: 0.0,
                },
                3,
            ),
            (
                Item {
                    units: 2,
                    cpu: 0.0,
                    mem: 0.0,
                },
                2,
            ),
        ];
        assert_eq!(nodes(&g, CAP), (2, 0));
    }

    #[test]
    fn cpu_binds_before_gpus() {
        let g = [(
            Item {
                units: 1,
                cpu: 40.0,
                mem: 10.0,
            },
            4,
        )];
        // two replicas of 40 vCPUs fit in 86.4: 2 nodes, 6 GPUs idle on each
        assert_eq!(nodes(&g, CAP), (2, 12));
    }

    #[test]
    fn shares_pack_onto_gpus() {
        let gpus = server_gpus(&[(600, 1.0, 1.0, 3), (400, 1.0, 1.0, 3)]);
        assert_eq!(gpus.len(), 3);
    }

    proptest! {
        /// Every replica is placed: the nodes hold at least the demand, and never more nodes
        /// than one per replica.
        #[test]
        fn every_item_is_placed(
            raw in proptest::collection::vec((1u32..=8, 0.0f64..80.0, 0.0f64..1600.0, 0u32..20), 1..8)
        ) {
            let groups: Vec<(Item, u32)> = raw.iter()
                .map(|&(units, cpu, mem, n)| (Item { units, cpu, mem }, n))
                .collect();
            let total: u32 = groups.iter().map(|g| g.1).sum();
            let units: u32 = groups.iter().map(|g| g.0.units * g.1).sum();
            let (n, free) = nodes(&groups, CAP);
            prop_assert!(n <= total);
            prop_assert_eq!(n * CAP.units - free, units);
            prop_assert!(n >= units.div_ceil(CAP.units));
        }
    }
}
