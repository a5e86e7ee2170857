//! Rules that hold for all inputs: the base URL and literal path prefix never change, path values
//! and query pairs decode back to the arguments, and loading never panics.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use percent_encoding::percent_decode_str;
use proptest::prelude::*;
use serde_json::{Map, Value, json};
use tool_catalog::{ArgumentError, Catalog, CatalogError, Tool};

const BASES: &[&str] = &[
    "http://127.0.0.1:8080/api",
    "http://127.0.0.1:8080/api/",
    "https://example.com",
    "https://example.com/",
    "http://localhost:3000/a/b",
];

fn tool(method: &str, path: &str) -> Tool {
    let catalog = Catalog::from_value(json!({"tools": [{
        "name": "t",
        "title": "T",
        "description": "",
        "safety": if method == "GET" { "read" } else { "write" },
        "source": {"type": "openapi", "operationId": "op", "method": method, "path": path},
        "inputSchema": {"type": "object"}
    }]}))
    .unwrap();
    catalog.tools()[0].clone()
}

/// Strings rich in the characters that could break out of a path segment.
fn tricky_string() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        "[/.%?#& =+a-zA-Z0-9~_\\\\:@;é☃\u{0}\n-]{0,12}",
        Just(String::new()),
        Just(".".to_owned()),
        Just("..".to_owned()),
        Just("../..".to_owned()),
        Just("%2e%2e".to_owned()),
        Just("//evil.example".to_owned()),
        Just("@evil.example".to_owned()),
    ]
}

fn decode(text: &str) -> String {
    percent_decode_str(text).decode_utf8().unwrap().into_owned()
}

