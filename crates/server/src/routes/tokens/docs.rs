//! How the OpenAPI document shows the token routes' errors: the refusals this area decides are
//! `{"error": ...}` bodies (schema `TokenError`); the shared layers' 413 and 415 stay problem
//! documents (`http_edge::document::body_limits`). The handlers return
//! [`http_edge::error::ApiError`] like every other route, so the generated responses are
//! problems; [`document_refusals`] rewrites those of the `tokens` operations once the document
//! is built.

use serde_json::{Value, json};

use http_edge::document::operations_mut;

pub const TOKEN_ERROR_SCHEMA: &str = "TokenError";

/// JSON Schema of the token area's error body.
fn token_error_schema() -> Value {
    json!({
        "description": "Error body of the token routes (area D).",
        "type": "object",
        "properties": {"error": {"type": "string"}},
        "required": ["error"]
    })
}

/// Statuses whose body is `{"error": ...}`.
const REFUSALS: [(&str, &str); 5] = [
    (
        "401",
        "`unauthorized`: the X-User-Id header is missing or not an integer.",
    ),
    (
        "403",
        "`forbidden`: X-User-Id is not the path user, or the token belongs to another user.",
    ),
    ("404", "`user not found`, or on revoke `token not found`."),
    ("409", "`token already revoked`."),
    (
        "422",
        "Invalid input, for example `invalid scope, must be read/write/admin`, \
         `name is required`, `token is required`, `token must be a string`, \
         `body must be valid JSON`.",
    ),
];

/// Rewrites the error responses of every operation tagged `tokens` and adds the `TokenError`
/// schema.
pub fn document_refusals(doc: &mut Value) {
    for (_, _, op) in operations_mut(doc) {
        let tagged = op
            .get("tags")
            .and_then(Value::as_array)
            .is_some_and(|tags| tags.iter().any(|t| t == "tokens"));
        let Some(responses) = op.get_mut("responses").and_then(Value::as_object_mut) else {
            continue;
        };
        if !tagged {
            continue;
        }
        for (code, description) in REFUSALS {
            if let Some(response) = responses.get_mut(code) {
                *response = json!({
                    "description": description,
                    "content": {"application/json": {"schema": {
                        "$ref": format!("#/components/schemas/{TOKEN_ERROR_SCHEMA}")
                    }}}
                });
            }
        }
    }
    if let Some(schemas) = doc
        .pointer_mut("/components/schemas")
        .and_then(Value::as_object_mut)
    {
        schemas.insert(TOKEN_ERROR_SCHEMA.to_owned(), token_error_schema());
        // The generator lists schemas by name.
        schemas.sort_keys();
    }
}
