//! Quota buckets: which bucket a pool's vCPUs draw on, and what pools draw from each at their
//! largest. GP014 on the plan's pools and the recommender (its quota repair, its
//! alternatives, GP014 on the recommended pools) count by these, so a plan's pools and the
//! recommended ones are held to one arithmetic.

use indexmap::IndexMap;

use crate::catalog::{quota_key, Sku};
use crate::core::Capacity;

/// The quota bucket of `capacity` on `sku` in `region`: the region and the VM family (Azure)
/// or quota code (AWS), as the SKU names it; spot draws on a bucket of its own.
pub(crate) fn bucket_of(sku: &Sku, region: &str, capacity: Capacity) -> (String, String) {
    let family = if capacity.is_evictable() {
        sku.spot_quota().to_owned()
    } else {
        sku.quota_family.clone()
    };
    (region.to_owned(), family)
}

/// One bucket's draw at the pools' largest.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Draw<'a> {
    pub region: String,
    /// The family as the first pool's SKU names it.
    pub family: String,
    pub vcpus: f64,
    pub pools: Vec<&'a str>,
}

/// One pool as quota sees it: its SKU, region, capacity type, most nodes and name.
pub(crate) struct Drawing<'a> {
    pub sku: &'a Sku,
    pub region: &'a str,
    pub capacity: Capacity,
    pub max_nodes: f64,
    pub name: &'a str,
}

/// What `pools` draw from each bucket at their largest, in order of first use. Buckets are
/// told apart as the providers tell quota families apart (case-insensitively, `quota_key`).
pub(crate) fn draws<'a>(pools: impl IntoIterator<Item = Drawing<'a>>) -> Vec<Draw<'a>> {
    let mut out: IndexMap<(String, String), Draw<'a>> = IndexMap::new();
    for p in pools {
        let (region, family) = bucket_of(p.sku, p.region, p.capacity);
        let d = out
            .entry((region.clone(), quota_key(&family)))
            .or_insert_with(|| Draw {
                region,
                family,
                vcpus: 0.0,
                pools: Vec::new(),
            });
        d.vcpus += f64::from(p.sku.vcpus) * p.max_nodes;
        d.pools.push(p.name);
    }
    out.into_values().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Catalog;
    use crate::core::Provider;

    #[test]
    fn families_that_differ_in_case_are_one_bucket_and_spot_is_its_own() {
        let c = Catalog::embedded(&[Provider::Azure]).expect("embedded catalog");
        let sku = c
            .sku(Provider::Azure, "Standard_NC24ads_A100_v4")
            .expect("in the catalog");
        let mut shouted = sku.clone();
        shouted.quota_family = sku.quota_family.to_ascii_uppercase();
        let pool = |sku, capacity, name| Drawing {
            sku,
            region: "eastus",
            capacity,
            max_nodes: 2.0,
            name,
        };
        let d = draws([
            pool(sku, Capacity::OnDemand, "a"),
            pool(&shouted, Capacity::Reserved1y, "b"),
            pool(sku, Capacity::Spot, "c"),
        ]);
        assert_eq!(d.len(), 2, "{d:?}");
        assert_eq!(
            d[0].family, sku.quota_family,
            "named as the first pool names it"
        );
        assert_eq!(d[0].pools, ["a", "b"]);
        assert_eq!(d[0].vcpus, 4.0 * f64::from(sku.vcpus));
        assert_eq!(
            d[1].family, "lowPriorityCores",
            "Azure spot's regional bucket"
        );
        assert_eq!(d[1].pools, ["c"]);
    }
}
