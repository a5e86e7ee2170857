//! The mapping from a tool call to a request, rule by rule.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::{Map, Value, json};
use tool_catalog::{ArgumentError, BaseUrl, BaseUrlError, Catalog, Method, RequestSpec, Tool};

const BASE: &str = "http://127.0.0.1:8080/api";

fn tool(method: &str, path: &str) -> Tool {
    let catalog = Catalog::from_value(json!({"tools": [{
        "name": "t",
        "title": "T",
        "description": "",
        "safety": "write",
        "source": {"type": "openapi", "operationId": "op", "method": method, "path": path},
        "inputSchema": {"type": "object"}
    }]}))
    .unwrap();
    catalog.tools()[0].clone()
}

fn args(value: Value) -> Map<String, Value> {
    value.as_object().unwrap().clone()
}

fn build(method: &str, path: &str, arguments: Value) -> Result<RequestSpec, ArgumentError> {
    tool(method, path).build_request(BASE, &args(arguments))
}

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn path_tokens_are_filled_and_encoded() {
    let request = build("GET", "/notes/{id}", json!({"id": 7})).unwrap();
    assert_eq!(request.method, Method::Get);
    assert_eq!(request.url, "http://127.0.0.1:8080/api/notes/7");
    assert!(request.query.is_empty());
    assert_eq!(request.body, None);
    assert_eq!(request.full_url(), request.url);

    let cases = [
        (json!("a/b"), "a%2Fb"),
        (json!("../../admin"), "..%2F..%2Fadmin"),
        (json!("x?y=1#z"), "x%3Fy%3D1%23z"),
        (json!("100%"), "100%25"),
        (json!("two words"), "two%20words"),
        (json!("é☃"), "%C3%A9%E2%98%83"),
        (json!("back\\slash"), "back%5Cslash"),
        (json!("a.b-c_d~e"), "a.b-c_d~e"),
        (json!("..."), "..."),
        (json!("%2e%2e"), "%252e%252e"),
        (json!(true), "true"),
        (json!(-1.5), "-1.5"),
        (json!(18446744073709551615u64), "18446744073709551615"),
    ];
    for (value, encoded) in cases {
        let request = build("GET", "/notes/{id}", json!({ "id": value })).unwrap();
        assert_eq!(request.url, format!("{BASE}/notes/{encoded}"), "{value}");
    }
}

#[test]
fn literal_text_beside_tokens_is_copied() {
    let request = build(
        "GET",
        "/notes/id_{id}/v{v}.json",
        json!({"id": "a b", "v": 2}),
    )
    .unwrap();
    assert_eq!(request.url, format!("{BASE}/notes/id_a%20b/v2.json"));
    let request = build("GET", "/{a}{b}/{a}", json!({"a": "x", "b": "y"})).unwrap();
    assert_eq!(request.url, format!("{BASE}/xy/x"));
    // Dots inside a larger segment cannot act as a dot segment, and an empty value beside
    // literal text leaves a non-empty segment.
    let request = build("GET", "/notes/id_{id}", json!({"id": ".."})).unwrap();
    assert_eq!(request.url, format!("{BASE}/notes/id_.."));
    let request = build("GET", "/notes/id_{id}", json!({"id": ""})).unwrap();
    assert_eq!(request.url, format!("{BASE}/notes/id_"));
}

#[test]
fn slashes_are_joined_cleanly() {
    let t = tool("GET", "/notes");
    let relative = tool("GET", "notes");
    let root = tool("GET", "/");
    for base in ["http://h:1/api", "http://h:1/api/", "http://h:1/api//"] {
        assert_eq!(
            t.build_request(base, &Map::new()).unwrap().url,
            "http://h:1/api/notes"
        );
        assert_eq!(
            relative.build_request(base, &Map::new()).unwrap().url,
            "http://h:1/api/notes"
        );
        assert_eq!(
            root.build_request(base, &Map::new()).unwrap().url,
            "http://h:1/api/"
        );
    }
    for base in ["https://h", "https://h/"] {
        assert_eq!(
            t.build_request(base, &Map::new()).unwrap().url,
            "https://h/notes"
        );
    }
    let bare = tool("GET", "{id}");
    assert_eq!(
        bare.build_request("http://h/x/", &args(json!({"id": "a/b"})))
            .unwrap()
            .url,
        "http://h/x/a%2Fb"
    );
}

