use super::{priced_by_hand, solve, solved, Group, Kind, Quotas, Use};

const HOURS: f64 = 730.0;

fn group(months: f64, uses: Vec<Use>) -> Group {
    Group {
        months,
        floor: 0.0,
        uses,
    }
}

fn hourly(kind: usize, need: [f64; 3]) -> Use {
    Use {
        kind,
        need: need.to_vec(),
    }
}

fn bound(kinds: &[Kind], groups: &[Group]) -> f64 {
    let b = solve(kinds, groups, HOURS).expect("solves");
    assert!(b.solved);
    b.monthly_usd / HOURS
}

#[test]
fn a_gang_member_takes_a_whole_node() {
    let node = Kind {
        usd: 10.0,
        cap: [8.0, 96.0, 1000.0].to_vec(),
    };
    let g = group(4.0, vec![hourly(0, [8.0, 96.0, 1000.0])]);
    assert!((bound(&[node], &[g]) - 40.0).abs() < 1e-6);
}

/// A GPU-heavy shape (4 replica-months of a GPU and 4 vCPUs) and a vCPU-heavy one (4 of a
/// quarter GPU and 24 vCPUs) on 1-GPU, 32-vCPU nodes: alone they need 4 + 3 node-months;
/// together 5, since each fills what the other leaves (GPUs 4 + 1, vCPUs (16 + 96) / 32).
#[test]
fn shapes_fill_each_others_leftovers() {
    let node = Kind {
        usd: 1.0,
        cap: [1.0, 32.0, 1.0].to_vec(),
    };
    let a = group(4.0, vec![hourly(0, [1.0, 4.0, 0.0])]);
    let b = group(4.0, vec![hourly(0, [0.25, 24.0, 0.0])]);
    assert!((bound(&[node], &[a, b]) - 5.0).abs() < 1e-6);
}

/// A replica that runs half the month: a reservation ($1.5/h) is paid all month, so it
/// takes the replica's slot for twice its hours and costs more than on-demand ($2/h for
/// the hours run).
#[test]
fn a_reservation_is_paid_all_month() {
    let node = [1.0, 8.0, 32.0];
    let kinds = [
        Kind {
            usd: 2.0,
            cap: node.to_vec(),
        },
        Kind {
            usd: 1.5,
            cap: node.to_vec(),
        },
    ];
    let need = [1.0, 4.0, 16.0];
    // What `problem` gives a reserved use of a workload running 365 of 730 hours.
    let g = group(0.5, vec![hourly(0, need), hourly(1, need.map(|x| x * 2.0))]);
    assert!((bound(&kinds, &[g]) - 1.0).abs() < 1e-6);
}

/// A tenth of a node's work, but the pool keeps two nodes all month.
#[test]
fn the_availability_floor_is_paid_for() {
    let node = Kind {
        usd: 3.0,
        cap: [1.0, 8.0, 32.0].to_vec(),
    };
    let g = Group {
        floor: 2.0,
        ..group(1.0, vec![hourly(0, [0.1, 0.8, 3.2])])
    };
    assert!((bound(&[node], &[g]) - 6.0).abs() < 1e-6);
}

/// Forty kinds, each a little cheaper than the last: the bound is the cheapest for every
/// group, whichever rows it started from.
#[test]
fn the_cheapest_of_many_kinds_is_the_bound() {
    let kinds: Vec<Kind> = (0..40)
        .map(|i| Kind {
            usd: 5.0 - f64::from(i) * 0.1,
            cap: [1.0, 8.0, 32.0].to_vec(),
        })
        .collect();
    let groups: Vec<Group> = (0..10)
        .map(|_| group(1.0, (0..40).map(|k| hourly(k, [1.0, 1.0, 1.0])).collect()))
        .collect();
    // 10 groups × $1.1, the last kind.
    assert!((bound(&kinds, &groups) - 11.0).abs() < 1e-6);
}

/// One kind used two ways by a group with an availability floor (two MIG profiles on one
/// size): the floor's variable is named once in the kind's row, and the cheaper way is the
/// bound.
#[test]
fn a_kind_used_two_ways_names_the_floor_once() {
    let node = Kind {
        usd: 4.0,
        cap: [1.0, 8.0, 32.0].to_vec(),
    };
    let g = Group {
        floor: 1.0,
        ..group(
            2.0,
            vec![hourly(0, [0.5, 1.0, 1.0]), hourly(0, [0.25, 1.0, 1.0])],
        )
    };
    // Half a node's GPU at $4 a node-hour is the work; the floor holds one node: $4.
    assert!((bound(&[node], &[g]) - 4.0).abs() < 1e-6);
}

/// The dual point priced by hand (for estates too large for the LP) is below the LP's bound:
/// each shape pays the kind's rate on the GPUs it weighs most on, 4 + 1 node-months of GPU.
#[test]
fn the_bound_priced_by_hand_is_below_the_lps() {
    let node = Kind {
        usd: 1.0,
        cap: [1.0, 32.0, 1.0].to_vec(),
    };
    let a = group(4.0, vec![hourly(0, [1.0, 4.0, 0.0])]);
    let b = group(4.0, vec![hourly(0, [0.25, 24.0, 0.0])]);
    let by_hand = priced_by_hand(std::slice::from_ref(&node), &[a.clone(), b.clone()]);
    assert!(by_hand <= bound(&[node], &[a, b]) + 1e-9);
    assert!((by_hand - 5.0).abs() < 1e-6, "{by_hand}");
}

/// Four replicas all month of one 4-vCPU node each, on spot ($1/h) or on-demand ($3/h), where
/// spot's quota holds 8 vCPUs: at most two spot nodes at once, so 2 x $1 + 2 x $3 = $8 an
/// hour, not the $4 of all on spot. Checked both ways: the month's average (kind row) alone
/// would allow 2 spot nodes too, and the group's own row says the same of its replicas.
#[test]
fn a_quota_holds_the_kinds_that_draw_on_it() {
    let kinds = [
        Kind {
            usd: 1.0,
            cap: [1.0, 4.0, 16.0].to_vec(),
        },
        Kind {
            usd: 3.0,
            cap: [1.0, 4.0, 16.0].to_vec(),
        },
    ];
    let g = group(
        4.0,
        vec![hourly(0, [1.0, 4.0, 16.0]), hourly(1, [1.0, 4.0, 16.0])],
    );
    let quotas = Quotas {
        limit: vec![8.0],
        of_kind: vec![Some((0, 4.0)), None],
        peak_limit: vec![8.0],
        per_use: vec![vec![Some((0, 4.0)), None]],
    };
    let (b, _) = solved(&kinds, std::slice::from_ref(&g), &quotas, HOURS).expect("solves");
    assert!(b.solved);
    assert!((b.monthly_usd / HOURS - 8.0).abs() < 1e-6, "{b:?}");
    // Without the quota, all on spot.
    assert!((bound(&kinds, &[g]) - 4.0).abs() < 1e-6);
}
