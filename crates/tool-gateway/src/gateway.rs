//! The MCP server: `tools/list` and `tools/call` from the catalog, through rmcp's
//! [`ServerHandler`] (no macros: the tools exist only at run time).

use std::sync::Arc;

use rmcp::{
    ErrorData as McpError, RoleServer, ServerHandler,
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
        JsonObject, ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig,
        Tool as McpTool,
    },
    service::RequestContext,
};
use serde_json::{Value, json};
use tool_catalog::{BaseUrl, Catalog, CatalogError, Safety, Tool};
use trace_context::TraceParent;

use crate::describe::describe;
use crate::{
    BearerToken,
    http::Client,
    upstream::{TOKEN_ENV, Upstream},
};

/// What the gateway is started with. The catalog is kept as loaded: an invalid one is not a
/// start-up failure, it is the answer to every `tools/list` and `tools/call`.
#[derive(Debug)]
pub struct GatewayConfig {
    pub catalog: Result<Catalog, CatalogError>,
    pub base_url: BaseUrl,
    pub bearer: Option<BearerToken>,
    pub selection: Selection,
    /// The API's OpenAPI document, where each tool's `responseSchemaRef` points: without it the
    /// tools have no `outputSchema`.
    pub openapi: Option<Value>,
}

/// Which of the catalog's tools this gateway serves (`--read-only`, `--tools`): the others are
/// neither listed nor callable (a call names an unknown tool).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selection {
    /// Only tools whose safety is `read`.
    pub read_only: bool,
    /// Only these tools (all when `None`).
    pub names: Option<Vec<String>>,
}

impl Selection {
    pub fn admits(&self, tool: &Tool) -> bool {
        (!self.read_only || tool.is_read_only())
            && self
                .names
                .as_ref()
                .is_none_or(|names| names.iter().any(|n| n == tool.name()))
    }

    /// Names given with `--tools` that the catalog does not have (a typo would otherwise
    /// silently serve fewer tools).
    pub fn unknown<'a>(&'a self, catalog: &Catalog) -> Vec<&'a str> {
        self.names
            .iter()
            .flatten()
            .filter(|n| catalog.get(n).is_none())
            .map(String::as_str)
            .collect()
    }
}

/// The MCP server handler. Cheap to clone (one per HTTP session).
#[derive(Debug, Clone)]
pub struct Gateway {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    catalog: Result<Catalog, CatalogError>,
    /// `tools/list` entries, built once, in catalog order.
    listed: Vec<McpTool>,
    selection: Selection,
    base_url: BaseUrl,
    bearer: Option<BearerToken>,
    upstream: Upstream,
    /// This process's part of every Idempotency-Key, so that a restarted gateway never repeats
    /// one (its sessions and request ids start over).
    nonce: String,
    /// Calls made without a request context (`Gateway::call`), each its own attempt.
    direct_calls: std::sync::atomic::AtomicU64,
}

/// One `tools/call` as the client sent it: a retry of it (same client, same session, same
/// JSON-RPC id) is the same attempt and gets the same Idempotency-Key, so the API answers it
/// once. Attempts of different clients never share a key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attempt {
    /// Who sent it: the verified client's token digest (client authentication on), or
    /// `anonymous`.
    pub client: String,
    /// The session; a stateless call without a verified client is its own "session", so
    /// that two anonymous clients cannot meet under one key.
    pub session: String,
    pub request_id: String,
}

/// The Idempotency-Key of a write tool's call: `mcp-` and 32 hex digits of the SHA-256 of the
/// gateway process, the attempt, the tool and its arguments (other arguments under a reused
/// request id are another request, with another key).
pub fn retry_key(nonce: &str, attempt: &Attempt, tool: &str, arguments: &JsonObject) -> String {
    use sha2::Digest;
    let mut hash = sha2::Sha256::new();
    for part in [
        nonce,
        &attempt.client,
        &attempt.session,
        &attempt.request_id,
        tool,
    ] {
        hash.update(part.len().to_be_bytes());
        hash.update(part.as_bytes());
    }
    hash.update(Value::Object(arguments.clone()).to_string().as_bytes());
    let digest = hash.finalize();
    let hex: String = digest.iter().take(16).map(|b| format!("{b:02x}")).collect();
    format!("mcp-{hex}")
}

