use indexmap::IndexMap;

use super::{num, Cx, Rule};
use crate::plan::raw::Capacity;

declare_rule! {
    /// # GP014 quota-exceeded
    ///
    /// ## What it does
    /// Adds up the vCPUs the declared pools can reach at their maximum size, per region and
    /// quota bucket (Azure VM family such as `standardNCADSA100v4Family`, or the regional
    /// `lowPriorityCores` for spot; AWS quota code such as `L-417A185B`, or the separate spot
    /// code `L-7212CCBC`), and flags a total above the known `[[quota]]`.
    ///
    /// ## Why is this bad?
    /// The autoscaler asks for a node, the provider refuses, and the pods stay Pending exactly
    /// when demand peaks. GPU quotas are counted in vCPUs, per region, are often 0 on new
    /// subscriptions and accounts, and take days to raise.
    ///
    /// ## Example
    /// ```toml
    /// [[quota]]
    /// region = "eastus"
    /// family = "standardNCADSA100v4Family"
    /// vcpus = 96             # 4 x NC24ads_A100_v4
    /// # ... a pool with nodes = { min = 0, max = 8 } of Standard_NC24ads_A100_v4 (192 vCPUs)
    /// ```
    /// Use instead: request more quota before merging, or cap `nodes.max` at the quota.
    ///
    /// ## Source
    /// Azure compute usages API; AWS Service Quotas (reference provider-apis §3a, §4b).
    pub struct QuotaExceeded { id: "GP014", name: "quota-exceeded", severity: Error }
}

/// Azure spells family names differently in usages and SKU listings.
fn norm(s: &str) -> String {
    s.chars()
        .filter(|c| !matches!(c, ' ' | '-' | '_'))
        .collect::<String>()
        .to_lowercase()
}

impl Rule for QuotaExceeded {
    fn check(&self, cx: &mut Cx<'_>) {
        let mut need: IndexMap<(String, String), (f64, Vec<&str>)> = IndexMap::new();
        for pool in cx.plan.pools() {
            let Some(sku) = cx.pool_sku(pool) else {
                continue;
            };
            let family = if pool.capacity() == Capacity::Spot {
                sku.spot_quota()
            } else {
                sku.quota_family.as_str()
            };
            let e = need
                .entry((pool.region.get().clone(), norm(family)))
                .or_default();
            e.0 += f64::from(sku.vcpus) * pool.nodes().max() as f64;
            e.1.push(pool.name.get());
        }
        for q in &cx.plan.raw.quota {
            let key = (q.region.get().clone(), norm(q.family.get()));
            let Some((vcpus, pools)) = need.get(&key) else {
                continue;
            };
            let limit = *q.vcpus.get();
            if *vcpus <= limit {
                continue;
            }
            let mut d = cx
                .finding(
                    q.vcpus.span(),
                    format!(
                        "pools {} can reach {} vCPUs of `{}` in `{}`, above the quota of {}",
                        pools
                            .iter()
                            .map(|p| format!("`{p}`"))
                            .collect::<Vec<_>>()
                            .join(", "),
                        num(*vcpus),
                        q.family.get(),
                        q.region.get(),
                        num(limit)
                    ),
                )
                .label("quota")
                .help("request a quota increase before these pools need it, or lower `nodes.max`");
            for p in pools {
                if let Some(pool) = cx.plan.pool(p) {
                    d = d.also(pool.nodes.span(), format!("`{p}` nodes"));
                }
            }
            if let [only] = pools.as_slice() {
                d = d.pool(only);
            }
            cx.push(d);
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn family_names_compare_loosely() {
        assert_eq!(
            super::norm("StandardNCADSA100v4Family"),
            super::norm("standardNCADSA100v4Family")
        );
        assert_eq!(
            super::norm("standard NCASv3_T4 Family"),
            super::norm("standardNCASv3T4Family")
        );
    }
}
