//! Kubernetes YAML as the tests read it: multi-document files, and CRD schemas to validate
//! objects against.

use serde_yaml::Value;

/// Every non-empty document of a YAML stream.
pub fn docs(text: &str) -> Vec<Value> {
    serde_yaml::Deserializer::from_str(text)
        .map(|d| <Value as serde::Deserialize>::deserialize(d).expect("yaml"))
        .filter(|v| !v.is_null())
        .collect()
}

pub fn json(v: &Value) -> serde_json::Value {
    serde_json::to_value(v).expect("yaml as json")
}

/// The OpenAPI schema of one served version of a CRD in `tests/fixtures/conformance/`.
pub fn crd(file: &str, version: &str) -> jsonschema::Validator {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/conformance")
        .join(file);
    let text = std::fs::read_to_string(path).expect("crd");
    let crd: Value = serde_yaml::from_str(&text).expect("crd yaml");
    let v = crd["spec"]["versions"]
        .as_sequence()
        .and_then(|vs| vs.iter().find(|v| v["name"].as_str() == Some(version)))
        .expect("version");
    jsonschema::validator_for(&json(&v["schema"]["openAPIV3Schema"])).expect("schema")
}
