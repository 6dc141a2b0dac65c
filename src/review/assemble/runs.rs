//! Runs: a pod name used again is a new pod (JupyterHub's `jupyter-<user>` each working
//! day, a StatefulSet pod recreated on another node, a fixed-name Job rerun).

use std::collections::{BTreeMap, BTreeSet};

use super::requests::PodReq;

/// A run by its pod name and start (Unix seconds).
pub(super) type RunOf = ((String, String), i64);

/// One run of a pod name: the windows `[from, to)` it owns and the node that held it longest
/// in them (none while it only waited).
#[derive(Debug, Clone, PartialEq)]
pub(super) struct RunSpan {
    pub(super) from: u32,
    pub(super) to: u32,
    pub(super) node: Option<String>,
}

/// The runs of one pod name, in window order, partitioning all windows. A new run starts
/// where the `uid` changes; where either side has no `uid`, where the node changes or the
/// name was absent from two or more windows that hold kube-state-metrics samples (one such
/// window is a scrape jittered across a boundary).
pub(super) fn runs(r: &PodReq, node_names: &[String], sampled: &BTreeSet<u32>) -> Vec<RunSpan> {
    let mut starts: Vec<u32> = Vec::new();
    let (mut uid, mut node, mut last): (Option<u32>, Option<u32>, Option<u32>) = (None, None, None);
    for k in r.any.keys() {
        let (u, n) = (r.uid_at.get(&k).copied(), r.node_at.get(&k).copied());
        let new = match (last, uid, u) {
            (None, _, _) => true,
            (Some(_), Some(a), Some(b)) => a != b,
            (Some(l), _, _) => {
                node.zip(n).is_some_and(|(a, b)| a != b) || sampled.range(l + 1..k).nth(1).is_some()
            }
        };
        if new {
            starts.push(k);
            node = None;
            uid = None;
        }
        uid = u.or(uid);
        node = n.or(node);
        last = Some(k);
    }
    let mut out: Vec<RunSpan> = Vec::with_capacity(starts.len().max(1));
    for (i, from) in starts.iter().enumerate() {
        let to = starts.get(i + 1).copied().unwrap_or(u32::MAX);
        let mut held: BTreeMap<u32, usize> = BTreeMap::new();
        for (_, n) in r.node_at.range(*from, to) {
            *held.entry(*n).or_default() += 1;
        }
        let node = held
            .into_iter()
            .max_by_key(|(n, c)| (*c, std::cmp::Reverse(*n)))
            .map(|(n, _)| node_names[n as usize].clone());
        out.push(RunSpan {
            from: if i == 0 { 0 } else { *from },
            to,
            node,
        });
    }
    if out.is_empty() {
        out.push(RunSpan {
            from: 0,
            to: u32::MAX,
            node: r.node.clone(),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{runs, PodReq};
    use std::collections::BTreeSet;

    /// A name's requests at `windows`, on node index `node(k)` and uid index `uid(k)`.
    fn req(
        windows: impl Iterator<Item = u32>,
        node: impl Fn(u32) -> Option<u32>,
        uid: impl Fn(u32) -> Option<u32>,
    ) -> PodReq {
        let mut r = PodReq::default();
        for k in windows {
            r.any.insert(k, 1.0);
            if let Some(n) = node(k) {
                r.node_at.insert(k, n);
            }
            if let Some(u) = uid(k) {
                r.uid_at.insert(k, u);
            }
        }
        r
    }

    fn starts(r: &PodReq, sampled: &BTreeSet<u32>) -> Vec<(u32, Option<String>)> {
        let names = ["a".to_owned(), "b".to_owned()];
        runs(r, &names, sampled)
            .into_iter()
            .map(|s| (s.from, s.node))
            .collect()
    }

    #[test]
    fn a_new_uid_node_or_start_is_a_new_run() {
        let all: BTreeSet<u32> = (0..100).collect();
        // One uid throughout, even across a gap and (impossibly) a node change: one run.
        let r = req(
            (0..10).chain(50..60),
            |k| Some(u32::from(k >= 50)),
            |_| Some(0),
        );
        assert_eq!(starts(&r, &all), vec![(0, Some("a".into()))]);
        // A new uid on the same node, no gap: two runs.
        let r = req(0..20, |_| Some(0), |k| Some(u32::from(k >= 10)));
        assert_eq!(
            starts(&r, &all),
            vec![(0, Some("a".into())), (10, Some("a".into()))]
        );
        // No uid: a new node is a new run, and so is a start after two sampled windows
        // without the name; one missing window (a jittered scrape) is not.
        let r = req((0..10).chain(11..20).chain(22..30), |_| Some(0), |_| None);
        assert_eq!(
            starts(&r, &all),
            vec![(0, Some("a".into())), (22, Some("a".into()))]
        );
        let r = req(0..20, |k| Some(u32::from(k >= 12)), |_| None);
        assert_eq!(
            starts(&r, &all),
            vec![(0, Some("a".into())), (12, Some("b".into()))]
        );
        // A gap the scrapes did not see (no samples at all) ends nothing.
        let sparse: BTreeSet<u32> = (0..10).chain(40..50).collect();
        let r = req((0..10).chain(40..50), |_| Some(0), |_| None);
        assert_eq!(starts(&r, &sparse), vec![(0, Some("a".into()))]);
    }
}
