//! Requests: each pod name's GPU requests by container and resource per window, the node
//! and `uid` each window names.

use std::collections::BTreeMap;

use super::columns::col;
use crate::catalog::Catalog;
use crate::review::query::{Answers, Row, Q};
use crate::review::timeline::Timeline;

/// Entries by name in name order: a pod has a container or two, each a resource or two, and
/// a B-tree map allocates room for eleven at its first.
pub(super) type ByName<V> = Vec<(String, V)>;

/// The entry of `by` named `k`, added at its place in name order when absent.
fn named<'a, V: Default>(by: &'a mut ByName<V>, k: &str) -> &'a mut V {
    let i = match by.binary_search_by(|(n, _)| n.as_str().cmp(k)) {
        Ok(i) => i,
        Err(i) => {
            by.insert(i, (k.to_owned(), V::default()));
            i
        }
    };
    &mut by[i].1
}

/// A pod's containers, by kind, per window: (node, GPUs of one unit each, avg requested).
#[derive(Default)]
pub(super) struct PodReq {
    pub(super) node: Option<String>,
    /// The node each window's requests name (an index into the node names): a pod name can
    /// run on two nodes one after the other (a StatefulSet pod recreated elsewhere), and each
    /// node holds it for its own time. An index, not the name: one per pod-window.
    pub(super) node_at: Timeline<u32, u32>,
    /// The pod's `uid` each window's requests name (an index into `uids`), where
    /// kube-state-metrics exports it: a new one is a new pod of the same name.
    pub(super) uid_at: Timeline<u32, u32>,
    pub(super) uids: Vec<String>,
    /// container -> resource -> window -> avg (scheduled rows only)
    pub(super) app: ByName<ByName<Row>>,
    pub(super) init: ByName<ByName<Row>>,
    /// Requests per window of any row (scheduled or not), for Pending demand, in GPUs (a MIG
    /// profile counts as its share of one).
    pub(super) any: Row,
    /// The GPU resources of those rows, in name order.
    pub(super) any_resources: Vec<String>,
}

/// Each pod's requests by container and resource, the node it ran on per window and longest,
/// and the node names those windows index.
pub(super) fn requests(
    a: &Answers,
    catalog: &Catalog,
    has_phase: bool,
) -> (BTreeMap<(String, String), PodReq>, Vec<String>) {
    let mut reqs: BTreeMap<(String, String), PodReq> = BTreeMap::new();
    let mut node_names: Vec<String> = Vec::new();
    let mut node_ids: BTreeMap<String, u32> = BTreeMap::new();
    for (q, init) in [(Q::Requests, false), (Q::InitRequests, true)] {
        for (g, w) in a.get(q) {
            let (ns, pod, container, node, res) = (
                &g[col(q, "namespace")],
                &g[col(q, "pod")],
                &g[col(q, "container")],
                &g[col(q, "node")],
                &g[col(q, "resource")],
            );
            if ns.is_empty() || pod.is_empty() {
                continue;
            }
            let r = reqs.entry((ns.clone(), pod.clone())).or_default();
            let uid = &g[col(q, "uid")];
            if !uid.is_empty() {
                let id = match r.uids.iter().position(|u| u == uid) {
                    Some(i) => i,
                    None => {
                        r.uids.push(uid.clone());
                        r.uids.len() - 1
                    }
                } as u32;
                for k in w.keys() {
                    r.uid_at.insert(k, id);
                }
            }
            // A Pending MIG request is its profile's share of a GPU (2g.20gb: 2/7), as a
            // running one is; `nvidia.com/gpu` takes its node's replica share below.
            let mig_share = if res == "nvidia_com_gpu" {
                1.0
            } else {
                crate::review::telemetry::resource_share(catalog, res).unwrap_or(1.0)
            };
            for (k, v) in w {
                let v = *v * mig_share;
                r.any.update(k, |e| e.unwrap_or_default().max(v));
            }
            if let Err(i) = r.any_resources.binary_search(res) {
                r.any_resources.insert(i, res.clone());
            }
            if node.is_empty() && has_phase {
                continue;
            }
            if !node.is_empty() {
                let id = *node_ids.entry(node.clone()).or_insert_with(|| {
                    node_names.push(node.clone());
                    (node_names.len() - 1) as u32
                });
                for k in w.keys() {
                    r.node_at.insert(k, id);
                }
            }
            let by = if init { &mut r.init } else { &mut r.app };
            let e = named(named(by, container), res);
            for (k, v) in w {
                e.update(k, |x| x.unwrap_or_default().max(*v));
            }
        }
    }
    // A pod's node is the one that held it longest (its usage and pool follow it); each
    // window's allocation goes to the node of that window.
    for r in reqs.values_mut() {
        let mut held: BTreeMap<&String, usize> = BTreeMap::new();
        for n in r.node_at.values() {
            *held.entry(&node_names[*n as usize]).or_default() += 1;
        }
        r.node = held
            .into_iter()
            .max_by_key(|(_, c)| *c)
            .map(|(n, _)| n.clone());
    }
    (reqs, node_names)
}
