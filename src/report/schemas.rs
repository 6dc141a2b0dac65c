//! The JSON Schemas of gpuplan's JSON outputs (`gpuplan schema --output NAME`), generated from
//! the very types each output is serialised from, so a schema cannot drift from its output.
//! Every object is closed (`additionalProperties: false`): a key gpuplan adds appears in the
//! schema, and a consumer's validator sees it.

use schemars::JsonSchema;
use serde_json::{json, Value};

use crate::catalog::Catalog;
use crate::core::Provider;
use crate::plan::RawPlan;

/// A JSON output with a published schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Output {
    /// The plan file (for editors)
    Plan,
    /// `check --format json`
    Findings,
    /// `recommend --format json`
    Recommendation,
    /// `review --format json`
    Review,
    /// `diff --format json`
    Diff,
    /// `render`'s purchases.json
    Purchases,
    /// `explain --format json`
    Rules,
    /// `catalog --format json`
    Catalog,
    /// `catalog --gpu NAME --format json`
    CatalogGpu,
    /// `catalog --sku NAME --format json`
    CatalogSku,
    /// `check --write-baseline FILE`
    Baseline,
}

impl Output {
    /// The value of the output's `schema` key.
    pub fn id(self) -> &'static str {
        match self {
            Output::Plan => "gpuplan.plan/v1",
            Output::Findings => super::findings::SCHEMA,
            Output::Recommendation => crate::engine::recommend::SCHEMA,
            Output::Review => crate::review::analysis::SCHEMA,
            Output::Diff => crate::engine::diff::SCHEMA,
            Output::Purchases => crate::engine::purchases::SCHEMA,
            Output::Rules => crate::rules::RULE_DOCS_SCHEMA,
            Output::Catalog => super::catalog::CATALOG_SCHEMA,
            Output::CatalogGpu => super::catalog::GPU_SCHEMA,
            Output::CatalogSku => super::catalog::SKU_SCHEMA,
            Output::Baseline => crate::diag::baseline::SCHEMA,
        }
    }

    /// The output whose `schema` key is `id`.
    pub fn of_id(id: &str) -> Option<Output> {
        [
            Output::Findings,
            Output::Recommendation,
            Output::Review,
            Output::Diff,
            Output::Purchases,
            Output::Rules,
            Output::Catalog,
            Output::CatalogGpu,
            Output::CatalogSku,
            Output::Baseline,
        ]
        .into_iter()
        .find(|o| o.id() == id)
    }
}

/// The schema of `output`, as a JSON value.
pub fn schema(output: Output) -> Value {
    let root = match output {
        Output::Plan => return plan_schema(),
        Output::Findings => generated::<super::findings::Findings>(),
        Output::Recommendation => generated::<crate::engine::recommend::Recommendation>(),
        Output::Review => generated::<crate::review::Review>(),
        Output::Diff => generated::<crate::engine::diff::Diff>(),
        Output::Purchases => generated::<crate::engine::purchases::Purchases>(),
        Output::Rules => generated::<crate::rules::RuleDocs>(),
        Output::Catalog => generated::<super::catalog::CatalogDoc>(),
        Output::CatalogGpu => generated::<super::catalog::Versioned<&crate::catalog::GpuModel>>(),
        Output::CatalogSku => generated::<super::catalog::Versioned<super::catalog::SkuDoc>>(),
        Output::Baseline => generated::<crate::diag::baseline::Baseline>(),
    };
    let mut v = serde_json::to_value(root).unwrap_or_default();
    v["$id"] = json!(format!(
        "https://gpuplan.dev/schemas/{}.json",
        output.id().replace('/', "-")
    ));
    v["title"] = json!(output.id());
    v["properties"]["schema"] = json!({ "const": output.id() });
    close(&mut v);
    v
}

fn generated<T: JsonSchema>() -> schemars::schema::RootSchema {
    schemars::gen::SchemaSettings::draft07()
        .into_generator()
        .into_root_schema_for::<T>()
}

