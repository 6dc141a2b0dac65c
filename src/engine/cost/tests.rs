use super::*;
use proptest::prelude::*;

/// The one stacking rule gives what recommend's demand and GP023's plan workload each
/// computed before (steady: up to the minimum kept, above the floor; peak: the rest).
#[test]
fn a_workloads_replicas_stack_as_both_callers_stacked_them() {
    for floor in 0..5u32 {
        for min in 0..5u32 {
            for peak in min..6u32 {
                let [s, b] = BurstMember::replicas(0.5, floor, min, peak, 100.0, 1.0);
                // GP023's arithmetic (floor only when steady, i.e. floor = min or 0)
                let (fi, mi, pi) = (i64::from(floor), i64::from(min), i64::from(peak));
                if floor == 0 || floor == min {
                    assert_eq!(s.weight, (mi - fi).max(0) as f64 * 0.5);
                    assert_eq!(b.weight, (pi - mi.max(fi)).max(0) as f64 * 0.5);
                }
                // recommend's arithmetic (floor at most the peak)
                if floor <= peak {
                    let steady = min.max(floor).min(peak);
                    assert_eq!(s.weight, 0.5 * f64::from(steady - floor));
                    assert_eq!(b.weight, 0.5 * f64::from(peak - steady));
                }
                assert!(s.steady && !b.steady && s.hours == 100.0);
            }
        }
    }
}

fn member(weight: f64, hours: f64, steady: bool) -> BurstMember {
    BurstMember {
        weight,
        hours,
        steady,
    }
}

#[test]
fn the_issues_pair_reserves_the_long_node_only() {
    // 10 x 30 h and 1 x 700 h, one replica a node: the 700-hour node runs 96% of the
    // month, past a g6.xlarge's 65% break-even; the ten 30-hour nodes do not.
    let busy = burst_profile([member(10.0, 30.0, true), member(1.0, 700.0, true)], 11);
    assert_eq!(busy[0].hours, 700.0);
    assert!(busy[1..].iter().all(|n| (n.hours - 30.0).abs() < 1e-9));
    let r = reserve(&busy, 0.5239, 0.8048);
    assert_eq!(r.nodes, 1);
    assert!((r.on_demand_hours - 300.0).abs() < 1e-9);
    assert!((r.break_even - 0.651).abs() < 1e-3);
}

#[test]
fn a_peak_is_never_reserved() {
    let busy = burst_profile([member(4.0, 730.0, false)], 4);
    assert_eq!(reserve(&busy, 0.1, 1.0).nodes, 0);
    // A node that carries part steady work, part peak, is a peak node.
    let busy = burst_profile([member(1.5, 730.0, true), member(0.5, 730.0, false)], 2);
    assert_eq!(reserve(&busy, 0.1, 1.0).nodes, 1);
}

proptest! {
    #[test]
    fn each_node_hour_is_paid_once_and_reserving_never_costs_more(
        ms in proptest::collection::vec((0.0f64..20.0, 0.0f64..730.0, any::<bool>()), 0..8),
        nodes in 0u32..40,
        ratio in 0.2f64..1.2,
    ) {
        let members: Vec<BurstMember> =
            ms.iter().map(|&(w, h, s)| member(w, h, s)).collect();
        let busy = burst_profile(members.iter().copied(), nodes);
        prop_assert_eq!(busy.len(), nodes as usize);
        let total: f64 = busy.iter().map(|n| n.hours).sum();
        let want = f64::from(nodes)
            * burst_hours(members.iter().map(|m| (m.weight, m.hours)));
        prop_assert!((total - want).abs() <= 1e-6 * want.max(1.0), "{} vs {}", total, want);
        let (od, rsv) = (1.0, ratio);
        let r = reserve(&busy, rsv, od);
        let with = f64::from(r.nodes) * rsv * HOURS_PER_MONTH + r.on_demand_hours * od;
        prop_assert!(with <= total * od + 1e-6, "{} > {}", with, total * od);
    }
}
