//! The labels and taints a GPU pool carries, recommended or declared alike: its segment and
//! capacity type, the GPU taint, and the spot marks its provider puts on spot nodes.

use indexmap::IndexMap;

use super::demand::Segment;
use crate::core::{Capacity, Provider};

pub(super) fn labels_and_taints(
    provider: Provider,
    segment: Segment,
    capacity: Capacity,
) -> (IndexMap<String, String>, Vec<String>) {
    let mut labels = IndexMap::new();
    labels.insert("gpuplan.io/segment".to_owned(), segment.as_str().to_owned());
    labels.insert(
        "gpuplan.io/capacity".to_owned(),
        capacity.as_str().to_owned(),
    );
    let mut taints = vec![
        format!("gpuplan.io/segment={}:NoSchedule", segment.as_str()),
        "nvidia.com/gpu=present:NoSchedule".to_owned(),
    ];
    if capacity.is_evictable() {
        let cloud = crate::cloud::profile(provider);
        taints.extend(cloud.spot_taints.iter().map(|t| (*t).to_owned()));
        for (k, v) in cloud.spot_labels {
            labels.insert((*k).to_owned(), (*v).to_owned());
        }
    }
    (labels, taints)
}