impl Gateway {
    pub fn new(config: GatewayConfig) -> anyhow::Result<Gateway> {
        let listed = match &config.catalog {
            Ok(catalog) => {
                let unknown = config.selection.unknown(catalog);
                if !unknown.is_empty() {
                    anyhow::bail!("--tools names tools the catalog does not have: {unknown:?}");
                }
                catalog
                    .iter()
                    .filter(|tool| config.selection.admits(tool))
                    .map(|tool| describe(tool, config.openapi.as_ref()))
                    .collect()
            }
            Err(_) => Vec::new(),
        };
        Ok(Gateway {
            inner: Arc::new(Inner {
                catalog: config.catalog,
                listed,
                selection: config.selection,
                base_url: config.base_url,
                bearer: config.bearer,
                upstream: Upstream::new()?,
                nonce: process_nonce(),
                direct_calls: std::sync::atomic::AtomicU64::new(0),
            }),
        })
    }

    fn catalog(&self) -> Result<&Catalog, McpError> {
        self.inner
            .catalog
            .as_ref()
            .map_err(|error| McpError::internal_error(error.message(), None))
    }

    /// `tools/list` without the transport around it.
    pub fn list(&self) -> Result<Vec<McpTool>, McpError> {
        self.catalog()?;
        Ok(self.inner.listed.clone())
    }

    /// A number no other call of this process gets.
    fn next_direct_call(&self) -> u64 {
        self.inner
            .direct_calls
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    }

    /// `tools/call` without the transport around it: every call its own attempt.
    pub async fn call(
        &self,
        name: &str,
        arguments: JsonObject,
    ) -> Result<CallToolResult, McpError> {
        let n = self.next_direct_call();
        let attempt = Attempt {
            client: "direct".to_owned(),
            session: "direct".to_owned(),
            request_id: n.to_string(),
        };
        self.call_as(name, arguments, &attempt, None, None).await
    }

    /// `tools/call` of `attempt`: a write tool sends the attempt's Idempotency-Key. With a
    /// verified `client` (client authentication on), a write tool runs only for a client whose
    /// own token may write: the gateway's bearer never lends a read token more than it has.
    /// The API request continues the caller's trace (`traceparent`, W3C Trace Context) as a
    /// span of the gateway's, or starts one.
    pub async fn call_as(
        &self,
        name: &str,
        arguments: JsonObject,
        attempt: &Attempt,
        client: Option<&Client>,
        traceparent: Option<&str>,
    ) -> Result<CallToolResult, McpError> {
        let catalog = self.catalog()?;
        let Some(tool) = catalog.get(name).filter(|t| self.inner.selection.admits(t)) else {
            return Err(McpError::invalid_params(
                format!("unknown tool \"{}\"", shorten(name)),
                None,
            ));
        };
        let spec = tool
            .build_request_at(&self.inner.base_url, &arguments)
            .map_err(|error| McpError::invalid_params(error.to_string(), None))?;

        if tool.safety() == Safety::Write && client.is_some_and(|c| !c.may_write) {
            return Ok(CallToolResult::error(vec![ContentBlock::text(format!(
                "Tool \"{}\" is a write tool: your token's scope is read, and only a token with \
                 scope write or admin may call write tools. No request was sent.",
                tool.name()
            ))]));
        }
        // Fail closed: a tool that is not `read` needs the token before anything is sent.
        let bearer = match tool.safety() {
            Safety::Read => None,
            Safety::Write => match &self.inner.bearer {
                Some(token) => Some(token),
                None => {
                    return Ok(CallToolResult::error(vec![ContentBlock::text(format!(
                        "Tool \"{}\" is a write tool and needs a bearer token in the {TOKEN_ENV} \
                         environment variable, which is not set. No request was sent.",
                        tool.name()
                    ))]));
                }
            },
        };

        let key = bearer.map(|_| retry_key(&self.inner.nonce, attempt, tool.name(), &arguments));
        let span = TraceParent::continue_or_start(traceparent);
        log::info!(
            "tools/call {} -> {} {} trace_id={}",
            tool.name(),
            spec.method,
            spec.url,
            span.trace_id()
        );
        match self
            .inner
            .upstream
            .send(&spec, bearer, key.as_deref(), &span)
            .await
        {
            Ok(reply) => {
                let structured = json!({
                    "tool": tool.name(),
                    "operationId": tool.operation_id(),
                    "statusCode": reply.status,
                    "requestId": reply.request_id,
                    "body": reply.body,
                });
                let text = serde_json::to_string_pretty(&structured)
                    .unwrap_or_else(|_| structured.to_string());
                let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
                result.structured_content = Some(structured);
                result.is_error = Some(!(200..300).contains(&reply.status));
                Ok(result)
            }
            Err(failure) => {
                log::warn!("tools/call {}: {:?}", tool.name(), failure);
                Ok(CallToolResult::error(vec![ContentBlock::text(format!(
                    "Tool \"{}\": {}",
                    tool.name(),
                    failure.message()
                ))]))
            }
        }
    }
}

