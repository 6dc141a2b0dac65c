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

/// The AKS name of node pool `node_pool` of pool `p`, try `salt`: its segment and GPU from
/// fixed vocabularies (a plan's pool name, a DNS-1123 label of up to 63, is too long for
/// AKS), then base-36 digits of a hash of the node pool's own name to 12 characters. A
/// function of what it names, never of a position: adding, removing or reordering other
/// pools renames nothing (azurerm replaces an agent pool whose name changes).
fn aks_candidate(p: &RecPool, node_pool: &str, salt: u32) -> String {
    let gpu: String = p
        .gpu_model
        .to_ascii_lowercase()
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .take(5)
        .collect();
    let mut n = format!("{}{}", p.segment.aks_abbrev(), gpu);
    let key = if salt == 0 {
        node_pool.to_owned()
    } else {
        format!("{node_pool}#{salt}")
    };
    let mut h = fnv1a(key.as_bytes());
    while n.len() < AKS_NAME_MAX {
        let d = u32::try_from(h % 36).unwrap_or(0);
        n.push(char::from_digit(d, 36).unwrap_or('0'));
        h /= 36;
    }
    n
}

/// FNV-1a, 64 bits: a hash whose value is fixed by its definition (std's `DefaultHasher`
/// may change between Rust releases, and these names must not).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
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
/// pools), per pool one entry per node pool, and the names two pools would share. AKS names
/// come from each node pool's own name ([`aks_candidate`]); in the rare case two hash alike
/// (or one's rotation name is another's), the node pool whose own name sorts later takes
/// the next salt, so which one moves is decided by the two names alone, not by their order
/// in the plan.
pub(crate) fn node_pools(pools: &[RecPool]) -> (Vec<Vec<NodePoolName>>, Vec<Collision>) {
    let mut owner: Vec<(String, String)> = Vec::new();
    let mut collisions = Vec::new();
    let mut parts: Vec<(usize, String)> = Vec::new();
    for (i, p) in pools.iter().enumerate() {
        let count = p.node_pool_count();
        for k in 0..count {
            let name = part(&p.name, k, count);
            if let Some((_, first)) = owner.iter().find(|(n, _)| *n == name) {
                collisions.push(Collision {
                    name: name.clone(),
                    first: first.clone(),
                    second: p.name.clone(),
                });
            }
            owner.push((name.clone(), p.name.clone()));
            parts.push((i, name));
        }
    }
    // Names are given in the order of the node pools' own names, so a later name is the one
    // that moves on a clash whatever the plan's order.
    let mut order: Vec<usize> = (0..parts.len()).collect();
    order.sort_by(|a, b| parts[*a].1.cmp(&parts[*b].1).then(a.cmp(b)));
    let mut taken_aks: BTreeSet<String> = BTreeSet::new();
    let mut given: Vec<Option<(String, String)>> = vec![None; parts.len()];
    for j in order {
        let (i, name) = &parts[j];
        let candidate = |salt| {
            let aks = aks_candidate(&pools[*i], name, salt);
            let rotation = rotation_of(&aks);
            (aks, rotation)
        };
        // Bounded: a plan that could exhaust it is refused by its size first.
        let (aks, rotation) = (0..10_000u32)
            .map(candidate)
            .find(|(a, r)| !taken_aks.contains(a) && !taken_aks.contains(r))
            .unwrap_or_else(|| candidate(0));
        taken_aks.insert(aks.clone());
        taken_aks.insert(rotation.clone());
        given[j] = Some((aks, rotation));
    }
    let mut out: Vec<Vec<NodePoolName>> = pools.iter().map(|_| Vec::new()).collect();
    for ((i, name), g) in parts.into_iter().zip(given) {
        let (aks, rotation) = g.unwrap_or_default();
        out[i].push(NodePoolName {
            name,
            aks,
            rotation,
        });
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
