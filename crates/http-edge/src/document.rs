//! The OpenAPI document's glue that holds for any route: walking its operations, the route
//! table the 405 `Allow` header is read from, the storage faults every database operation may
//! answer, and a fix of the generator's OpenAPI 3.0 output.

use std::collections::HashMap;

use actix_web::http::Method;
use serde_json::{Value, json};

use crate::error::{PROBLEM_CONTENT_TYPE, PROBLEM_SCHEMA};
use crate::middleware::problems::RouteTable;

const METHODS: [&str; 7] = ["get", "put", "post", "delete", "patch", "head", "options"];

/// Every operation of the document: its path, its method and the operation object.
pub fn operations_mut(doc: &mut Value) -> impl Iterator<Item = (&String, &String, &mut Value)> {
    doc.get_mut("paths")
        .and_then(Value::as_object_mut)
        .into_iter()
        .flat_map(|paths| paths.iter_mut())
        .flat_map(|(path, item)| {
            item.as_object_mut()
                .into_iter()
                .flat_map(|m| m.iter_mut())
                .filter(|(method, _)| METHODS.contains(&method.as_str()))
                .map(move |(method, op)| (path, method, op))
        })
}

/// The operation whose `operationId` is `operation_id`.
pub fn operation_mut<'a>(doc: &'a mut Value, operation_id: &str) -> Option<&'a mut Value> {
    operations_mut(doc)
        .map(|(_, _, op)| op)
        .find(|op| op.get("operationId").and_then(Value::as_str) == Some(operation_id))
}

/// Methods per path pattern of the document (and of the `extra` GET routes it does not
/// describe), for the `Allow` header of 405 answers.
pub fn route_table(doc: &Value, extra: &[&str]) -> RouteTable {
    let mut table: HashMap<String, Vec<Method>> = HashMap::new();
    if let Some(paths) = doc.get("paths").and_then(Value::as_object) {
        for (path, item) in paths {
            let methods = item
                .as_object()
                .into_iter()
                .flat_map(|m| m.keys())
                .filter(|k| METHODS.contains(&k.as_str()))
                .filter_map(|k| Method::from_bytes(k.to_ascii_uppercase().as_bytes()).ok())
                .collect();
            table.insert(path.clone(), with_head(methods));
        }
    }
    for path in extra {
        table.insert((*path).to_owned(), with_head(vec![Method::GET]));
    }
    RouteTable(table)
}

/// HEAD is served wherever GET is (`middleware::head`).
fn with_head(mut methods: Vec<Method>) -> Vec<Method> {
    if methods.contains(&Method::GET) {
        let at = methods
            .iter()
            .position(|m| m == Method::GET)
            .map_or(0, |i| i + 1);
        methods.insert(at, Method::HEAD);
    }
    methods
}

/// Every operation that touches the database may answer 503 (unreachable, busy, read-only or
/// replaced files); every write may also answer 507 (full disk). Both carry `Retry-After`.
/// Documented here once instead of on each handler, so a new route gets it too; the paths in
/// `no_database` never touch the database.
pub fn storage_faults(doc: &mut Value, no_database: &[&str]) {
    let answer = |description: &str| {
        json!({
            "description": description,
            "headers": {"Retry-After": {
                "description": "Seconds to wait before retrying.",
                "schema": {"type": "integer"}
            }},
            "content": {PROBLEM_CONTENT_TYPE: {"schema": {
                "$ref": format!("#/components/schemas/{PROBLEM_SCHEMA}")
            }}}
        })
    };
    let operations =
        operations_mut(doc).filter(|(path, _, _)| !no_database.contains(&path.as_str()));
    for (_, method, op) in operations {
        let Some(responses) = op.get_mut("responses").and_then(Value::as_object_mut) else {
            continue;
        };
        responses.insert(
            "503".to_owned(),
            answer(
                "The database is unavailable, busy or refuses writes (service-unavailable, \
                 storage-unavailable); nothing was written.",
            ),
        );
        if matches!(method.as_str(), "post" | "put" | "patch" | "delete") {
            responses.insert(
                "507".to_owned(),
                answer("The database's disk is full (insufficient-storage); nothing was written."),
            );
        }
    }
}

/// OpenAPI 3.0 has no `null` type: the generator writes an optional enum as
/// `anyOf: [{$ref}, {nullable: true, enum: [null]}]`, whose second branch has `nullable`
/// without a `type` (invalid: `nullable` qualifies a type). A branch that admits only `null`
/// gets a type, which changes nothing it admits.
pub fn type_null_branches(value: &mut Value) {
    match value {
        Value::Object(map) => {
            let null_only = map.get("nullable") == Some(&Value::Bool(true))
                && !map.contains_key("type")
                && map.get("enum") == Some(&json!([null]));
            if null_only {
                map.insert("type".to_owned(), json!("string"));
            }
            map.values_mut().for_each(type_null_branches);
        }
        Value::Array(items) => items.iter_mut().for_each(type_null_branches),
        _ => {}
    }
}

/// What `middleware::limits` answers on every route, before any handler: 413 for a body over
/// `MAX_BODY_BYTES`, 415 for a compressed body or one not sent as JSON. Documented on every
/// operation here, so the document says what the layer does on a route added later too.
pub fn body_limits(doc: &mut Value) {
    let problem = |description: &str| {
        json!({
            "description": description,
            "content": {PROBLEM_CONTENT_TYPE: {"schema": {
                "$ref": format!("#/components/schemas/{PROBLEM_SCHEMA}")
            }}}
        })
    };
    for (_, _, op) in operations_mut(doc) {
        let Some(responses) = op.get_mut("responses").and_then(Value::as_object_mut) else {
            continue;
        };
        responses.entry("413").or_insert_with(|| problem(TOO_LARGE));
        responses
            .entry("415")
            .or_insert_with(|| problem(UNSUPPORTED));
    }
}

/// The 413 of [`body_limits`].
pub const TOO_LARGE: &str = "The body exceeds MAX_BODY_BYTES.";
/// The 415 of [`body_limits`].
pub const UNSUPPORTED: &str = "The body is compressed (a Content-Encoding other than identity) or not sent as \
     application/json.";
