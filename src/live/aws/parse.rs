//! The AWS answers gpuplan reads as documents: a Price List product, and the Spot Instance
//! Advisor file cut to the catalog's types.

/// One `PriceList` entry (a JSON document in a string): (type, kind, USD, note) rows.
pub(crate) fn parse_product(
    text: &str,
) -> Result<Vec<(String, &'static str, f64, String)>, String> {
    use serde_json::Value;
    let v: Value =
        serde_json::from_str(text).map_err(|e| format!("a PriceList entry is not JSON ({e})"))?;
    let Some(sku) = v
        .pointer("/product/attributes/instanceType")
        .and_then(Value::as_str)
    else {
        return Err("a PriceList entry without product.attributes.instanceType".into());
    };
    let usd = |d: &Value| -> Option<(String, f64)> {
        let unit = d.get("unit")?.as_str()?.to_owned();
        let p = d
            .pointer("/pricePerUnit/USD")?
            .as_str()?
            .parse::<f64>()
            .ok()?;
        Some((unit, p))
    };
    let mut out = Vec::new();
    if let Some(terms) = v.pointer("/terms/OnDemand").and_then(Value::as_object) {
        for t in terms.values() {
            for d in t
                .get("priceDimensions")
                .and_then(Value::as_object)
                .into_iter()
                .flat_map(|m| m.values())
            {
                if let Some((unit, p)) = usd(d).filter(|(u, p)| u == "Hrs" && *p > 0.0) {
                    out.push((
                        sku.to_owned(),
                        "consumption",
                        p,
                        format!("OnDemand, per {unit}"),
                    ));
                }
            }
        }
    }
    if let Some(terms) = v.pointer("/terms/Reserved").and_then(Value::as_object) {
        for t in terms.values() {
            let attr = |k: &str| {
                t.pointer(&format!("/termAttributes/{k}"))
                    .and_then(Value::as_str)
                    .unwrap_or("")
            };
            let (kind, hours) = match attr("LeaseContractLength") {
                "1yr" => ("reservation-1y", 8760.0),
                "3yr" => ("reservation-3y", 26_280.0),
                _ => continue,
            };
            if attr("OfferingClass") != "standard" {
                continue;
            }
            let mut total = 0.0;
            for d in t
                .get("priceDimensions")
                .and_then(Value::as_object)
                .into_iter()
                .flat_map(|m| m.values())
            {
                match usd(d) {
                    Some((u, p)) if u == "Hrs" => total += p * hours,
                    Some((u, p)) if u == "Quantity" => total += p,
                    _ => {}
                }
            }
            if total > 0.0 {
                out.push((
                    sku.to_owned(),
                    kind,
                    total,
                    format!("Reserved standard {}, whole term", attr("PurchaseOption")),
                ));
            }
        }
    }
    Ok(out)
}

/// The Spot Instance Advisor file cut to `types` (Linux), in the file's own format.
pub(crate) fn advisor_cut(v: &serde_json::Value, types: &[String]) -> Result<String, String> {
    use serde_json::{Map, Value};
    let (Some(ranges), Some(regions)) = (
        v.get("ranges").filter(|r| r.is_array()),
        v.get("spot_advisor").and_then(Value::as_object),
    ) else {
        return Err("the Spot Instance Advisor file has no `ranges` or `spot_advisor`".into());
    };
    let mut out = Map::new();
    if let Some(g) = v.get("global_rate") {
        out.insert("global_rate".into(), g.clone());
    }
    out.insert("ranges".into(), ranges.clone());
    let mut it = Map::new();
    if let Some(all) = v.get("instance_types").and_then(Value::as_object) {
        for t in types {
            if let Some(x) = all.get(t) {
                it.insert(t.clone(), x.clone());
            }
        }
    }
    out.insert("instance_types".into(), Value::Object(it));
    let mut sa = Map::new();
    let mut names: Vec<&String> = regions.keys().collect();
    names.sort();
    for region in names {
        let Some(linux) = regions[region].get("Linux").and_then(Value::as_object) else {
            continue;
        };
        let mut kept = Map::new();
        for t in types {
            if let Some(e) = linux.get(t) {
                if e.get("r").and_then(Value::as_u64).is_none() {
                    return Err(format!(
                        "the Spot Instance Advisor entry for {t} in {region} has no band index `r`"
                    ));
                }
                kept.insert(t.clone(), e.clone());
            }
        }
        if !kept.is_empty() {
            let mut os = Map::new();
            os.insert("Linux".into(), Value::Object(kept));
            sa.insert(region.clone(), Value::Object(os));
        }
    }
    if sa.is_empty() {
        return Err(
            "the Spot Instance Advisor file lists none of the catalog's instance types".into(),
        );
    }
    out.insert("spot_advisor".into(), Value::Object(sa));
    serde_json::to_string_pretty(&Value::Object(out)).map_err(|e| e.to_string())
}
