//! What a generated document lacks for its readers, added from data the app gives: a realistic
//! example on every component schema (so that Swagger UI's "Try it out" sends a sensible body
//! rather than random text, and generated docs and clients show real shapes), a description on
//! every operation whose doc comment has only a summary, and the tags declared with what each
//! covers.

use serde_json::{Map, Value, json};

/// Declares every tag an operation uses, and describes the operations that have no
/// description of their own: `texts` is `{"tags": {name: text}, "operations": {id: text}}`.
pub fn describe(doc: &mut Value, texts: &Value) {
    let mut used = std::collections::BTreeSet::new();
    for (_, _, operation) in crate::document::operations_mut(doc) {
        for tag in operation["tags"].as_array().into_iter().flatten() {
            used.insert(tag.as_str().unwrap_or_default().to_owned());
        }
        let id = operation["operationId"].as_str().unwrap_or_default();
        let given = operation["description"]
            .as_str()
            .is_some_and(|d| !d.is_empty());
        if let (false, Some(text)) = (given, texts["operations"][id].as_str()) {
            operation["description"] = json!(text);
        }
    }
    let tags: Vec<Value> = used
        .into_iter()
        .map(|name| {
            let about = texts["tags"][&name]
                .as_str()
                .unwrap_or("Operations of this group.");
            json!({"name": name, "description": about})
        })
        .collect();
    doc["tags"] = json!(tags);
}

/// Sets `example` on every schema under `components/schemas`: the leaves' from `given` (schema
/// name to example), lists and envelopes composed from their members' (one item each, the
/// first page's paging).
pub fn examples(doc: &mut Value, given: &Map<String, Value>) {
    let mut made = given.clone();
    let Some(schemas) = doc
        .pointer_mut("/components/schemas")
        .and_then(Value::as_object_mut)
    else {
        return;
    };
    // Envelopes nest (a list of items with a member of their own): a few passes compose them.
    for _ in 0..4 {
        for (name, schema) in schemas.iter() {
            if !made.contains_key(name)
                && let Some(example) = compose(schema, &made)
            {
                made.insert(name.clone(), example);
            }
        }
    }
    for (name, schema) in schemas.iter_mut() {
        if let (Some(example), Some(schema)) = (made.get(name), schema.as_object_mut()) {
            schema.insert("example".to_owned(), example.clone());
        }
    }
}

fn reference(schema: &Value) -> Option<&str> {
    schema.get("$ref")?.as_str()?.rsplit('/').next()
}

/// An object's example from its members': referenced schemas by their examples, arrays of
/// them as one item, and the paging members of a first page.
fn compose(schema: &Value, made: &Map<String, Value>) -> Option<Value> {
    let members = schema.get("properties")?.as_object()?;
    let mut out = Map::new();
    for (name, member) in members {
        let value = if let Some(target) = reference(member) {
            made.get(target)?.clone()
        } else if member.get("type") == Some(&json!("array")) {
            json!([made.get(reference(member.get("items")?)?)?])
        } else {
            match name.as_str() {
                "limit" => json!(20),
                "offset" => json!(0),
                "total" => json!(1),
                "has_more" => json!(false),
                "next_offset" | "next_cursor" => Value::Null,
                _ => return None,
            }
        };
        out.insert(name.clone(), value);
    }
    Some(Value::Object(out))
}
