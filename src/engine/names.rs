//! The one authority for every name gpuplan writes into a provider or a cluster: node pools
//! (EKS node groups, Kueue flavors, Terraform resources, Karpenter NodePools), AKS agent
//! pools and their rotation names. Render writes these names, the review recognises nodes by
//! them and `check` refuses a plan whose pools would make two of them the same, so the three
//! never disagree.

use std::collections::BTreeSet;

use crate::engine::recommend::RecPool;

/// AKS Linux agent pool names: lowercase letters and digits, starting with a letter, at most
/// 12 characters (azurerm `kubernetes_cluster_node_pool.name`,
/// `temporary_name_for_rotation`).
pub(crate) const AKS_NAME_MAX: usize = 12;

/// The names of one node pool render writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NodePoolName {
    /// The pool's name, or `name-k` for the `k`-th of several node pools of one pool.
    pub name: String,
    /// Its AKS agent pool name; nodes carry it as `kubernetes.azure.com/agentpool`.
    pub aks: String,
    /// The AKS `temporary_name_for_rotation`, which must not be another pool's name either.
    pub rotation: String,
}

/// Two pools whose node pools would share a name: a plan's pool named like the `k`-th
/// node pool render makes of another (`a-2` beside a pool `a` split in two).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Collision {
    pub name: String,
    /// The pool whose node pool takes the name first, and the pool that repeats it.
    pub first: String,
    pub second: String,
}

/// The segment of a pool as an AKS name begins: three letters at most.
fn segment_abbrev(segment: &str) -> &'static str {
    match segment {
        "serving" => "srv",
        "inference" => "inf",
        "interactive" => "nb",
        "training" => "trn",
        _ => "bat",
    }
}

/// The AKS name numbered `number` for pool `p`: its segment, its GPU and the number, all
/// from fixed vocabularies, since a plan's pool name (a DNS-1123 label of up to 63) is too
/// long for AKS.
fn aks_candidate(p: &RecPool, number: usize) -> String {
    let gpu: String = p
        .gpu_model
        .to_ascii_lowercase()
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .take(5)
        .collect();
    let mut n = format!("{}{}{:02}", segment_abbrev(p.segment), gpu, number);
    n.truncate(AKS_NAME_MAX);
    n
}

/// AKS's rotation name for agent pool `aks`: `tmp` and its last nine characters.
fn rotation_of(aks: &str) -> String {
    let tail: String = aks
        .chars()
        .skip(aks.chars().count().saturating_sub(9))
        .collect();
    format!("tmp{tail}")
}

/// The node pool a split part of pool `name` is called: the pool's name, and `name-k` for
/// the `k`-th of several.
fn part(name: &str, k: usize, parts: usize) -> String {
    if parts <= 1 {
        name.to_owned()
    } else {
        format!("{name}-{}", k + 1)
    }
}

/// Every node pool name render writes for `pools` (the recommendation or the declared
/// pools, in their order), per pool one entry per node pool, and the names two pools would
/// share. AKS names are numbered by position (the `i`-th pool `i + 1`, the `k`-th node pool
/// of a split pool `10 i + k + 1`), and a number whose name or rotation name is taken moves
/// to the next free one, so no two agent pools of a cluster ever share a name (AKS truncation
/// to 12 characters made `srva100802` twice before).
pub(crate) fn node_pools(pools: &[RecPool]) -> (Vec<Vec<NodePoolName>>, Vec<Collision>) {
    let mut taken_aks: BTreeSet<String> = BTreeSet::new();
    let mut owner: Vec<(String, String)> = Vec::new();
    let mut collisions = Vec::new();
    let mut out = Vec::with_capacity(pools.len());
    for (i, p) in pools.iter().enumerate() {
        let parts = p.node_pool_count();
        let mut names = Vec::with_capacity(parts);
        for k in 0..parts {
            let mut number = if parts == 1 { i + 1 } else { i * 10 + k + 1 };
            // Bounded: past the numbers 12 characters can hold, truncated names repeat, and
            // the search must still end (a plan that large is refused by its size first).
            let first = number;
            let (aks, rotation) = loop {
                let aks = aks_candidate(p, number);
                let rotation = rotation_of(&aks);
                let free = !taken_aks.contains(&aks) && !taken_aks.contains(&rotation);
                if free || number - first > 100_000 {
                    break (aks, rotation);
                }
                number += 1;
            };
            taken_aks.insert(aks.clone());
            taken_aks.insert(rotation.clone());
            let name = part(&p.name, k, parts);
            if let Some((_, first)) = owner.iter().find(|(n, _)| *n == name) {
                collisions.push(Collision {
                    name: name.clone(),
                    first: first.clone(),
                    second: p.name.clone(),
                });
            }
            owner.push((name.clone(), p.name.clone()));
            names.push(NodePoolName {
                name,
                aks,
                rotation,
            });
        }
        out.push(names);
    }
    (out, collisions)
}

/// Every node-pool name render gives `pools`, with the pool each names: what the review
/// matches a node's labels against.
pub(crate) fn node_pool_names(pools: &[RecPool]) -> Vec<(String, String)> {
    let (names, _) = node_pools(pools);
    let mut out = Vec::new();
    for (p, ns) in pools.iter().zip(names) {
        for n in ns {
            out.push((n.aks, p.name.clone()));
            out.push((n.name, p.name.clone()));
        }
    }
    out
}
