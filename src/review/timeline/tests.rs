//! A timeline against the B-tree map it stands in for.

use super::*;
use proptest::prelude::*;
use std::collections::BTreeMap;

#[derive(Debug, Clone)]
enum Op {
    Insert(u32, u8),
    Add(u32, u8),
    Compact,
    Scale,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0u32..300, 0u8..3).prop_map(|(k, v)| Op::Insert(k, v)),
        3 => (0u32..300, 0u8..3).prop_map(|(k, v)| Op::Add(k, v)),
        1 => Just(Op::Compact),
        1 => Just(Op::Scale),
    ]
}

fn check(t: &Timeline<u32, f64>, m: &BTreeMap<u32, f64>) {
    let got: Vec<(u32, f64)> = t.iter().map(|(k, v)| (k, *v)).collect();
    let want: Vec<(u32, f64)> = m.iter().map(|(k, v)| (*k, *v)).collect();
    assert_eq!(got, want);
    assert_eq!(t.len(), m.len());
    for k in 0..310 {
        assert_eq!(t.get(&k), m.get(&k), "key {k}");
    }
    for k in 0..310 {
        let want = m.range(..k).next_back().map(|(k, v)| (*k, *v));
        assert_eq!(t.lower(k).map(|(k, v)| (k, *v)), want, "lower {k}");
        let want = m.range(k..).next().map(|(k, v)| (*k, *v));
        assert_eq!(t.ceil(k).map(|(k, v)| (k, *v)), want, "ceil {k}");
    }
    let (a, b) = (37, 211);
    let got: Vec<(u32, f64)> = t.range(a, b).map(|(k, v)| (k, *v)).collect();
    let want: Vec<(u32, f64)> = m.range(a..b).map(|(k, v)| (*k, *v)).collect();
    assert_eq!(got, want);
    // Runs are ordered and never overlap.
    for w in t.runs.windows(2) {
        assert!(
            w[0].last() < w[1].start,
            "{:?} {:?}",
            w[0].last(),
            w[1].start
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]
    /// Whatever the order of writes, a timeline holds what a B-tree map would.
    #[test]
    fn a_timeline_is_a_map(ops in proptest::collection::vec(op(), 0..400)) {
        let mut t: Timeline<u32, f64> = Timeline::new();
        let mut m: BTreeMap<u32, f64> = BTreeMap::new();
        for o in ops {
            match o {
                Op::Insert(k, v) => {
                    t.insert(k, f64::from(v));
                    m.insert(k, f64::from(v));
                }
                Op::Add(k, v) => {
                    t.add(k, f64::from(v));
                    *m.entry(k).or_default() += f64::from(v);
                }
                Op::Compact => t.compact(),
                Op::Scale => {
                    t.map_values(|v| v * 0.5);
                    m.values_mut().for_each(|v| *v *= 0.5);
                }
            }
            check(&t, &m);
        }
    }

    /// Window starts step by the window: a sparse, strided series round-trips too.
    #[test]
    fn strided_keys_are_a_map(keys in proptest::collection::vec((0i64..200, 0u8..3), 0..300)) {
        let mut t: Timeline<i64, f64> = Timeline::new();
        let mut m: BTreeMap<i64, f64> = BTreeMap::new();
        for (k, v) in keys {
            t.insert(1_780_272_000 + k * 60, f64::from(v));
            m.insert(1_780_272_000 + k * 60, f64::from(v));
        }
        let got: Vec<(i64, f64)> = t.iter().map(|(k, v)| (k, *v)).collect();
        let want: Vec<(i64, f64)> = m.iter().map(|(k, v)| (*k, *v)).collect();
        prop_assert_eq!(got, want);
    }

    #[test]
    fn merge_max_is_the_larger_of_each_key(
        a in proptest::collection::btree_map(0u32..200, 0u8..4, 0..150),
        b in proptest::collection::btree_map(0u32..200, 0u8..4, 0..150),
    ) {
        let mut t: Timeline<u32, f64> = a.iter().map(|(k, v)| (*k, f64::from(*v))).collect();
        t.merge_max(b.iter().map(|(k, v)| (*k, f64::from(*v))).collect());
        let mut m: BTreeMap<u32, f64> = a.iter().map(|(k, v)| (*k, f64::from(*v))).collect();
        for (k, v) in &b {
            let e = m.entry(*k).or_insert(f64::from(*v));
            *e = e.max(f64::from(*v));
        }
        let got: Vec<(u32, f64)> = t.iter().map(|(k, v)| (k, *v)).collect();
        let want: Vec<(u32, f64)> = m.into_iter().collect();
        prop_assert_eq!(got, want);
    }
}

#[test]
fn a_sweep_across_a_constant_run_stays_in_few_runs() {
    let mut t: Timeline<u32, f64> = (0..10_000).map(|k| (k, 60.0)).collect();
    for k in 0..10_000 {
        t.add(k, if k % 3 == 0 { 30.0 } else { 60.0 });
    }
    assert!(t.runs.len() <= 3, "{}", t.runs.len());
    assert_eq!(t.get(&3), Some(&90.0));
    assert_eq!(t.get(&4), Some(&120.0));
    let mut t: Timeline<u32, f64> = (0..10_000).map(|k| (k, 60.0)).collect();
    for k in 0..10_000 {
        t.add(k, 60.0);
    }
    assert_eq!(t.runs.len(), 1);
}

#[test]
fn constant_stretches_take_no_space_per_window() {
    let t: Timeline<u32, f64> = (0..10_800).map(|k| (k, 60.0)).collect();
    assert_eq!(t.runs.len(), 1);
    // A varying stretch, then an idle one: the idle tail becomes a run of its own.
    let t: Timeline<u32, f64> = (0..10_800)
        .map(|k| (k, if k < 100 { f64::from(k % 7) } else { 0.0 }))
        .collect();
    assert_eq!(t.runs.len(), 2);
    assert!(matches!(t.runs[1].data, Data::Const(_)));
    // Every other window (a scrape twice the step) is one strided run.
    let t: Timeline<i64, f64> = (0..5_000).map(|k| (k * 120, 1.0)).collect();
    assert_eq!(t.runs.len(), 1);
}
