//! A check of an object against a CRD version's OpenAPI v3 schema, as far as the API server's
//! structural validation goes for the fields a client sends: types, required fields, enums,
//! minimums, date-times, and no field the schema does not have (the server would drop such a
//! field with a warning; the fake refuses it, so a misspelt field fails a test).

use serde_json::Value;

/// The `openAPIV3Schema` of `version` in a CRD YAML.
pub fn schema(crd_yaml: &str, version: &str) -> Value {
    let crd: Value = serde_saphyr::from_str(crd_yaml).expect("the CRD parses");
    crd["spec"]["versions"]
        .as_array()
        .expect("versions")
        .iter()
        .find(|v| v["name"] == version)
        .expect("the version is served")["schema"]["openAPIV3Schema"]
        .clone()
}

/// What is wrong with `value` under `schema`, each problem with its path.
pub fn problems(schema: &Value, value: &Value) -> Vec<String> {
    let mut found = Vec::new();
    check(schema, value, "", &mut found);
    found
}

fn check(schema: &Value, value: &Value, path: &str, found: &mut Vec<String>) {
    let here = if path.is_empty() { "<root>" } else { path };
    let kind = schema["type"].as_str().unwrap_or("");
    let fits = match kind {
        "object" => value.is_object(),
        "array" => value.is_array(),
        "string" => value.is_string(),
        "integer" => value.is_i64() || value.is_u64(),
        "number" => value.is_number(),
        "boolean" => value.is_boolean(),
        _ => true,
    };
    if !fits {
        found.push(format!("{here}: expected {kind}, got {value}"));
        return;
    }
    if let Some(options) = schema["enum"].as_array() {
        if !options.contains(value) {
            found.push(format!("{here}: {value} is not one of {options:?}"));
        }
    }
    if let (Some(minimum), Some(number)) = (schema["minimum"].as_i64(), value.as_i64()) {
        if number < minimum {
            found.push(format!("{here}: {number} is under {minimum}"));
        }
    }
    if schema["format"] == "date-time" {
        if let Some(text) = value.as_str() {
            if chrono::DateTime::parse_from_rfc3339(text).is_err() {
                found.push(format!("{here}: {text:?} is not an RFC 3339 date-time"));
            }
        }
    }
    if let Some(object) = value.as_object() {
        for key in schema["required"].as_array().into_iter().flatten() {
            let key = key.as_str().unwrap_or_default();
            if !object.contains_key(key) {
                found.push(format!("{path}.{key}: required"));
            }
        }
        let properties = schema["properties"].as_object();
        let free = schema["x-kubernetes-preserve-unknown-fields"] == true;
        for (key, item) in object {
            let at = format!("{path}.{key}");
            match (
                properties.and_then(|p| p.get(key)),
                &schema["additionalProperties"],
            ) {
                (Some(inner), _) => check(inner, item, &at, found),
                (None, Value::Object(_)) => {
                    check(&schema["additionalProperties"], item, &at, found)
                }
                (None, _) if free || properties.is_none() && path.ends_with("metadata") => {}
                (None, _) => found.push(format!("{at}: not a field of the schema")),
            }
        }
    }
    if let (Some(items), Some(array)) = (schema.get("items"), value.as_array()) {
        for (index, item) in array.iter().enumerate() {
            check(items, item, &format!("{path}[{index}]"), found);
        }
    }
}
