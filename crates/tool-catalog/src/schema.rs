//! A tool's answer schema: its `responseSchemaRef` looked up in the API's OpenAPI document and
//! turned into a standalone JSON Schema (2020-12), which MCP clients validate
//! `structuredContent` against.
//!
//! OpenAPI 3.0 schemas are a dialect: `nullable: true` instead of a `null` type, formats such
//! as `int64` that JSON Schema validators do not know, and `$ref`s into
//! `#/components/schemas`. The result has the referenced schema at its root and every schema it
//! reaches, transitively, under `$defs`, with refs rewritten to `#/$defs/<name>`. OpenAPI 3.1
//! documents are JSON Schema already; they pass through the same steps unchanged but for the
//! refs.

use serde_json::{Map, Value};

const COMPONENTS: &str = "#/components/schemas/";

/// Formats JSON Schema defines; any other (`int64`, `uint16`, `double`…) is dropped, since a
/// validator that asserts formats may refuse a schema with one it does not know.
const JSON_SCHEMA_FORMATS: [&str; 12] = [
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "uuid",
    "regex",
];

/// Keywords of OpenAPI's schema object that JSON Schema does not have.
const OPENAPI_ONLY: [&str; 5] = [
    "nullable",
    "discriminator",
    "xml",
    "externalDocs",
    "example",
];

/// Why a `responseSchemaRef` cannot be resolved.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SchemaRefError {
    #[error("{0:?} is not a reference into #/components/schemas")]
    NotAComponent(String),
    #[error("the OpenAPI document has no schema {0:?}")]
    Missing(String),
}

/// The JSON Schema of `reference` (`#/components/schemas/<name>`) in the OpenAPI document
/// `doc`: the named schema at the root, what it refers to under `$defs`.
pub fn resolve(doc: &Value, reference: &str) -> Result<Value, SchemaRefError> {
    let root = component_name(reference)?;
    let mut defs = Map::new();
    let mut pending = vec![root.to_owned()];
    while let Some(name) = pending.pop() {
        if defs.contains_key(&name) {
            continue;
        }
        let schema = doc
            .pointer(&format!("/components/schemas/{}", escape_pointer(&name)))
            .ok_or_else(|| SchemaRefError::Missing(name.clone()))?;
        let mut converted = schema.clone();
        convert(&mut converted, &mut pending)?;
        defs.insert(name, converted);
    }
    // A root that refers to itself stays reachable under its name too.
    let recursive = defs.values().any(|d| refers_to(d, root));
    let root_schema = if recursive {
        defs.get(root).cloned()
    } else {
        defs.remove(root)
    };
    let Some(Value::Object(mut schema)) = root_schema else {
        return Err(SchemaRefError::Missing(root.to_owned()));
    };
    if !defs.is_empty() {
        schema.insert("$defs".into(), Value::Object(defs));
    }
    Ok(Value::Object(schema))
}

fn component_name(reference: &str) -> Result<&str, SchemaRefError> {
    reference
        .strip_prefix(COMPONENTS)
        .filter(|name| !name.is_empty() && !name.contains('/'))
        .ok_or_else(|| SchemaRefError::NotAComponent(reference.to_owned()))
}

/// RFC 6901: `~` and `/` in a pointer token.
fn escape_pointer(name: &str) -> String {
    name.replace('~', "~0").replace('/', "~1")
}

/// Rewrites one OpenAPI schema (and every schema inside it) into JSON Schema in place, queuing
/// the component names it refers to. Only keywords whose values are schemas are descended
/// into, so a property named `nullable` or an `enum` value shaped like a schema stays as it is.
fn convert(schema: &mut Value, refs: &mut Vec<String>) -> Result<(), SchemaRefError> {
    let Value::Object(map) = schema else {
        return Ok(()); // `true`/`false` schemas
    };
    if let Some(Value::String(target)) = map.get("$ref") {
        let name = component_name(target)?.to_owned();
        map.insert("$ref".into(), Value::String(format!("#/$defs/{name}")));
        refs.push(name);
    }
    let nullable = map.get("nullable") == Some(&Value::Bool(true));
    if map
        .get("format")
        .and_then(Value::as_str)
        .is_some_and(|f| !JSON_SCHEMA_FORMATS.contains(&f))
    {
        map.remove("format");
    }
    for keyword in OPENAPI_ONLY {
        map.remove(keyword);
    }
    for (keyword, value) in map.iter_mut() {
        match (keyword.as_str(), value) {
            ("properties" | "patternProperties", Value::Object(named)) => {
                for inner in named.values_mut() {
                    convert(inner, refs)?;
                }
            }
            ("allOf" | "anyOf" | "oneOf" | "prefixItems", Value::Array(list)) => {
                for inner in list {
                    convert(inner, refs)?;
                }
            }
            (
                "items"
                | "additionalProperties"
                | "not"
                | "if"
                | "then"
                | "else"
                | "contains"
                | "propertyNames",
                inner,
            ) => convert(inner, refs)?,
            _ => {}
        }
    }
    if nullable {
        admit_null(map);
    }
    Ok(())
}