#[test]
fn path_argument_errors_name_the_argument() {
    assert_eq!(
        build("GET", "/notes/{id}", json!({})).unwrap_err(),
        ArgumentError::MissingPathArgument { name: "id".into() }
    );
    for bad in [json!(null), json!([1]), json!({"a": 1})] {
        assert_eq!(
            build("GET", "/notes/{id}", json!({ "id": bad })).unwrap_err(),
            ArgumentError::InvalidPathArgument { name: "id".into() }
        );
    }
    assert_eq!(
        build("GET", "/notes/{id}", json!({"id": ""})).unwrap_err(),
        ArgumentError::EmptyPathSegment { name: "id".into() }
    );
    assert_eq!(
        build("GET", "/notes/{a}{b}/x", json!({"a": "", "b": ""})).unwrap_err(),
        ArgumentError::EmptyPathSegment { name: "a".into() }
    );
    for dots in [".", ".."] {
        assert_eq!(
            build("GET", "/notes/{id}", json!({ "id": dots })).unwrap_err(),
            ArgumentError::DotPathSegment { name: "id".into() }
        );
    }
    assert_eq!(
        build("GET", "/notes/{a}{b}", json!({"a": ".", "b": "."})).unwrap_err(),
        ArgumentError::DotPathSegment { name: "a".into() }
    );
    assert_eq!(
        build("GET", "/notes/{a}.", json!({"a": "."})).unwrap_err(),
        ArgumentError::DotPathSegment { name: "a".into() }
    );

    let messages = [
        (
            ArgumentError::MissingPathArgument { name: "id".into() },
            "argument \"id\" is required: it fills a path parameter",
        ),
        (
            ArgumentError::InvalidPathArgument { name: "id".into() },
            "argument \"id\" fills a path parameter and must be a string, number or boolean",
        ),
        (
            ArgumentError::EmptyPathSegment { name: "id".into() },
            "argument \"id\" fills a path segment and must not be empty",
        ),
        (
            ArgumentError::DotPathSegment { name: "id".into() },
            "argument \"id\" must not make a \".\" or \"..\" path segment",
        ),
        (
            ArgumentError::InvalidQueryArgument { name: "q".into() },
            "argument \"q\" goes to the query string and must be a string, number, boolean, null or an array of strings, numbers and booleans",
        ),
        (
            ArgumentError::InvalidBaseUrl(BaseUrlError::Scheme),
            "the base URL must start with http:// or https://",
        ),
    ];
    for (error, text) in messages {
        assert_eq!(error.to_string(), text);
    }
}

#[test]
fn get_and_delete_send_the_rest_as_the_query() {
    for method in ["GET", "DELETE"] {
        let request = build(
            method,
            "/notes/{id}",
            // Keys in sorted order: serde_json's Map iterates by key, or in insertion order when
            // its `preserve_order` feature is on (as it is in this workspace through other crates).
            json!({
                "all": false,
                "blank": "",
                "empty": [],
                "id": 3,
                "limit": 10,
                "none": null,
                "q": "a b&c=d",
                "ratio": 0.5,
                "tag": ["x", 1, true]
            }),
        )
        .unwrap();
        assert_eq!(request.url, format!("{BASE}/notes/3"));
        assert_eq!(request.body, None);
        assert_eq!(
            request.query,
            pairs(&[
                ("all", "false"),
                ("blank", ""),
                ("limit", "10"),
                ("q", "a b&c=d"),
                ("ratio", "0.5"),
                ("tag", "x"),
                ("tag", "1"),
                ("tag", "true"),
            ])
        );
        assert_eq!(
            request.full_url(),
            format!(
                "{BASE}/notes/3?all=false&blank=&limit=10&q=a%20b%26c%3Dd&ratio=0.5&tag=x&tag=1&tag=true"
            )
        );
        assert_eq!(
            request.to_string(),
            format!("{method} {}", request.full_url())
        );
    }
}

#[test]
fn objects_and_nested_values_are_refused_in_the_query() {
    for bad in [
        json!({"a": 1}),
        json!([[1]]),
        json!([null]),
        json!([{"a": 1}]),
    ] {
        assert_eq!(
            build("GET", "/notes", json!({ "filter": bad })).unwrap_err(),
            ArgumentError::InvalidQueryArgument {
                name: "filter".into()
            }
        );
    }
}

#[test]
fn post_put_patch_send_the_rest_as_the_body() {
    for method in ["POST", "PUT", "PATCH"] {
        let request = build(
            method,
            "/notes/{id}",
            json!({"id": 3, "title": "t", "tags": ["a"], "meta": {"k": null}, "body": null}),
        )
        .unwrap();
        assert_eq!(request.url, format!("{BASE}/notes/3"));
        assert!(request.query.is_empty());
        assert_eq!(
            request.body,
            Some(json!({"title": "t", "tags": ["a"], "meta": {"k": null}, "body": null}))
        );

        let empty = build(method, "/notes/{id}", json!({"id": 3})).unwrap();
        assert_eq!(empty.body, Some(json!({})));
        assert_eq!(empty.full_url(), format!("{BASE}/notes/3"));
    }
}

#[test]
fn the_base_url_is_checked() {
    let t = tool("GET", "/notes");
    for (base, error) in [
        ("127.0.0.1:8080", BaseUrlError::Scheme),
        ("ftp://h", BaseUrlError::Scheme),
        ("http://", BaseUrlError::NoHost),
        ("http://h/api?x=1", BaseUrlError::QueryOrFragment),
        ("http://h /api", BaseUrlError::InvalidCharacter),
    ] {
        assert_eq!(
            t.build_request(base, &Map::new()).unwrap_err(),
            ArgumentError::InvalidBaseUrl(error)
        );
    }
    let base: BaseUrl = "http://h:9/x/".parse().unwrap();
    assert_eq!(base.to_string(), "http://h:9/x");
    assert_eq!(
        t.build_request_at(&base, &Map::new()).unwrap().url,
        "http://h:9/x/notes"
    );
}

#[test]
fn a_percent_encoded_dot_segment_would_escape_the_base_path() {
    // Why "." and ".." are refused rather than sent as %2E: the URL parser reqwest uses reads
    // them as dot segments and removes the base path.
    let parsed = url::Url::parse("http://h/api/notes/%2E%2E/%2e%2E/admin").unwrap();
    assert_eq!(parsed.path(), "/admin");
}
