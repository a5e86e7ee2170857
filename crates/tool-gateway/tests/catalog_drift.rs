//! `catalog/tools.json` against the committed OpenAPI document (`docs/openapi.json`): every
//! entry's operationId exists there with the same method and path (no drift), and the shipped
//! catalogs load.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

use serde_json::Value;
use tool_catalog::{Catalog, Safety};

fn repo_file(relative: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(relative)
}

fn load(relative: &str) -> Catalog {
    let text = std::fs::read_to_string(repo_file(relative)).unwrap();
    Catalog::from_json_str(&text).unwrap_or_else(|e| panic!("{relative}: {e}"))
}

/// operationId -> (METHOD, path) from the OpenAPI document.
fn operations() -> Vec<(String, String, String)> {
    let text = std::fs::read_to_string(repo_file("docs/openapi.json")).unwrap();
    let doc: Value = serde_json::from_str(&text).unwrap();
    let mut out = Vec::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            if let Some(id) = op.get("operationId").and_then(Value::as_str) {
                out.push((id.to_owned(), method.to_uppercase(), path.clone()));
            }
        }
    }
    out
}

fn check_against_openapi(relative: &str) {
    let ops = operations();
    let catalog = load(relative);
    assert!(!catalog.is_empty());
    for tool in catalog.iter() {
        let found: Vec<_> = ops
            .iter()
            .filter(|(id, _, _)| id == tool.operation_id())
            .collect();
        assert_eq!(
            found.len(),
            1,
            "{relative}: tool {} names operationId {} which docs/openapi.json does not have once",
            tool.name(),
            tool.operation_id()
        );
        let (_, method, path) = found[0];
        assert_eq!(
            method,
            tool.method().as_str(),
            "{relative}: method of {}",
            tool.name()
        );
        assert_eq!(path, tool.path(), "{relative}: path of {}", tool.name());
    }
}

#[test]
fn tools_catalog_matches_the_openapi_document() {
    check_against_openapi("catalog/tools.json");
}

#[test]
fn conformance_catalog_matches_the_openapi_document() {
    check_against_openapi("catalog/conformance.json");
}

#[test]
fn tools_catalog_labels_only_gets_as_read() {
    for tool in load("catalog/tools.json").iter() {
        let is_get = tool.method().as_str() == "GET";
        assert_eq!(
            tool.safety() == Safety::Read,
            is_get,
            "tool {}: GET tools are read, the others write",
            tool.name()
        );
    }
}

#[test]
fn tools_catalog_covers_the_core_api() {
    let catalog = load("catalog/tools.json");
    for name in [
        "health",
        "list_notes",
        "get_note",
        "create_note",
        "update_note",
        "delete_note",
        "list_tags",
        "create_tag",
        "list_comments",
        "create_comment",
    ] {
        assert!(catalog.get(name).is_some(), "missing tool {name}");
    }
}

#[test]
fn conformance_catalog_has_the_suites_fixed_tool_names() {
    let catalog = load("catalog/conformance.json");
    for name in [
        "test_simple_text",
        "test_error_handling",
        "json_schema_2020_12_tool",
    ] {
        assert!(catalog.get(name).is_some(), "missing tool {name}");
    }
    let schema = catalog
        .get("json_schema_2020_12_tool")
        .unwrap()
        .input_schema();
    assert_eq!(
        schema["$schema"],
        "https://json-schema.org/draft/2020-12/schema"
    );
    assert!(schema.get("$defs").is_some());
}
