//! `gpuplan schema`: JSON Schema of the plan format, generated from the plan types, with the
//! names the embedded catalog knows (GPU models, SKUs, regions, quota families) as enums, so
//! an editor completes them and flags a typo before `gpuplan check` does.

use serde_json::{json, Value};

use crate::catalog::Catalog;
use crate::core::{exit, Provider};
use crate::output::Out;
use crate::plan::raw::RawPlan;

/// The names of the embedded catalog, every provider's, sorted.
struct Names {
    gpus: Vec<String>,
    skus: Vec<String>,
    regions: Vec<String>,
    families: Vec<String>,
}

fn names(catalog: &Catalog) -> Names {
    let mut n = Names {
        gpus: catalog
            .gpus
            .values()
            .flat_map(|g| std::iter::once(g.name.clone()).chain(g.aliases.iter().cloned()))
            // The catalog takes a model name in any case; the schema lists the names as
            // written and in lower case.
            .flat_map(|n| [n.to_lowercase(), n])
            .collect(),
        skus: Vec::new(),
        regions: Vec::new(),
        families: Vec::new(),
    };
    for pc in catalog.providers.values() {
        n.skus.extend(
            pc.skus
                .values()
                .filter(|s| !s.retired)
                .map(|s| s.name.clone()),
        );
        n.regions.extend(pc.regions.iter().cloned());
        n.families.extend(
            pc.skus
                .values()
                .flat_map(|s| [s.quota_family.clone(), s.spot_quota().to_owned()]),
        );
    }
    for v in [&mut n.gpus, &mut n.skus, &mut n.regions, &mut n.families] {
        v.sort();
        v.dedup();
    }
    n
}

/// Set `key` (`enum`, or `examples` where the catalog matches more spellings than it lists) on
/// the schema at `path` (a string, or an array's items).
fn constrain(schema: &mut Value, path: &[&str], key: &str, values: &[String]) {
    let mut at = &mut *schema;
    for p in path {
        at = &mut at[*p];
    }
    if at.get("items").is_some() {
        at = &mut at["items"];
    }
    if at.is_object() {
        at[key] = json!(values);
    }
}

pub(crate) fn schema_json() -> String {
    let mut schema = schemars::schema_for!(RawPlan);
    schema.schema.metadata().title = Some("gpuplan plan file (format version 1)".into());
    let mut v = serde_json::to_value(&schema).unwrap_or_default();
    v["properties"]["version"]["const"] = json!(1);
    if let Ok(catalog) = Catalog::embedded(&Provider::ALL) {
        let n = names(&catalog);
        let d = ["definitions"];
        let e = "enum";
        constrain(
            &mut v,
            &[d[0], "Workload", "properties", "gpu_models"],
            e,
            &n.gpus,
        );
        constrain(
            &mut v,
            &[d[0], "Workload", "properties", "skus"],
            e,
            &n.skus,
        );
        constrain(&mut v, &[d[0], "Pool", "properties", "sku"], e, &n.skus);
        constrain(
            &mut v,
            &[d[0], "Pool", "properties", "region"],
            e,
            &n.regions,
        );
        constrain(
            &mut v,
            &[d[0], "PlanMeta", "properties", "regions"],
            e,
            &n.regions,
        );
        constrain(
            &mut v,
            &[d[0], "Quota", "properties", "region"],
            e,
            &n.regions,
        );
        // Quota families match whatever their case and separators: suggested, not required.
        constrain(
            &mut v,
            &[d[0], "Quota", "properties", "family"],
            "examples",
            &n.families,
        );
    }
    serde_json::to_string_pretty(&v).unwrap_or_default() + "\n"
}

pub(crate) fn run(out: &Out) -> super::CmdResult {
    out.stdout(&schema_json());
    Ok(exit::OK)
}