/// Every object schema that lists its properties admits no others.
fn close(v: &mut Value) {
    match v {
        Value::Object(m) => {
            if m.contains_key("properties") && !m.contains_key("additionalProperties") {
                m.insert("additionalProperties".into(), Value::Bool(false));
            }
            m.values_mut().for_each(close);
        }
        Value::Array(a) => a.iter_mut().for_each(close),
        _ => {}
    }
}

// The plan file's schema: generated from the plan types, with the embedded catalog's names
// (GPU models, SKUs, regions, quota families) as enums, so an editor completes them and flags
// a typo before `gpuplan check` does.

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

pub(crate) fn plan_schema_text() -> String {
    serde_json::to_string_pretty(&plan_schema()).unwrap_or_default() + "\n"
}

/// The plan format's schema with the embedded catalog's names.
pub(crate) fn plan_schema() -> Value {
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
    bound(&mut v);
    exclusive(&mut v);
    v
}

/// The loader's bounds ([`crate::plan::limits::PLACES`]) on the keys that carry them, so an
/// editor refuses what `check` refuses at load.
fn bound(v: &mut Value) {
    use crate::plan::limits::{Bound, PLACES};
    for (ty, key, b) in PLACES {
        let prop = &mut v["definitions"][*ty]["properties"][*key];
        if !prop.is_object() {
            continue;
        }
        // A list or a map bounds its elements; a count its two spellings.
        let target = if prop.get("items").is_some() {
            &mut prop["items"]
        } else if prop["additionalProperties"].is_object() {
            &mut prop["additionalProperties"]
        } else {
            prop
        };
        match b {
            Bound::Real(r) => real(target, *r),
            Bound::Int(i) => {
                target["minimum"] = json!(i.lo);
                target["maximum"] = json!(i.hi);
            }
            Bound::Count(c) => {
                target["minimum"] = json!(c.fixed_min);
                target["maximum"] = json!(c.max_cap);
                target["properties"] = json!({
                    "min": { "minimum": c.min_floor, "maximum": c.max_cap },
                    "max": { "minimum": 1, "maximum": c.max_cap },
                });
            }
            Bound::Name => {
                target["pattern"] = json!(crate::plan::limits::NAME_PATTERN);
                target["maxLength"] = json!(crate::plan::limits::NAME_MAX);
            }
            Bound::Guid => target["pattern"] = json!(crate::plan::limits::GUID_PATTERN),
            Bound::Rule => {
                target["enum"] = json!(crate::rules::RULES
                    .iter()
                    .map(|r| r.id())
                    .collect::<Vec<_>>());
            }
        }
    }
}

fn exclusive(v: &mut Value) {
    for (ty, a, b) in crate::plan::limits::EXCLUSIVE {
        v["definitions"][*ty]["not"] = json!({ "required": [a, b] });
    }
}

fn real(target: &mut Value, r: crate::plan::limits::Real) {
    let end = |incl: bool, closed: &str, open: &str| {
        if incl {
            closed.to_owned()
        } else {
            open.to_owned()
        }
    };
    if r.lo.is_finite() {
        target[end(r.lo_incl, "minimum", "exclusiveMinimum")] = json!(r.lo);
    }
    if r.hi.is_finite() {
        target[end(r.hi_incl, "maximum", "exclusiveMaximum")] = json!(r.hi);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_output_schema_is_closed_and_names_its_output() {
        for o in [
            Output::Findings,
            Output::Recommendation,
            Output::Review,
            Output::Diff,
        ] {
            let s = schema(o);
            assert_eq!(s["properties"]["schema"]["const"], o.id());
            assert_eq!(s["additionalProperties"], false, "{o:?}");
            assert!(jsonschema::validator_for(&s).is_ok(), "{o:?}");
            assert_eq!(Output::of_id(o.id()), Some(o));
        }
    }
}