/// Unique to this process run: its id and start time.
fn process_nonce() -> String {
    let started = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("{}-{started}", std::process::id())
}

/// A client-supplied name, cut to a length that is safe to echo.
fn shorten(name: &str) -> String {
    name.chars().take(64).collect()
}

impl ServerHandler for Gateway {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(
                "tool-gateway",
                env!("CARGO_PKG_VERSION"),
            ))
            .with_instructions(
                "Each tool calls one operation of the notes service's HTTP API. Write tools need \
                 the gateway to be started with SERVICE_MCP_BEARER_TOKEN.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(self.list()?))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let arguments = request.arguments.unwrap_or_default();
        // The HTTP transport puts the request's parts in the context; stdio is one session.
        let parts = context.extensions.get::<axum::http::request::Parts>();
        let client = parts.and_then(|p| p.extensions.get::<Client>());
        let session = match parts {
            None => "stdio".to_owned(),
            Some(parts) => match parts.headers.get("mcp-session-id") {
                Some(id) => format!("session:{}", id.to_str().unwrap_or("")),
                // Stateless: a verified client's retries share its key; anonymous calls
                // cannot be told apart, so each is its own attempt.
                None if client.is_some() => "stateless".to_owned(),
                None => format!("call:{}", self.next_direct_call()),
            },
        };
        let attempt = Attempt {
            client: client.map_or_else(|| "anonymous".to_owned(), |c| c.key.clone()),
            session,
            request_id: serde_json::to_string(&context.id).unwrap_or_default(),
        };
        let traceparent = parts
            .and_then(|p| p.headers.get(trace_context::HEADER))
            .and_then(|v| v.to_str().ok());
        self.call_as(&request.name, arguments, &attempt, client, traceparent)
            .await
            .map(Into::into)
    }

    fn get_tool(&self, name: &str) -> Option<McpTool> {
        self.inner
            .listed
            .iter()
            .find(|tool| tool.name == name)
            .cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gateway(catalog: &str) -> Gateway {
        Gateway::new(GatewayConfig {
            catalog: Catalog::from_json_str(catalog),
            base_url: BaseUrl::parse("http://127.0.0.1:9").unwrap(),
            bearer: None,
            selection: Selection::default(),
            openapi: None,
        })
        .unwrap()
    }

    const ONE: &str = r#"{"tools": [{
        "name": "delete_note", "title": "Delete a note", "description": "Deletes one note.",
        "safety": "write",
        "source": {"type": "openapi", "operationId": "delete_note", "method": "DELETE", "path": "/notes/{note_id}"},
        "inputSchema": {"type": "object", "properties": {"note_id": {"type": "integer"}}, "required": ["note_id"]}
    }]}"#;

    #[test]
    fn list_describes_each_tool() {
        let tools = gateway(ONE).list().unwrap();
        let listed = serde_json::to_value(&tools).unwrap();
        assert_eq!(
            listed,
            json!([{
                "name": "delete_note",
                "title": "Delete a note",
                "description": "Deletes one note.",
                "inputSchema": {"type": "object", "properties": {"note_id": {"type": "integer"}}, "required": ["note_id"]},
                "annotations": {
                    "readOnlyHint": false, "destructiveHint": true, "idempotentHint": true,
                    "openWorldHint": false
                }
            }])
        );
    }

    const TWO: &str = r#"{"tools": [
        {"name": "get_note", "title": "Get a note", "description": "Reads one note.", "safety": "read",
         "source": {"type": "openapi", "operationId": "get_note", "method": "GET", "path": "/notes/{note_id}"},
         "inputSchema": {"type": "object", "properties": {"note_id": {"type": "integer"}}, "required": ["note_id"]}},
        {"name": "create_note", "title": "Create a note", "description": "Creates a note.", "safety": "write",
         "source": {"type": "openapi", "operationId": "create_note", "method": "POST", "path": "/notes"},
         "inputSchema": {"type": "object"}},
        {"name": "delete_note", "title": "Delete a note", "description": "Deletes one note.", "safety": "write",
         "source": {"type": "openapi", "operationId": "delete_note", "method": "DELETE", "path": "/notes/{note_id}"},
         "inputSchema": {"type": "object", "properties": {"note_id": {"type": "integer"}}, "required": ["note_id"]}}
    ]}"#;

    fn selected(selection: Selection) -> anyhow::Result<Gateway> {
        Gateway::new(GatewayConfig {
            catalog: Catalog::from_json_str(TWO),
            base_url: BaseUrl::parse("http://127.0.0.1:9").unwrap(),
            bearer: None,
            selection,
            openapi: None,
        })
    }

    fn names(gateway: &Gateway) -> Vec<String> {
        gateway
            .list()
            .unwrap()
            .into_iter()
            .map(|t| t.name.to_string())
            .collect()
    }

    #[tokio::test]
    async fn read_only_and_tools_select_what_is_listed_and_callable() {
        let all = selected(Selection::default()).unwrap();
        assert_eq!(names(&all), ["get_note", "create_note", "delete_note"]);
        let hints: Vec<Value> = all
            .list()
            .unwrap()
            .iter()
            .map(|t| serde_json::to_value(&t.annotations).unwrap())
            .collect();
        assert_eq!(hints[0]["readOnlyHint"], true);
        assert_eq!(hints[1]["idempotentHint"], false, "POST is not idempotent");
        assert_eq!(hints[2]["idempotentHint"], true);
        assert!(hints.iter().all(|h| h["openWorldHint"] == false));

        let read_only = selected(Selection {
            read_only: true,
            names: None,
        })
        .unwrap();
        assert_eq!(names(&read_only), ["get_note"]);
        let error = read_only
            .call("delete_note", JsonObject::new())
            .await
            .unwrap_err();
        assert_eq!(error.code.0, -32602, "a tool left out is an unknown tool");

        let picked = Selection {
            read_only: false,
            names: Some(vec!["delete_note".into(), "get_note".into()]),
        };
        assert_eq!(
            names(&selected(picked).unwrap()),
            ["get_note", "delete_note"]
        );
        let both = Selection {
            read_only: true,
            names: Some(vec!["delete_note".into()]),
        };
        assert!(names(&selected(both).unwrap()).is_empty());

        let typo = Selection {
            read_only: false,
            names: Some(vec!["get_nite".into()]),
        };
        let error = selected(typo).unwrap_err().to_string();
        assert!(error.contains("get_nite"), "{error}");
    }

    #[test]
    fn a_retried_attempt_keeps_its_key_and_anything_else_gets_another() {
        let attempt = Attempt {
            client: "c1".into(),
            session: "s1".into(),
            request_id: "7".into(),
        };
        let args = |v: Value| v.as_object().unwrap().clone();
        let key = retry_key("n", &attempt, "create_note", &args(json!({"title": "t"})));
        assert!(key.starts_with("mcp-") && key.len() == 36, "{key}");
        assert_eq!(
            key,
            retry_key("n", &attempt, "create_note", &args(json!({"title": "t"})))
        );
        let other_id = Attempt {
            request_id: "8".into(),
            ..attempt.clone()
        };
        let other_session = Attempt {
            session: "s2".into(),
            ..attempt.clone()
        };
        let other_client = Attempt {
            client: "c2".into(),
            ..attempt.clone()
        };
        for different in [
            retry_key(
                "n",
                &other_client,
                "create_note",
                &args(json!({"title": "t"})),
            ),
            retry_key("n", &other_id, "create_note", &args(json!({"title": "t"}))),
            retry_key(
                "n",
                &other_session,
                "create_note",
                &args(json!({"title": "t"})),
            ),
            retry_key("m", &attempt, "create_note", &args(json!({"title": "t"}))),
            retry_key("n", &attempt, "create_tag", &args(json!({"title": "t"}))),
            retry_key("n", &attempt, "create_note", &args(json!({"title": "u"}))),
        ] {
            assert_ne!(different, key);
        }
    }

    #[test]
    fn invalid_catalog_is_an_internal_error_naming_the_field() {
        let error = gateway(r#"{"tools": [{"name": "x"}]}"#).list().unwrap_err();
        assert_eq!(error.code.0, -32603);
        assert_eq!(
            error.message,
            r#"tool catalog is invalid: tools[0] (name "x"): field "title" is missing"#
        );
    }

    #[tokio::test]
    async fn unknown_tool_and_bad_arguments_are_invalid_params() {
        let gateway = gateway(ONE);
        let error = gateway.call("nope", JsonObject::new()).await.unwrap_err();
        assert_eq!(error.code.0, -32602);
        let error = gateway
            .call("delete_note", JsonObject::new())
            .await
            .unwrap_err();
        assert_eq!(error.code.0, -32602);
        assert!(error.message.contains("note_id"));
    }

    #[tokio::test]
    async fn write_tool_without_token_fails_closed() {
        let mut args = JsonObject::new();
        args.insert("note_id".into(), json!(1));
        let result = gateway(ONE).call("delete_note", args).await.unwrap();
        assert_eq!(result.is_error, Some(true));
        let text = serde_json::to_string(&result.content).unwrap();
        assert!(text.contains(TOKEN_ENV) && text.contains("No request was sent"));
    }
}
