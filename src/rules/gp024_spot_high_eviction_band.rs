use super::{Cx, Rule};

declare_rule! {
    /// # GP024 spot-high-eviction-band
    ///
    /// ## What it does
    /// Flags a spot pool on a SKU and region in the highest eviction band (20%+ of nodes
    /// interrupted a month: AWS Spot Instance Advisor `>20%`, Azure SpotResources `20+`).
    /// Azure bands need a live query; with the embedded data they are unknown and this rule
    /// stays silent for Azure.
    ///
    /// ## Why is this bad?
    /// A SKU in the 0-5% band and one in the 20%+ band are not the same proposition: in the
    /// top band a node has roughly even odds of an interruption in two to three months, and
    /// every restart costs node re-acquisition, image pull and weight loading.
    ///
    /// ## Example
    /// ```toml
    /// sku = "p5.48xlarge"
    /// region = "us-east-1"     # >20% in the spot advisor data
    /// capacity = "spot"
    /// ```
    /// Use instead: a region or SKU in a lower band, or on-demand.
    ///
    /// ## Source
    /// AWS Spot Instance Advisor data; Azure Resource Graph SpotResources (reference §2, §4c).
    pub(crate) struct SpotHighEvictionBand { id: GP024, name: "spot-high-eviction-band", severity: Warning }
}

impl Rule for SpotHighEvictionBand {
    fn check(&self, cx: &mut Cx<'_>) {
        let Some(pc) = cx.catalog.provider(cx.plan.provider()) else {
            return;
        };
        for pool in cx.plan.pools() {
            if !pool.capacity().is_evictable() {
                continue;
            }
            let Some(band) = pc.band(pool.sku.get(), pool.region.get()) else {
                continue;
            };
            if band.index < 4 {
                continue;
            }
            let savings = band
                .savings_pct
                .map(|s| format!(", {s}% cheaper than on-demand"))
                .unwrap_or_default();
            cx.push(
                cx.finding(pool.capacity.as_ref().map_or(pool.name.span(), |c| c.span()), format!("spot `{}` in `{}` is in the highest eviction band ({}{savings})", pool.sku.get(), pool.region.get(), band.label))
                    .label("spot")
                    .also(pool.region.span(), "region")
                    .help("pick a region or SKU in a lower band (`gpuplan catalog --sku NAME`), or use on-demand")
                    .pool(pool.name.get()),
            );
        }
    }
}
