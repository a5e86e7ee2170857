//! Every catalog rule and the exact message it produces.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::{Value, json};
use tool_catalog::{
    Catalog, CatalogError, EntryProblem, EntryRef, Method, PathProblem, Safety, SourceType,
};

fn entry(name: &str) -> Value {
    json!({
        "name": name,
        "title": "Get a note",
        "description": "Read one note.",
        "safety": "read",
        "source": {"type": "openapi", "operationId": "getNote", "method": "GET", "path": "/notes/{id}"},
        "inputSchema": {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]},
        "responseSchemaRef": "#/components/schemas/Note"
    })
}

fn catalog(entries: Vec<Value>) -> Value {
    json!({ "tools": entries })
}

/// The error for a catalog of one valid entry, then `edit` applied to a second entry `get_note`.
fn error_after(edit: impl FnOnce(&mut Value)) -> CatalogError {
    let mut second = entry("get_note");
    edit(&mut second);
    Catalog::from_value(catalog(vec![entry("first"), second])).unwrap_err()
}

fn assert_clean(message: &str) {
    for needle in [
        "line", "column", "/work", ".rs", ".json", "src/", "serde", "expected", "EOF",
    ] {
        assert!(!message.contains(needle), "{message:?} contains {needle:?}");
    }
    assert!(
        message.starts_with("tool catalog is invalid: "),
        "{message}"
    );
}

fn message(error: &CatalogError) -> String {
    let message = error.message();
    assert_eq!(message, error.to_string());
    assert_clean(&message);
    message
}

const AT: &str = "tool catalog is invalid: tools[1] (name \"get_note\"): ";

#[test]
fn a_valid_catalog_loads_with_every_field() {
    let schema = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "urn:example:args",
        "$defs": {"id": {"type": "integer", "minimum": 1}},
        "type": "object",
        "properties": {"id": {"$ref": "#/$defs/id"}},
        "required": ["id"],
        "additionalProperties": false
    });
    let mut delete = entry("delete_note");
    delete["safety"] = json!("write");
    delete["source"]["method"] = json!("DELETE");
    delete["source"]["operationId"] = json!("deleteNote");
    delete["inputSchema"] = schema.clone();
    delete.as_object_mut().unwrap().remove("responseSchemaRef");
    let mut untyped = entry("no_type");
    untyped["inputSchema"] = json!({"properties": {}});
    untyped["responseSchemaRef"] = Value::Null;
    untyped["extra"] = json!("ignored");

    let loaded = Catalog::from_value(catalog(vec![entry("get_note"), delete, untyped])).unwrap();
    assert_eq!(loaded.len(), 3);
    assert!(!loaded.is_empty());
    let names: Vec<&str> = loaded.iter().map(|t| t.name()).collect();
    assert_eq!(names, ["get_note", "delete_note", "no_type"]);

    let get = loaded.get("get_note").unwrap();
    assert_eq!(get.title(), "Get a note");
    assert_eq!(get.description(), "Read one note.");
    assert_eq!(get.safety(), Safety::Read);
    assert_eq!(get.method(), Method::Get);
    assert_eq!(get.path(), "/notes/{id}");
    assert_eq!(get.path_params().collect::<Vec<_>>(), ["id"]);
    assert_eq!(get.operation_id(), "getNote");
    assert_eq!(get.source().kind(), SourceType::OpenApi);
    assert_eq!(get.response_schema_ref(), Some("#/components/schemas/Note"));
    assert!(get.is_read_only());
    assert!(!get.is_destructive());

    let delete = loaded.get("delete_note").unwrap();
    assert_eq!(delete.safety(), Safety::Write);
    assert!(!delete.is_read_only());
    assert!(delete.is_destructive());
    assert_eq!(
        delete.input_schema(),
        &schema,
        "the schema passes through intact"
    );
    assert_eq!(delete.response_schema_ref(), None);
    assert_eq!(loaded.get("no_type").unwrap().response_schema_ref(), None);
    assert!(loaded.get("GET_NOTE").is_none(), "names are case-sensitive");
}

