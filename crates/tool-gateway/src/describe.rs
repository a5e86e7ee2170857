//! How a catalog tool is listed in `tools/list`: its input schema, the hints its HTTP method
//! promises, and the output schema of its answer.

use std::sync::Arc;

use rmcp::model::{JsonObject, Tool as McpTool, ToolAnnotations};
use serde_json::{Value, json};
use tool_catalog::Tool;

/// The `tools/list` entry of one catalog tool.
pub(crate) fn describe(tool: &Tool, openapi: Option<&Value>) -> McpTool {
    let schema: JsonObject = match tool.input_schema() {
        Value::Object(map) => map.clone(),
        // The catalog guarantees an object; an empty schema object is the safe fallback.
        _ => JsonObject::new(),
    };
    // The hints say what the tool's HTTP method promises; every tool acts on this service
    // alone, never on an open world of outside systems.
    let annotations = ToolAnnotations::new()
        .read_only(tool.is_read_only())
        .destructive(tool.is_destructive())
        .idempotent(tool.is_idempotent())
        .open_world(false);
    let listed = McpTool::new(
        tool.name().to_owned(),
        tool.description().to_owned(),
        Arc::new(schema),
    )
    .with_title(tool.title())
    .with_annotations(annotations);
    match openapi.and_then(|doc| output_schema(tool, doc)) {
        Some(output) => listed.with_raw_output_schema(Arc::new(output)),
        None => listed,
    }
}

/// The `outputSchema` of a tool whose answer has a schema (`responseSchemaRef`, looked up in
/// the OpenAPI document): the shape of the `structuredContent` that `tools/call` answers,
/// whose `body` is held to the answer's schema when the status is 2xx. Any other status carries
/// what the API sent (a problem document, mostly), so the schema admits every answer a call
/// can get, as MCP clients that validate `structuredContent` need.
pub fn output_schema(tool: &Tool, openapi: &Value) -> Option<JsonObject> {
    let reference = tool.response_schema_ref()?;
    let mut answer = match tool_catalog::schema::resolve(openapi, reference) {
        Ok(answer) => answer,
        Err(error) => {
            log::error!(
                "tool {}: responseSchemaRef: {error}; no outputSchema",
                tool.name()
            );
            return None;
        }
    };
    // Refs point at the root's $defs: they move from the answer's schema to the envelope's.
    let defs = answer.as_object_mut().and_then(|a| a.remove("$defs"));
    let mut schema = json!({
        "type": "object",
        "properties": {
            "tool": {"const": tool.name()},
            "operationId": {"const": tool.operation_id()},
            "statusCode": {"type": "integer", "minimum": 100, "maximum": 599},
            "requestId": {"type": ["string", "null"]},
            "body": {"description": "The API's answer: the schema below when statusCode is 2xx, \
                     else what the API sent (an RFC 9457 problem document, mostly)."}
        },
        "required": ["tool", "operationId", "statusCode", "requestId", "body"],
        "if": {"properties": {"statusCode": {"minimum": 200, "maximum": 299}}},
        "then": {"properties": {"body": answer}}
    });
    if let (Some(defs), Value::Object(root)) = (defs, &mut schema) {
        root.insert("$defs".into(), defs);
    }
    match schema {
        Value::Object(root) => Some(root),
        _ => None,
    }
}
