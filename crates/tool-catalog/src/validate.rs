//! Catalog validation: JSON value in, [`Catalog`] or the first [`CatalogError`] out.
//!
//! Entries are checked in catalog order and, within an entry, field by field in this order:
//! `name` (so later errors can name the entry), `title`, `description`, `safety`, `source`
//! (`type`, `operationId`, `method`, `path`), `inputSchema`, `responseSchemaRef`. Unknown members
//! are ignored.

use serde_json::{Map, Value};

use crate::error::{CatalogError, EntryProblem, EntryRef, PathProblem};
use crate::model::{Catalog, Method, PathPart, PathTemplate, Safety, Source, SourceType, Tool};

/// The longest tool name (and `{param}` token name).
pub const NAME_MAX: usize = 64;

pub(crate) fn catalog(value: Value) -> Result<Catalog, CatalogError> {
    let Value::Object(mut top) = value else {
        return Err(CatalogError::NotAnObject);
    };
    let entries = match top.remove("tools") {
        None => return Err(CatalogError::MissingTools),
        Some(Value::Array(entries)) => entries,
        Some(_) => return Err(CatalogError::ToolsNotArray),
    };
    let mut tools: Vec<Tool> = Vec::with_capacity(entries.len());
    for (index, value) in entries.into_iter().enumerate() {
        let mut name = None;
        let result = entry(value, &tools, &mut name);
        let tool = result.map_err(|problem| CatalogError::Entry {
            entry: EntryRef { index, name },
            problem,
        })?;
        tools.push(tool);
    }
    Ok(Catalog { tools })
}

/// Validates one entry. `known_name` receives the name as soon as it is known to be valid, so
/// the error can name the entry.
fn entry(
    value: Value,
    earlier: &[Tool],
    known_name: &mut Option<String>,
) -> Result<Tool, EntryProblem> {
    let Value::Object(mut map) = value else {
        return Err(EntryProblem::NotAnObject);
    };

    let name = string(&mut map, "name", "name")?;
    if !is_valid_name(&name) {
        return Err(EntryProblem::InvalidName);
    }
    *known_name = Some(name.clone());
    if let Some(first) = earlier.iter().position(|tool| tool.name == name) {
        return Err(EntryProblem::DuplicateName { first });
    }

    let title = string(&mut map, "title", "title")?;
    let description = string(&mut map, "description", "description")?;
    let safety =
        Safety::parse(&string(&mut map, "safety", "safety")?).ok_or(EntryProblem::InvalidSafety)?;
    let source = source(map.remove("source"))?;
    // A read-only tool runs without the gateway's bearer token and is announced to agents as
    // `readOnlyHint: true`: only a GET may claim that.
    if safety == Safety::Read && source.method != Method::Get {
        return Err(EntryProblem::ReadSafetyOnWrite(source.method));
    }
    let input_schema = input_schema(map.remove("inputSchema"))?;
    let response_schema_ref = match map.remove("responseSchemaRef") {
        None | Some(Value::Null) => None,
        Some(Value::String(reference)) => Some(reference),
        Some(_) => return Err(EntryProblem::InvalidResponseSchemaRef),
    };

    Ok(Tool {
        name,
        title,
        description,
        safety,
        source,
        input_schema,
        response_schema_ref,
    })
}

fn source(value: Option<Value>) -> Result<Source, EntryProblem> {
    let mut map = match value {
        None => return Err(EntryProblem::Missing("source")),
        Some(Value::Object(map)) => map,
        Some(_) => return Err(EntryProblem::SourceNotAnObject),
    };
    if string(&mut map, "type", "source.type")? != "openapi" {
        return Err(EntryProblem::InvalidSourceType);
    }
    let operation_id = string(&mut map, "operationId", "source.operationId")?;
    if operation_id.trim().is_empty() {
        return Err(EntryProblem::EmptyOperationId);
    }
    let method = Method::parse(&string(&mut map, "method", "source.method")?)
        .ok_or(EntryProblem::InvalidMethod)?;
    let path = path_template(string(&mut map, "path", "source.path")?)
        .map_err(EntryProblem::InvalidPath)?;
    Ok(Source {
        kind: SourceType::OpenApi,
        operation_id,
        method,
        path,
    })
}

fn input_schema(value: Option<Value>) -> Result<Value, EntryProblem> {
    match value {
        None => Err(EntryProblem::Missing("inputSchema")),
        Some(Value::Object(schema)) => match schema.get("type") {
            None => Ok(Value::Object(schema)),
            Some(Value::String(kind)) if kind == "object" => Ok(Value::Object(schema)),
            Some(_) => Err(EntryProblem::InputSchemaNotObjectType),
        },
        Some(_) => Err(EntryProblem::InputSchemaNotAnObject),
    }
}

/// Takes the required string member `key`; `field` is how errors name it.
fn string(
    map: &mut Map<String, Value>,
    key: &str,
    field: &'static str,
) -> Result<String, EntryProblem> {
    match map.remove(key) {
        None => Err(EntryProblem::Missing(field)),
        Some(Value::String(text)) => Ok(text),
        Some(_) => Err(EntryProblem::NotAString(field)),
    }
}