#[test]
fn every_method_is_accepted_in_uppercase_only() {
    for (text, method) in [
        ("GET", Method::Get),
        ("POST", Method::Post),
        ("PUT", Method::Put),
        ("PATCH", Method::Patch),
        ("DELETE", Method::Delete),
    ] {
        let mut e = entry("t");
        e["source"]["method"] = json!(text);
        if method != Method::Get {
            e["safety"] = json!("write");
        }
        let loaded = Catalog::from_value(catalog(vec![e])).unwrap();
        assert_eq!(loaded.tools()[0].method(), method);
        assert_eq!(method.as_str(), text);
        assert_eq!(loaded.tools()[0].is_destructive(), method == Method::Delete);
    }
    for text in ["get", "Get", "HEAD", "OPTIONS", "TRACE", "", " GET"] {
        let error = error_after(|e| e["source"]["method"] = json!(text));
        assert_eq!(
            message(&error),
            format!(
                "{AT}field \"source.method\" must be one of \"GET\", \"POST\", \"PUT\", \"PATCH\", \
                 \"DELETE\" (uppercase)"
            )
        );
        assert_eq!(error.field(), Some("source.method"));
    }
}

#[test]
fn an_empty_tools_array_is_an_empty_catalog() {
    let loaded = Catalog::from_json_str(r#"{"tools": []}"#).unwrap();
    assert!(loaded.is_empty());
    assert_eq!(loaded.len(), 0);
}

#[test]
fn invalid_json_says_so_without_a_position() {
    for text in [
        "",
        "{",
        "{\"tools\": [}",
        "\n\n   nope",
        "{\"tools\": []} trailing",
        "\u{feff}{}",
    ] {
        let error = Catalog::from_json_str(text).unwrap_err();
        assert_eq!(error, CatalogError::InvalidJson);
        assert_eq!(
            message(&error),
            "tool catalog is invalid: the catalog is not valid JSON"
        );
        assert_eq!(error.field(), None);
    }
}

#[test]
fn the_top_level_must_be_an_object_with_a_tools_array() {
    for text in ["[]", "null", "1", "\"tools\""] {
        let error = Catalog::from_json_str(text).unwrap_err();
        assert_eq!(error, CatalogError::NotAnObject);
        assert_eq!(
            message(&error),
            "tool catalog is invalid: the catalog must be a JSON object with a \"tools\" array"
        );
    }
    let error = Catalog::from_json_str(r#"{"Tools": []}"#).unwrap_err();
    assert_eq!(error, CatalogError::MissingTools);
    assert_eq!(
        message(&error),
        "tool catalog is invalid: field \"tools\" is missing"
    );
    assert_eq!(error.field(), Some("tools"));
    for text in [
        r#"{"tools": {}}"#,
        r#"{"tools": null}"#,
        r#"{"tools": "a"}"#,
    ] {
        let error = Catalog::from_json_str(text).unwrap_err();
        assert_eq!(error, CatalogError::ToolsNotArray);
        assert_eq!(
            message(&error),
            "tool catalog is invalid: field \"tools\" must be an array"
        );
    }
}

#[test]
fn an_entry_must_be_an_object() {
    let error = Catalog::from_value(catalog(vec![entry("a"), json!("b")])).unwrap_err();
    assert_eq!(
        message(&error),
        "tool catalog is invalid: tools[1]: the entry must be a JSON object"
    );
    assert_eq!(
        error.entry(),
        Some(&EntryRef {
            index: 1,
            name: None
        })
    );
    assert_eq!(error.field(), None);
}

#[test]
fn every_required_field_is_named_when_missing() {
    let cases = [
        ("title", "title"),
        ("description", "description"),
        ("safety", "safety"),
        ("source", "source"),
        ("inputSchema", "inputSchema"),
    ];
    for (key, field) in cases {
        let error = error_after(|e| {
            e.as_object_mut().unwrap().remove(key);
        });
        assert_eq!(message(&error), format!("{AT}field \"{field}\" is missing"));
        assert_eq!(error.field(), Some(field));
    }
    for key in ["type", "operationId", "method", "path"] {
        let error = error_after(|e| {
            e["source"].as_object_mut().unwrap().remove(key);
        });
        assert_eq!(
            message(&error),
            format!("{AT}field \"source.{key}\" is missing")
        );
    }
    // Without a name, the entry is named by its index only.
    let mut nameless = entry("x");
    nameless.as_object_mut().unwrap().remove("name");
    let error = Catalog::from_value(catalog(vec![nameless])).unwrap_err();
    assert_eq!(
        message(&error),
        "tool catalog is invalid: tools[0]: field \"name\" is missing"
    );
    assert_eq!(
        error,
        CatalogError::Entry {
            entry: EntryRef {
                index: 0,
                name: None
            },
            problem: EntryProblem::Missing("name"),
        }
    );
}

#[test]
fn string_fields_must_be_strings() {
    for key in ["title", "description", "safety"] {
        for wrong in [json!(null), json!(1), json!(["read"]), json!({})] {
            let error = error_after(|e| e[key] = wrong);
            assert_eq!(
                message(&error),
                format!("{AT}field \"{key}\" must be a string")
            );
        }
    }
    for key in ["type", "operationId", "method", "path"] {
        let error = error_after(|e| e["source"][key] = json!(true));
        assert_eq!(
            message(&error),
            format!("{AT}field \"source.{key}\" must be a string")
        );
    }
    let error = Catalog::from_value(catalog(vec![json!({"name": 5})])).unwrap_err();
    assert_eq!(
        message(&error),
        "tool catalog is invalid: tools[0]: field \"name\" must be a string"
    );
}

#[test]
fn names_are_1_to_64_safe_characters_and_never_echoed_when_invalid() {
    let max = "n".repeat(64);
    assert!(Catalog::from_value(catalog(vec![entry(&max), entry("a.b-c_D9")])).is_ok());
    let long = "n".repeat(65);
    for bad in [
        "",
        "get note",
        "get/note",
        "nöte",
        "x\"y",
        "/etc/passwd",
        long.as_str(),
    ] {
        let error = Catalog::from_value(catalog(vec![entry(bad)])).unwrap_err();
        assert_eq!(
            message(&error),
            "tool catalog is invalid: tools[0]: field \"name\" must be 1 to 64 characters of A-Z, \
             a-z, 0-9, \"_\", \".\" or \"-\""
        );
        assert_eq!(error.entry().unwrap().name, None);
    }
}

#[test]
fn duplicate_names_are_refused_naming_both_entries() {
    let entries = vec![entry("a"), entry("get_note"), entry("b"), entry("get_note")];
    let error = Catalog::from_value(catalog(entries)).unwrap_err();
    assert_eq!(
        message(&error),
        "tool catalog is invalid: tools[3] (name \"get_note\"): field \"name\" repeats the name of \
         tools[1]"
    );
    assert_eq!(error.field(), Some("name"));
    // Case matters: these are two names.
    assert!(Catalog::from_value(catalog(vec![entry("Get_note"), entry("get_note")])).is_ok());
}

#[test]
fn safety_is_read_or_write() {
    for bad in ["Read", "WRITE", "readonly", "destructive", ""] {
        let error = error_after(|e| e["safety"] = json!(bad));
        assert_eq!(
            message(&error),
            format!("{AT}field \"safety\" must be \"read\" or \"write\"")
        );
        assert_eq!(error.field(), Some("safety"));
    }
}

/// A `read` tool runs without the gateway's bearer token and is announced as `readOnlyHint`:
/// a catalog that calls a DELETE "read" is refused, not believed.
#[test]
fn only_get_tools_may_be_read() {
    for method in ["POST", "PUT", "PATCH", "DELETE"] {
        let error = error_after(|e| e["source"]["method"] = json!(method));
        assert_eq!(
            message(&error),
            format!(
                "{AT}field \"safety\" is \"read\", but source.method {method} changes data: only \
                 GET tools may be \"read\" (use \"write\")"
            )
        );
        assert_eq!(error.field(), Some("safety"));
        let mut write = entry("t");
        write["source"]["method"] = json!(method);
        write["safety"] = json!("write");
        assert!(Catalog::from_value(catalog(vec![write])).is_ok());
    }
}

#[test]
fn source_must_be_an_openapi_object() {
    let error = error_after(|e| e["source"] = json!("openapi"));
    assert_eq!(
        message(&error),
        format!("{AT}field \"source\" must be a JSON object")
    );
    for bad in ["OpenAPI", "grpc", ""] {
        let error = error_after(|e| e["source"]["type"] = json!(bad));
        assert_eq!(
            message(&error),
            format!("{AT}field \"source.type\" must be \"openapi\"")
        );
    }
    for bad in ["", "   "] {
        let error = error_after(|e| e["source"]["operationId"] = json!(bad));
        assert_eq!(
            message(&error),
            format!("{AT}field \"source.operationId\" must not be empty")
        );
    }
}

#[test]
fn input_schema_must_be_an_object_schema() {
    for bad in [json!(true), json!("object"), json!([]), json!(null)] {
        let error = error_after(|e| e["inputSchema"] = bad);
        assert_eq!(
            message(&error),
            format!("{AT}field \"inputSchema\" must be a JSON object (a JSON Schema)")
        );
    }
    for bad in [json!("string"), json!(["object", "null"]), json!(null)] {
        let error = error_after(|e| e["inputSchema"]["type"] = bad);
        assert_eq!(
            message(&error),
            format!(
                "{AT}field \"inputSchema\" must describe an object: its \"type\", when present, \
                 must be \"object\""
            )
        );
    }
}

#[test]
fn response_schema_ref_is_a_string_or_null() {
    for bad in [json!(1), json!({"$ref": "x"}), json!(false)] {
        let error = error_after(|e| e["responseSchemaRef"] = bad);
        assert_eq!(
            message(&error),
            format!("{AT}field \"responseSchemaRef\" must be a string or null")
        );
    }
}

#[test]
fn paths_are_checked() {
    let ok = [
        "/",
        "/notes",
        "notes/{id}",
        "/notes/id_{id}",
        "/a/{x}{y}/{x}",
        "/v1/notes:archive",
        "/a%2Fb/~user/@me/;p=1,2/$!*'()+&=",
        "{id}",
        "/.well-known/x",
        "/a/.../b",
        "/{a}/..x",
    ];
    for path in ok {
        let mut e = entry("t");
        e["source"]["path"] = json!(path);
        let loaded = Catalog::from_value(catalog(vec![e])).unwrap();
        assert_eq!(loaded.tools()[0].path(), path);
    }

    let cases: &[(&str, PathProblem, &str)] = &[
        ("", PathProblem::Empty, "must not be empty"),
        (
            "http://evil.example/x",
            PathProblem::AbsoluteUrl,
            "must be a path relative to the base URL, not an absolute URL",
        ),
        (
            "HTTPS://evil.example",
            PathProblem::AbsoluteUrl,
            "must be a path relative to the base URL, not an absolute URL",
        ),
        (
            "//evil.example/x",
            PathProblem::AbsoluteUrl,
            "must be a path relative to the base URL, not an absolute URL",
        ),
        (
            "mailto:x",
            PathProblem::AbsoluteUrl,
            "must be a path relative to the base URL, not an absolute URL",
        ),
        (
            "/notes?x=1",
            PathProblem::QueryOrFragment,
            "must not contain a query or fragment (\"?\" or \"#\")",
        ),
        (
            "/notes#top",
            PathProblem::QueryOrFragment,
            "must not contain a query or fragment (\"?\" or \"#\")",
        ),
        (
            "/no tes",
            PathProblem::InvalidCharacter,
            "may only contain URL path characters outside {param} tokens",
        ),
        (
            "/nötes",
            PathProblem::InvalidCharacter,
            "may only contain URL path characters outside {param} tokens",
        ),
        (
            "/a\\b",
            PathProblem::InvalidCharacter,
            "may only contain URL path characters outside {param} tokens",
        ),
        (
            "/a%2",
            PathProblem::InvalidCharacter,
            "may only contain URL path characters outside {param} tokens",
        ),
        (
            "/a%zz",
            PathProblem::InvalidCharacter,
            "may only contain URL path characters outside {param} tokens",
        ),
        (
            "/a\"b",
            PathProblem::InvalidCharacter,
            "may only contain URL path characters outside {param} tokens",
        ),
        (
            "/../admin",
            PathProblem::DotSegment,
            "must not contain \".\" or \"..\" segments",
        ),
        (
            "/notes/./x",
            PathProblem::DotSegment,
            "must not contain \".\" or \"..\" segments",
        ),
        (
            "/notes/%2E%2e",
            PathProblem::DotSegment,
            "must not contain \".\" or \"..\" segments",
        ),
        (
            "/notes/{id}/..",
            PathProblem::DotSegment,
            "must not contain \".\" or \"..\" segments",
        ),
        (
            "/notes/{id",
            PathProblem::UnclosedToken,
            "has a \"{\" without a matching \"}\"",
        ),
        (
            "/notes/{",
            PathProblem::UnclosedToken,
            "has a \"{\" without a matching \"}\"",
        ),
        (
            "/notes/id}",
            PathProblem::UnopenedToken,
            "has a \"}\" without a matching \"{\"",
        ),
        (
            "/notes/{a}}",
            PathProblem::UnopenedToken,
            "has a \"}\" without a matching \"{\"",
        ),
        (
            "/notes/{{id}}",
            PathProblem::NestedToken,
            "has a \"{\" inside a {param} token",
        ),
        (
            "/notes/{a{b}}",
            PathProblem::NestedToken,
            "has a \"{\" inside a {param} token",
        ),
        (
            "/notes/{}",
            PathProblem::EmptyToken,
            "has an empty {} token",
        ),
        (
            "/notes/{a b}",
            PathProblem::InvalidTokenName,
            "has a {param} token whose name is not 1 to 64 characters of A-Z, a-z, 0-9, \"_\", \".\" or \"-\"",
        ),
        (
            "/notes/{a/b}",
            PathProblem::InvalidTokenName,
            "has a {param} token whose name is not 1 to 64 characters of A-Z, a-z, 0-9, \"_\", \".\" or \"-\"",
        ),
        (
            "/notes/{é}",
            PathProblem::InvalidTokenName,
            "has a {param} token whose name is not 1 to 64 characters of A-Z, a-z, 0-9, \"_\", \".\" or \"-\"",
        ),
    ];
    for (path, problem, text) in cases {
        let error = error_after(|e| e["source"]["path"] = json!(path));
        assert_eq!(
            error,
            CatalogError::Entry {
                entry: EntryRef {
                    index: 1,
                    name: Some("get_note".into())
                },
                problem: EntryProblem::InvalidPath(*problem),
            },
            "{path}"
        );
        assert_eq!(
            message(&error),
            format!("{AT}field \"source.path\" {text}"),
            "{path}"
        );
        assert_eq!(error.field(), Some("source.path"));
    }
}

#[test]
fn the_first_invalid_field_in_order_is_reported() {
    let error = error_after(|e| {
        e["safety"] = json!("x");
        e["source"]["method"] = json!("get");
        e.as_object_mut().unwrap().remove("title");
    });
    assert_eq!(message(&error), format!("{AT}field \"title\" is missing"));
    // An earlier entry's problem wins over a later one's.
    let mut bad = entry("a");
    bad["safety"] = json!("x");
    let error = Catalog::from_value(catalog(vec![bad, json!(1)])).unwrap_err();
    assert!(message(&error).contains("tools[0] (name \"a\")"));
}

#[test]
fn serde_round_trip_and_deserialize_validates() {
    let loaded = Catalog::from_value(catalog(vec![entry("get_note")])).unwrap();
    let text = serde_json::to_string(&loaded).unwrap();
    let value: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(value, catalog(vec![entry("get_note")]));
    let again: Catalog = serde_json::from_str(&text).unwrap();
    assert_eq!(again, loaded);
    assert_eq!(text.parse::<Catalog>().unwrap(), loaded);

    let dup = catalog(vec![entry("a"), entry("a")]);
    let error = serde_json::from_value::<Catalog>(dup).unwrap_err();
    assert!(
        error
            .to_string()
            .contains("field \"name\" repeats the name of tools[0]")
    );
}
