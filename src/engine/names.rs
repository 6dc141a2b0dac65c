//! Names gpuplan gives what it creates, in one place: render uses them to create node pools,
//! and the review to recognise the nodes of those pools, so the two never disagree.

use crate::engine::recommend::RecPool;

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

/// The AKS node pool name of the `index`-th pool render writes: AKS Linux node pool names
/// are lowercase letters and digits, start with a letter and have at most 12 characters
/// (azurerm `kubernetes_cluster_node_pool.name`), so a plan's pool name (a DNS-1123 label of
/// up to 63) cannot be used. The name is the segment, the GPU and a number, all from fixed
/// vocabularies; nodes carry it as `kubernetes.azure.com/agentpool`. A pool render splits
/// into several node pools (one per MIG filling) numbers them `index * 10 + k`.
pub(crate) fn aks_pool(p: &RecPool, index: usize) -> String {
    let gpu: String = p
        .gpu_model
        .to_ascii_lowercase()
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .take(5)
        .collect();
    let mut n = format!("{}{}{:02}", segment_abbrev(p.segment), gpu, index + 1);
    n.truncate(12);
    n
}

/// The node pool a split part of pool `name` is called (EKS node groups, Karpenter
/// NodePools, Terraform resources): the pool's name, and `name-k` for the `k`-th of several.
pub(crate) fn part(name: &str, k: usize, parts: usize) -> String {
    if parts <= 1 {
        name.to_owned()
    } else {
        format!("{name}-{}", k + 1)
    }
}

/// Every node-pool name render gives `pools` (the recommendation or the declared pools, in
/// their order), with the pool each names: what the review matches a node's labels against.
pub(crate) fn node_pool_names(pools: &[RecPool]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (i, p) in pools.iter().enumerate() {
        out.push((aks_pool(p, i), p.name.clone()));
        out.push((p.name.clone(), p.name.clone()));
        // A pool split per MIG filling (at most ten fillings a pool).
        for k in 0..10 {
            out.push((aks_pool(p, i * 10 + k), p.name.clone()));
            out.push((part(&p.name, k, 2), p.name.clone()));
        }
    }
    out
}
