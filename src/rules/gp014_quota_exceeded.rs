use super::{Cx, Rule};
use crate::core::num;

declare_rule! {
    /// # GP014 quota-exceeded
    ///
    /// ## What it does
    /// Adds up the vCPUs the declared pools can reach at their maximum size, per region and
    /// quota bucket (Azure VM family such as `standardNCADSA100v4Family`, or the regional
    /// `lowPriorityCores` for spot; AWS quota code such as `L-417A185B`, or the separate spot
    /// code `L-7212CCBC`), and flags a total above the known quota: the plan's `[[quota]]`, else the limit
    /// `gpuplan catalog refresh` read from the provider (compute usages, Service Quotas).
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
    pub(crate) struct QuotaExceeded { id: GP014, name: "quota-exceeded", severity: Error }
}

impl Rule for QuotaExceeded {
    fn check(&self, cx: &mut Cx<'_>) {
        let draws = crate::engine::quota::draws(cx.plan.pools().iter().filter_map(|pool| {
            Some(crate::engine::quota::Drawing {
                sku: cx.pool_sku(pool)?,
                region: pool.region.get(),
                capacity: pool.capacity(),
                max_nodes: pool.nodes().max() as f64,
                name: pool.name.get(),
            })
        }));
        for crate::engine::quota::Draw {
            region,
            family,
            vcpus,
            pools,
        } in &draws
        {
            // The plan's stated quota, at its own line; else the one a refresh read from the
            // provider, at the first pool's nodes.
            let stated = cx.plan.stated_quota(region, family);
            let (limit, span, from, family) = match stated {
                Some(q) => (
                    *q.vcpus.get(),
                    q.vcpus.span(),
                    String::new(),
                    q.family.get().as_str(),
                ),
                None => {
                    let Some(q) = cx
                        .catalog
                        .provider(cx.plan.provider())
                        .and_then(|pc| pc.quota(region, family))
                    else {
                        continue;
                    };
                    let Some(first) = cx.plan.pool(pools[0]) else {
                        continue;
                    };
                    (
                        q.limit,
                        first.nodes.span(),
                        format!(" read from the provider ({})", q.describe()),
                        family.as_str(),
                    )
                }
            };
            if *vcpus <= limit {
                continue;
            }
            let mut d = cx
                .finding(
                    span,
                    format!(
                        "pools {} can reach {} vCPUs of `{family}` in `{region}`, above the quota of {}{from}",
                        pools
                            .iter()
                            .map(|p| format!("`{p}`"))
                            .collect::<Vec<_>>()
                            .join(", "),
                        num(*vcpus),
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
    use crate::catalog::quota_key;

    #[test]
    fn family_names_compare_loosely() {
        assert_eq!(
            quota_key("StandardNCADSA100v4Family"),
            quota_key("standardNCADSA100v4Family")
        );
        assert_eq!(
            quota_key("standard NCASv3_T4 Family"),
            quota_key("standardNCASv3T4Family")
        );
    }
}