fn assert_clean(error: &CatalogError) {
    let message = error.message();
    assert!(
        message.starts_with("tool catalog is invalid: "),
        "{message}"
    );
    for needle in ["line", "column", "/work", ".rs", "serde", "expected", "EOF"] {
        assert!(!message.contains(needle), "{message:?} contains {needle:?}");
    }
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        tricky_string().prop_map(Value::String),
        prop_oneof![
            Just("read"),
            Just("write"),
            Just("openapi"),
            Just("GET"),
            Just("POST"),
            Just("/notes/{id}"),
            Just("object"),
        ]
        .prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        let keys = prop_oneof![
            Just("tools".to_owned()),
            Just("name".to_owned()),
            Just("title".to_owned()),
            Just("description".to_owned()),
            Just("safety".to_owned()),
            Just("source".to_owned()),
            Just("type".to_owned()),
            Just("operationId".to_owned()),
            Just("method".to_owned()),
            Just("path".to_owned()),
            Just("inputSchema".to_owned()),
            Just("responseSchemaRef".to_owned()),
            "[a-z]{0,4}",
        ];
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::btree_map(keys, inner, 0..8)
                .prop_map(|map| Value::Object(map.into_iter().collect())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn a_whole_segment_value_stays_in_its_segment(value in tricky_string(), base in prop::sample::select(BASES)) {
        let tool = tool("GET", "/notes/{id}");
        let mut args = Map::new();
        args.insert("id".into(), Value::String(value.clone()));
        let result = tool.build_request(base, &args);
        match value.as_str() {
            "" => prop_assert_eq!(result.unwrap_err(), ArgumentError::EmptyPathSegment { name: "id".into() }),
            "." | ".." => prop_assert_eq!(result.unwrap_err(), ArgumentError::DotPathSegment { name: "id".into() }),
            _ => {
                let request = result.unwrap();
                let prefix = format!("{}/notes/", base.trim_end_matches('/'));
                prop_assert!(request.url.starts_with(&prefix), "{}", request.url);
                let encoded = &request.url[prefix.len()..];
                prop_assert!(!encoded.contains(['/', '?', '#', '\\']), "{}", encoded);
                prop_assert_eq!(&decode(encoded), &value);
                prop_assert!(request.query.is_empty());

                // The URL parser reqwest uses keeps every byte: same scheme, host, port, path.
                let parsed = url::Url::parse(&request.url).unwrap();
                let parsed_base = url::Url::parse(base).unwrap();
                prop_assert_eq!(parsed.as_str(), request.url.as_str());
                prop_assert_eq!(parsed.host_str(), parsed_base.host_str());
                prop_assert_eq!(parsed.port(), parsed_base.port());
                prop_assert_eq!(parsed.query(), None);
                prop_assert_eq!(parsed.fragment(), None);
                let last = parsed.path_segments().unwrap().next_back().unwrap();
                prop_assert_eq!(&decode(last), &value);
            }
        }
    }

    #[test]
    fn a_value_beside_literal_text_never_escapes(
        a in tricky_string(),
        b in tricky_string(),
        base in prop::sample::select(BASES),
    ) {
        let tool = tool("DELETE", "/notes/id_{a}/x/v{b}.json");
        let args: Map<String, Value> =
            [("a".to_owned(), json!(a)), ("b".to_owned(), json!(b))].into_iter().collect();
        let request = tool.build_request(base, &args).unwrap();
        let prefix = format!("{}/notes/id_", base.trim_end_matches('/'));
        prop_assert!(request.url.starts_with(&prefix));
        let rest = &request.url[prefix.len()..];
        let segments: Vec<&str> = rest.split('/').collect();
        prop_assert_eq!(segments.len(), 3, "{}", rest);
        prop_assert!(!rest.contains(['?', '#']));
        prop_assert_eq!(decode(segments[0]), a);
        prop_assert_eq!(segments[1], "x");
        let last = segments[2].strip_prefix('v').unwrap().strip_suffix(".json").unwrap();
        prop_assert_eq!(decode(last), b);
        let parsed = url::Url::parse(&request.url).unwrap();
        prop_assert_eq!(parsed.as_str(), request.url.as_str());
    }

    #[test]
    fn query_pairs_decode_back_to_the_arguments(
        args in prop::collection::btree_map(tricky_string(), tricky_string(), 0..6),
        id in "[a-z0-9]{1,8}",
        base in prop::sample::select(BASES),
    ) {
        let tool = tool("GET", "/notes/{id}");
        let mut map: Map<String, Value> =
            args.iter().map(|(k, v)| (k.clone(), Value::String(v.clone()))).collect();
        map.insert("id".into(), Value::String(id.clone()));
        let expected: Vec<(String, String)> =
            args.iter().filter(|(k, _)| k.as_str() != "id").map(|(k, v)| (k.clone(), v.clone())).collect();

        let request = tool.build_request(base, &map).unwrap();
        prop_assert_eq!(&request.url, &format!("{}/notes/{id}", base.trim_end_matches('/')));
        let mut got = request.query.clone();
        got.sort();
        prop_assert_eq!(&got, &expected);
        prop_assert_eq!(&request.body, &None);

        let full = request.full_url();
        let parsed = url::Url::parse(&full).unwrap();
        prop_assert_eq!(parsed.as_str(), full.as_str());
        let parsed_url = url::Url::parse(&request.url).unwrap();
        prop_assert_eq!(parsed.path(), parsed_url.path());
        prop_assert_eq!(parsed.fragment(), None);
        let mut decoded: Vec<(String, String)> = match full.split_once('?') {
            None => Vec::new(),
            Some((_, query)) => query
                .split('&')
                .map(|pair| {
                    let (k, v) = pair.split_once('=').unwrap();
                    (decode(k), decode(v))
                })
                .collect(),
        };
        decoded.sort();
        prop_assert_eq!(&decoded, &expected);
        let mut via_url: Vec<(String, String)> =
            parsed.query_pairs().map(|(k, v)| (k.into_owned(), v.into_owned())).collect();
        via_url.sort();
        prop_assert_eq!(&via_url, &expected);
    }

    #[test]
    fn the_body_is_every_argument_but_the_path_ones(
        args in prop::collection::btree_map("[a-z]{1,4}", json_value(), 0..6),
        method in prop::sample::select(&["POST", "PUT", "PATCH"][..]),
    ) {
        let tool = tool(method, "/notes/{id}");
        let mut map: Map<String, Value> = args.into_iter().collect();
        map.insert("id".into(), json!(1));
        let request = tool.build_request(BASES[0], &map).unwrap();
        map.remove("id");
        prop_assert_eq!(request.body, Some(Value::Object(map)));
        prop_assert!(request.query.is_empty());
        prop_assert_eq!(request.url, "http://127.0.0.1:8080/api/notes/1");
    }

    #[test]
    fn loading_arbitrary_text_never_panics(text in prop_oneof![
        any::<String>(),
        "[\\[\\]{}\":,. a-z0-9tfn\\\\-]{0,60}",
    ]) {
        if let Err(error) = Catalog::from_json_str(&text) {
            assert_clean(&error);
        }
    }

    #[test]
    fn loading_arbitrary_json_never_panics(value in json_value()) {
        let text = value.to_string();
        let from_text = Catalog::from_json_str(&text);
        let from_value = Catalog::from_value(value);
        prop_assert_eq!(&from_text, &from_value);
        if let Err(error) = from_value {
            assert_clean(&error);
        }
    }

    #[test]
    fn any_field_replaced_by_any_json_loads_or_names_the_entry(
        field in prop::sample::select(&[
            "name", "title", "description", "safety", "source", "inputSchema", "responseSchemaRef",
            "source.type", "source.operationId", "source.method", "source.path",
        ][..]),
        value in json_value(),
    ) {
        let mut entry = json!({
            "name": "get_note",
            "title": "T",
            "description": "D",
            "safety": "read",
            "source": {"type": "openapi", "operationId": "op", "method": "GET", "path": "/n/{id}"},
            "inputSchema": {"type": "object"}
        });
        match field.split_once('.') {
            Some((outer, inner)) => entry[outer][inner] = value,
            None => entry[field] = value,
        }
        if let Err(error) = Catalog::from_value(json!({"tools": [entry]})) {
            assert_clean(&error);
            prop_assert_eq!(error.entry().map(|e| e.index), Some(0));
            // Replacing `source` wholesale may fail on one of its members; a method that
            // changes data contradicts the entry's `read` safety, which is what gets named.
            let named = error.field().unwrap();
            let contradicts_read = named == "safety" && field.starts_with("source");
            prop_assert!(named.starts_with(field) || contradicts_read, "{} for {}", named, field);
        }
    }

    #[test]
    fn any_loadable_path_builds_under_the_base(
        path in prop_oneof![
            "[a-z{}/%.:?#_ 0-9]{1,16}",
            "(/?([a-z0-9_.~:@-]{0,3}|%2[eE]|\\{[a-z]{1,3}\\}){1,3}){1,5}",
        ],
        base in prop::sample::select(BASES),
    ) {
        let Ok(catalog) = Catalog::from_value(json!({"tools": [{
            "name": "t", "title": "", "description": "", "safety": "read",
            "source": {"type": "openapi", "operationId": "op", "method": "GET", "path": path},
            "inputSchema": {}
        }]})) else {
            return Ok(());
        };
        let tool = &catalog.tools()[0];
        let args: Map<String, Value> =
            tool.path_params().map(|p| (p.to_owned(), json!("../?#v"))).collect();
        let request = tool.build_request(base, &args).unwrap();
        let parsed = url::Url::parse(&request.full_url()).unwrap();
        let parsed_base = url::Url::parse(base).unwrap();
        prop_assert!(request.url.starts_with(base.trim_end_matches('/')));
        prop_assert_eq!(parsed.host_str(), parsed_base.host_str());
        prop_assert_eq!(parsed.port(), parsed_base.port());
        prop_assert!(parsed.path().starts_with(parsed_base.path().trim_end_matches('/')));
        prop_assert_eq!(parsed.query(), None);
        prop_assert_eq!(parsed.fragment(), None);
    }
}
