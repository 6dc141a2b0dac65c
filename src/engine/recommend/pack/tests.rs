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
    assert_eq!(nodes(&g, CAP, true), (2, 0));
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
    assert_eq!(nodes(&g, CAP, true), (2, 12));
}

#[test]
fn dot_product_pairs_heavy_with_light() {
    // 4 GPUs and 48 vCPUs a node: 20-vCPU and 4-vCPU replicas pair up two and two
    // (48 vCPUs), where largest-first puts two heavy ones together and strands GPUs.
    let cap = NodeCap {
        units: 4,
        cpu: 48.0,
        mem: 1000.0,
    };
    let g = [
        (
            Item {
                units: 1,
                cpu: 20.0,
                mem: 1.0,
            },
            8,
        ),
        (
            Item {
                units: 1,
                cpu: 4.0,
                mem: 1.0,
            },
            8,
        ),
    ];
    assert_eq!(dot_product(&g, cap).0, 4);
    assert_eq!(nodes(&g, cap, true).0, 4);
}

#[test]
fn shares_pack_onto_gpus() {
    let gpus = server_gpus(&[(600, 1.0, 1.0, 3), (400, 1.0, 1.0, 3)], (96.0, 512.0));
    assert_eq!(gpus.len(), 3);
}

#[test]
fn a_gpu_takes_no_more_server_replicas_than_its_node_holds() {
    // Four models at a tenth of a GPU and 8 vCPUs each, on nodes of 22.7 allocatable vCPUs:
    // two fit a node, so two GPUs, each on a node of its own.
    let gpus = server_gpus(&[(100, 8.0, 32.0, 4)], (22.7, 200.0));
    assert_eq!(gpus.len(), 2, "{gpus:?}");
    assert!(gpus.iter().all(|g| g.cpu <= 22.7), "{gpus:?}");
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
        let (n, free) = nodes(&groups, CAP, true);
        prop_assert!(n <= total);
        let (d, dfree) = dot_product(&groups, CAP);
        prop_assert!(d <= total);
        prop_assert_eq!(d * CAP.units - dfree, units);
        let (p, pfree) = patterns(&groups, CAP);
        prop_assert!(p <= total);
        prop_assert_eq!(p * CAP.units - pfree, units);
        prop_assert_eq!(n * CAP.units - free, units);
        prop_assert!(n >= units.div_ceil(CAP.units));
    }

    /// A pool of more kinds than the DotProduct fill takes as they are: the coarsened
    /// kinds are as many replicas, each at least as large as the one it stands for and at
    /// most one grid step (1/4 of the node at the coarsest) larger, and the fill on them
    /// places every replica on no fewer nodes than the exact resources need.
    #[test]
    fn coarsened_kinds_cover_every_replica(
        raw in proptest::collection::vec((1u32..=8, 0.0f64..80.0, 0.0f64..1600.0, 1u32..4), 600..900)
    ) {
        let groups: Vec<(Item, u32)> = raw.iter()
            .map(|&(units, cpu, mem, n)| (Item { units, cpu, mem }, n))
            .collect();
        let coarse = coarsened(&groups, CAP);
        let count = |g: &[(Item, u32)]| g.iter().map(|g| g.1).sum::<u32>();
        prop_assert_eq!(count(&coarse), count(&groups));
        prop_assert!(coarse.len() <= DOT_KINDS);
        // Each original replica has a coarse kind of its units no smaller, within the
        // coarsest grid step.
        for (i, _) in &groups {
            prop_assert!(coarse.iter().any(|(c, _)| c.units == i.units
                && c.cpu >= i.cpu && c.cpu <= i.cpu + CAP.cpu / 4.0 + 1e-9
                && c.mem >= i.mem && c.mem <= i.mem + CAP.mem / 4.0 + 1e-9));
        }
        let units: u32 = groups.iter().map(|g| g.0.units * g.1).sum();
        let cpu: f64 = groups.iter().map(|g| g.0.cpu * f64::from(g.1)).sum();
        let (d, free) = dot_product(&groups, CAP);
        prop_assert_eq!(d * CAP.units - free, units);
        prop_assert!(f64::from(d) >= (cpu / CAP.cpu).ceil() - 1e-9);
    }
}
