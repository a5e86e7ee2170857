//! What the generator cannot write, added to the document once it is built: each step walks
//! every operation, so a route added later gets it too.

use actix_web::http::Method;
use serde_json::{Value, json};

use crate::auth::{Access, ApiAuth};
use crate::deprecation::is_v1;
use http_edge::error::{PROBLEM_CONTENT_TYPE, PROBLEM_SCHEMA};

use http_edge::document::operations_mut;

/// The headers every response under `/v1` carries (`middleware::deprecation`), documented on
/// each of its responses.
fn v1_response_headers() -> Value {
    json!({
        "Deprecation": {
            "description": "V1 is deprecated: `true`, or with DEPRECATION_HEADER_FORM=rfc9745 \
                            the deprecation date as `@<unix seconds>` (`@1767225600`).",
            "schema": {"type": "string"}
        },
        "Sunset": {
            "description": "V1 stops answering at this instant.",
            "schema": {"type": "string", "enum": [versioned_notes::deprecation::SUNSET]}
        },
        "Link": {
            "description": "The successor version.",
            "schema": {"type": "string", "enum": [versioned_notes::deprecation::SUCCESSOR_LINK]}
        }
    })
}

/// Marks every operation under `/v1` deprecated and documents its deprecation headers on every
/// response.
pub(super) fn v1(doc: &mut Value) {
    let operations = operations_mut(doc)
        .filter(|(path, _, _)| is_v1(path))
        .filter_map(|(_, _, op)| op.as_object_mut());
    for op in operations {
        op.insert("deprecated".to_owned(), Value::Bool(true));
        let responses = op
            .get_mut("responses")
            .and_then(Value::as_object_mut)
            .into_iter()
            .flat_map(|r| r.values_mut())
            .filter_map(Value::as_object_mut);
        for response in responses {
            let headers = response.entry("headers").or_insert_with(|| json!({}));
            if let (Some(headers), Value::Object(v1)) =
                (headers.as_object_mut(), v1_response_headers())
            {
                headers.extend(v1);
            }
        }
    }
}

/// Operations that never touch the database, so no storage fault can reach them.
/// (The health routes answer their own 503 with their own body.)
pub(super) const NO_DATABASE: [&str; 9] = [
    "/",
    "/problems/{slug}",
    "/examples/ping",
    "/machine/health",
    "/examples/protected",
    "/health",
    "/health/live",
    "/health/ready",
    "/metrics",
];

/// The scheme of area D's bearer tokens, the one `API_AUTH=tokens` asks for.
pub const BEARER_SCHEME: &str = "bearer_token";
/// The scheme of `API_KEYS` (the operator credential, and `/machine/health`'s).
pub const API_KEY_SCHEME: &str = "api_key";

/// Says on every operation what `API_AUTH=tokens` asks of it, from the guard's own rule
/// ([`access`]), so the document cannot drift from what is enforced: public operations
/// `security: []` (or the credential their handler checks), creating users and operator data
/// the operator key, everything else a bearer token or the operator key.
///
/// With `API_AUTH=off` nothing is guarded: an operation declares only the credential its own
/// handler checks, and no refusal of the guard.
pub(super) fn security(doc: &mut Value, mode: ApiAuth) {
    let rules = crate::routes::rules();
    for (path, method, op) in operations_mut(doc) {
        let Ok(method) = method.to_uppercase().parse::<Method>() else {
            continue;
        };
        let own = op.get("security").filter(|s| {
            s.as_array().is_some_and(|a| {
                a.iter()
                    .any(|r| r.as_object().is_some_and(|r| !r.is_empty()))
            })
        });
        let needs = match mode {
            ApiAuth::Tokens => crate::auth::needs(&rules, &method, &example_path(path)).access,
            ApiAuth::Off => Access::Public,
        };
        let security = match (needs, own) {
            (Access::Public, Some(own)) => own.clone(),
            (Access::Public, None) => json!([]),
            (Access::CreateUser | Access::OperatorOnly, _) => json!([{API_KEY_SCHEME: []}]),
            // The operator key passes wherever a bearer token does.
            (Access::ManageTokens | Access::Bearer, _) => {
                json!([{BEARER_SCHEME: []}, {API_KEY_SCHEME: []}])
            }
        };
        let needs_token =
            mode == ApiAuth::Tokens && security.as_array().is_some_and(|s| !s.is_empty());
        if let Some(op) = op.as_object_mut() {
            op.insert("security".to_owned(), security);
        }
        if needs_token {
            document_refusals_of_the_guard(op);
        }
    }
    if let Some(schemes) = doc
        .pointer_mut("/components/securitySchemes")
        .and_then(Value::as_object_mut)
    {
        schemes.insert(
            BEARER_SCHEME.to_owned(),
            json!({
                "type": "http",
                "scheme": "bearer",
                "description": "A raw token issued by POST /users/{userId}/tokens (area D). \
                    Checked when the service runs with API_AUTH=tokens; with API_AUTH=off (the \
                    default) no operation asks for it."
            }),
        );
        schemes.sort_keys();
    }
    if let Some(doc) = doc.as_object_mut() {
        doc.insert(
            "servers".to_owned(),
            json!([{"url": "/", "description": "This service (the host serving this document)."}]),
        );
    }
}

/// The guard's 401 and 403 (problem documents) on an operation that asks for a credential:
/// added where the operation documents neither, and beside area D's own `{"error"}` bodies
/// where it documents those.
fn document_refusals_of_the_guard(op: &mut Value) {
    let Some(responses) = op.get_mut("responses").and_then(Value::as_object_mut) else {
        return;
    };
    let problem = json!({"schema": {"$ref": format!("#/components/schemas/{PROBLEM_SCHEMA}")}});
    for (code, description) in [
        (
            "401",
            "With API_AUTH=tokens: the credential is missing, unknown, revoked or expired \
             (unauthorized; WWW-Authenticate names the scheme).",
        ),
        (
            "403",
            "With API_AUTH=tokens: the credential does not allow this (forbidden; the detail \
             names the scope that was missing).",
        ),
    ] {
        let response = responses
            .entry(code)
            .or_insert_with(|| json!({"description": description, "content": {}}));
        if let Some(content) = response.get_mut("content").and_then(Value::as_object_mut) {
            content
                .entry(PROBLEM_CONTENT_TYPE)
                .or_insert_with(|| problem.clone());
        }
    }
}

/// A path template with every `{parameter}` filled in, as the guard sees a request.
fn example_path(template: &str) -> String {
    template
        .split('/')
        .map(|segment| match segment.starts_with('{') {
            true => "1",
            false => segment,
        })
        .collect::<Vec<_>>()
        .join("/")
}