/// 1 to 64 characters of `[A-Za-z0-9_.-]`.
pub(crate) fn is_valid_name(name: &str) -> bool {
    (1..=NAME_MAX).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
}

/// Parses and checks a `source.path` template.
///
/// Outside tokens only URL path characters are allowed (RFC 3986 unreserved and sub-delims,
/// `:`, `@`, `/` and `%HH` escapes), so the literal text can be copied into a URL as is. A
/// template whose first segment holds a `:` (a scheme) or that starts with `//` (a host) is an
/// absolute URL and refused, as are `?`, `#` and literal `.`/`..` segments.
pub(crate) fn path_template(raw: String) -> Result<PathTemplate, PathProblem> {
    if raw.is_empty() {
        return Err(PathProblem::Empty);
    }
    let first_segment = raw.split('/').next().unwrap_or_default();
    if raw.starts_with("//") || first_segment.contains(':') {
        return Err(PathProblem::AbsoluteUrl);
    }
    if raw.contains(['?', '#']) {
        return Err(PathProblem::QueryOrFragment);
    }

    let bytes = raw.as_bytes();
    let mut parts = Vec::new();
    let mut literal_start = 0;
    let mut token_start: Option<usize> = None;
    let mut i = 0;
    while i < bytes.len() {
        match (bytes[i], token_start) {
            (b'{', Some(_)) => return Err(PathProblem::NestedToken),
            (b'{', None) => {
                if literal_start < i {
                    parts.push(PathPart::Literal(raw[literal_start..i].to_owned()));
                }
                token_start = Some(i + 1);
            }
            (b'}', None) => return Err(PathProblem::UnopenedToken),
            (b'}', Some(start)) => {
                let name = &raw[start..i];
                if name.is_empty() {
                    return Err(PathProblem::EmptyToken);
                }
                if !is_valid_name(name) {
                    return Err(PathProblem::InvalidTokenName);
                }
                parts.push(PathPart::Param(name.to_owned()));
                token_start = None;
                literal_start = i + 1;
            }
            (_, Some(_)) => {}
            (b'%', None) => {
                let escape = bytes.get(i + 1..i + 3).unwrap_or_default();
                if escape.len() != 2 || !escape.iter().all(u8::is_ascii_hexdigit) {
                    return Err(PathProblem::InvalidCharacter);
                }
                i += 2;
            }
            (byte, None) => {
                if !is_path_char(byte) {
                    return Err(PathProblem::InvalidCharacter);
                }
            }
        }
        i += 1;
    }
    if token_start.is_some() {
        return Err(PathProblem::UnclosedToken);
    }
    if literal_start < raw.len() {
        parts.push(PathPart::Literal(raw[literal_start..].to_owned()));
    }
    if raw
        .split('/')
        .any(|segment| !segment.contains('{') && is_dot_segment(segment))
    {
        return Err(PathProblem::DotSegment);
    }
    Ok(PathTemplate { raw, parts })
}

/// RFC 3986 `pchar` without `%` (checked separately), plus `/`.
fn is_path_char(byte: u8) -> bool {
    byte.is_ascii_alphanumeric()
        || matches!(
            byte,
            b'-' | b'.'
                | b'_'
                | b'~'
                | b'!'
                | b'$'
                | b'&'
                | b'\''
                | b'('
                | b')'
                | b'*'
                | b'+'
                | b','
                | b';'
                | b'='
                | b':'
                | b'@'
                | b'/'
        )
}

/// A segment that a URL parser treats as `.` or `..`. The WHATWG URL standard (the `url` crate,
/// so reqwest, and browsers) also counts `%2e` in either case as a dot.
pub(crate) fn is_dot_segment(segment: &str) -> bool {
    let dots = segment.to_ascii_lowercase().replace("%2e", ".");
    dots == "." || dots == ".."
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(raw: &str) -> Vec<PathPart> {
        path_template(raw.to_owned()).unwrap().parts
    }

    #[test]
    fn splits_literals_and_tokens() {
        assert_eq!(
            parts("/notes/id_{id}/x{a}{b}"),
            vec![
                PathPart::Literal("/notes/id_".into()),
                PathPart::Param("id".into()),
                PathPart::Literal("/x".into()),
                PathPart::Param("a".into()),
                PathPart::Param("b".into()),
            ]
        );
        assert_eq!(parts("{id}"), vec![PathPart::Param("id".into())]);
        assert_eq!(parts("/a%2Fb"), vec![PathPart::Literal("/a%2Fb".into())]);
    }

    #[test]
    fn dot_segments() {
        for segment in [".", "..", "%2e", "%2E", ".%2e", "%2E.", "%2e%2E"] {
            assert!(is_dot_segment(segment), "{segment}");
        }
        for segment in ["", "...", "a.", ".a", "%2e%2e%2e", "%252e"] {
            assert!(!is_dot_segment(segment), "{segment}");
        }
    }

    #[test]
    fn names() {
        assert!(is_valid_name("get_note.v2-x"));
        assert!(is_valid_name(&"a".repeat(64)));
        assert!(!is_valid_name(&"a".repeat(65)));
        assert!(!is_valid_name(""));
        assert!(!is_valid_name("get note"));
        assert!(!is_valid_name("nöte"));
    }
}