/// `nullable: true` in JSON Schema: `null` joins the `type` (and the `enum`), or, for a schema
/// without a `type` (a `$ref`, a combination), the schema becomes `anyOf [it, null]`.
fn admit_null(map: &mut Map<String, Value>) {
    if let Some(Value::Array(values)) = map.get_mut("enum")
        && !values.contains(&Value::Null)
    {
        values.push(Value::Null);
    }
    match map.get_mut("type") {
        Some(Value::String(t)) => {
            let t = std::mem::take(t);
            map.insert("type".into(), Value::Array(vec![t.into(), "null".into()]));
        }
        Some(Value::Array(types)) => {
            if !types.iter().any(|t| t == "null") {
                types.push("null".into());
            }
        }
        _ => {
            let inner = Value::Object(std::mem::take(map));
            map.insert(
                "anyOf".into(),
                Value::Array(vec![inner, serde_json::json!({"type": "null"})]),
            );
        }
    }
}

fn refers_to(schema: &Value, name: &str) -> bool {
    match schema {
        Value::Object(map) => map.iter().any(|(k, v)| {
            (k == "$ref" && v.as_str() == Some(&format!("#/$defs/{name}"))) || refers_to(v, name)
        }),
        Value::Array(items) => items.iter().any(|v| refers_to(v, name)),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn doc() -> Value {
        json!({"openapi": "3.0.3", "components": {"schemas": {
            "Note": {"type": "object", "required": ["id"], "properties": {
                "id": {"type": "integer", "format": "int64"},
                "title": {"type": "string", "nullable": true, "example": "x"},
                "created": {"type": "string", "format": "date-time"},
                "kind": {"type": "string", "enum": ["a", "b"], "nullable": true},
                "tags": {"type": "array", "items": {"$ref": "#/components/schemas/Tag"}},
                "parent": {"$ref": "#/components/schemas/Tag", "nullable": true}
            }},
            "Tag": {"type": "object", "properties": {"name": {"type": "string"},
                "nested": {"$ref": "#/components/schemas/Leaf"}}},
            "Leaf": {"type": "object", "properties": {"enum": {"type": "string"},
                "nullable": {"type": "boolean"}},
                "default": {"$ref": "not a ref"}},
            "Tree": {"type": "object", "properties": {"children": {"type": "array",
                "items": {"$ref": "#/components/schemas/Tree"}}}}
        }}})
    }

    #[test]
    fn the_named_schema_is_the_root_and_what_it_reaches_is_under_defs() {
        let schema = resolve(&doc(), "#/components/schemas/Note").unwrap();
        assert_eq!(schema["type"], "object");
        assert_eq!(schema["properties"]["tags"]["items"]["$ref"], "#/$defs/Tag");
        let defs = schema["$defs"].as_object().unwrap();
        let mut names: Vec<&String> = defs.keys().collect();
        names.sort();
        assert_eq!(names, ["Leaf", "Tag"], "transitively, and only those");
        assert_eq!(defs["Tag"]["properties"]["nested"]["$ref"], "#/$defs/Leaf");
        // Properties named like keywords are schemas; a `default` is data, left as it is.
        assert_eq!(defs["Leaf"]["properties"]["enum"]["type"], "string");
        assert_eq!(defs["Leaf"]["properties"]["nullable"]["type"], "boolean");
        assert_eq!(defs["Leaf"]["default"]["$ref"], "not a ref");
    }

    #[test]
    fn openapi_dialect_becomes_json_schema() {
        let schema = resolve(&doc(), "#/components/schemas/Note").unwrap();
        let p = &schema["properties"];
        assert_eq!(
            p["id"],
            json!({"type": "integer"}),
            "int64 is not a JSON Schema format"
        );
        assert_eq!(p["created"]["format"], "date-time");
        assert_eq!(p["title"], json!({"type": ["string", "null"]}));
        assert_eq!(p["kind"]["enum"], json!(["a", "b", null]));
        assert_eq!(
            p["parent"],
            json!({"anyOf": [{"$ref": "#/$defs/Tag"}, {"type": "null"}]})
        );
    }

    #[test]
    fn a_self_reference_keeps_its_name() {
        let schema = resolve(&doc(), "#/components/schemas/Tree").unwrap();
        assert_eq!(
            schema["properties"]["children"]["items"]["$ref"],
            "#/$defs/Tree"
        );
        assert_eq!(schema["$defs"]["Tree"]["type"], "object");
    }

    #[test]
    fn unresolvable_references_are_errors() {
        assert_eq!(
            resolve(&doc(), "#/components/schemas/Nope"),
            Err(SchemaRefError::Missing("Nope".into()))
        );
        assert!(matches!(
            resolve(&doc(), "#/definitions/Note"),
            Err(SchemaRefError::NotAComponent(_))
        ));
        let broken = json!({"components": {"schemas": {"A": {"$ref": "#/components/schemas/B"}}}});
        assert_eq!(
            resolve(&broken, "#/components/schemas/A"),
            Err(SchemaRefError::Missing("B".into()))
        );
    }
}
