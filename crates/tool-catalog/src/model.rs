//! The catalog types. A [`Catalog`] and its [`Tool`]s exist only validated: they are built by
//! [`Catalog::from_json_str`], [`Catalog::from_value`] or serde's `Deserialize` (which runs the
//! same validation), and serialize back to the catalog's wire format.

use std::fmt;

use serde::{Deserialize, Serialize, Serializer};
use serde_json::Value;

use crate::error::CatalogError;
use crate::validate;

/// A validated tool catalog: `{ "tools": [ ... ] }`, in catalog order, names unique.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "Value")]
pub struct Catalog {
    pub(crate) tools: Vec<Tool>,
}

impl Catalog {
    /// Parses and validates a catalog from JSON text. Invalid JSON is
    /// [`CatalogError::InvalidJson`], without a position.
    pub fn from_json_str(text: &str) -> Result<Catalog, CatalogError> {
        let value: Value = serde_json::from_str(text).map_err(|_| CatalogError::InvalidJson)?;
        Catalog::from_value(value)
    }

    /// Validates a catalog already parsed as JSON. The first invalid entry or field, in catalog
    /// order, is reported.
    pub fn from_value(value: Value) -> Result<Catalog, CatalogError> {
        validate::catalog(value)
    }

    /// The tools, in catalog order.
    pub fn tools(&self) -> &[Tool] {
        &self.tools
    }

    pub fn iter(&self) -> std::slice::Iter<'_, Tool> {
        self.tools.iter()
    }

    /// The tool with this exact (case-sensitive) name.
    pub fn get(&self, name: &str) -> Option<&Tool> {
        self.tools.iter().find(|tool| tool.name == name)
    }

    pub fn len(&self) -> usize {
        self.tools.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }
}

impl TryFrom<Value> for Catalog {
    type Error = CatalogError;

    fn try_from(value: Value) -> Result<Self, Self::Error> {
        Catalog::from_value(value)
    }
}

impl std::str::FromStr for Catalog {
    type Err = CatalogError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Catalog::from_json_str(text)
    }
}

impl<'a> IntoIterator for &'a Catalog {
    type Item = &'a Tool;
    type IntoIter = std::slice::Iter<'a, Tool>;

    fn into_iter(self) -> Self::IntoIter {
        self.tools.iter()
    }
}

/// One validated catalog entry.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Tool {
    pub(crate) name: String,
    pub(crate) title: String,
    pub(crate) description: String,
    pub(crate) safety: Safety,
    pub(crate) source: Source,
    pub(crate) input_schema: Value,
    pub(crate) response_schema_ref: Option<String>,
}

impl Tool {
    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn title(&self) -> &str {
        &self.title
    }

    pub fn description(&self) -> &str {
        &self.description
    }

    pub fn safety(&self) -> Safety {
        self.safety
    }

    pub fn source(&self) -> &Source {
        &self.source
    }

    pub fn operation_id(&self) -> &str {
        &self.source.operation_id
    }

    pub fn method(&self) -> Method {
        self.source.method
    }

    /// The path template as written in the catalog, `{param}` tokens included.
    pub fn path(&self) -> &str {
        &self.source.path.raw
    }

    /// The names of the `{param}` tokens of the path, in order (a repeated token repeats).
    pub fn path_params(&self) -> impl Iterator<Item = &str> {
        self.source.path.params()
    }

    /// The JSON Schema of the arguments, exactly as in the catalog.
    pub fn input_schema(&self) -> &Value {
        &self.input_schema
    }

    pub fn response_schema_ref(&self) -> Option<&str> {
        self.response_schema_ref.as_deref()
    }

    /// `safety == read`: the MCP `readOnlyHint`. A tool that is not read-only needs the gateway's
    /// Bearer token.
    pub fn is_read_only(&self) -> bool {
        self.safety == Safety::Read
    }

    /// `method == DELETE`: the MCP `destructiveHint`.
    pub fn is_destructive(&self) -> bool {
        self.source.method == Method::Delete
    }

    /// `PUT` or `DELETE`: the MCP `idempotentHint` (calling again with the same arguments has
    /// no further effect). `POST` is not, `PATCH` need not be, and for a read it says nothing.
    pub fn is_idempotent(&self) -> bool {
        matches!(self.source.method, Method::Put | Method::Delete)
    }
}

/// The `source` member: the API operation a tool calls.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Source {
    #[serde(rename = "type")]
    pub(crate) kind: SourceType,
    pub(crate) operation_id: String,
    pub(crate) method: Method,
    pub(crate) path: PathTemplate,
}

impl Source {
    pub fn kind(&self) -> SourceType {
        self.kind
    }

    pub fn operation_id(&self) -> &str {
        &self.operation_id
    }

    pub fn method(&self) -> Method {
        self.method
    }

    pub fn path(&self) -> &str {
        &self.path.raw
    }
}

/// `source.type`; only `openapi` exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum SourceType {
    #[serde(rename = "openapi")]
    OpenApi,
}

/// `safety`: `read` or `write`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Safety {
    Read,
    Write,
}

impl Safety {
    pub fn as_str(self) -> &'static str {
        match self {
            Safety::Read => "read",
            Safety::Write => "write",
        }
    }

    pub(crate) fn parse(text: &str) -> Option<Safety> {
        match text {
            "read" => Some(Safety::Read),
            "write" => Some(Safety::Write),
            _ => None,
        }
    }
}

impl fmt::Display for Safety {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `source.method`. Only the five uppercase names are accepted (HTTP methods are
/// case-sensitive; `get` is refused, not folded).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Method {
    Get,
    Post,
    Put,
    Patch,
    Delete,
}

impl Method {
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Get => "GET",
            Method::Post => "POST",
            Method::Put => "PUT",
            Method::Patch => "PATCH",
            Method::Delete => "DELETE",
        }
    }

    /// GET and DELETE send the remaining arguments as the query string and no body; POST, PUT
    /// and PATCH send them as a JSON object body.
    pub fn has_body(self) -> bool {
        matches!(self, Method::Post | Method::Put | Method::Patch)
    }

    pub(crate) fn parse(text: &str) -> Option<Method> {
        match text {
            "GET" => Some(Method::Get),
            "POST" => Some(Method::Post),
            "PUT" => Some(Method::Put),
            "PATCH" => Some(Method::Patch),
            "DELETE" => Some(Method::Delete),
            _ => None,
        }
    }
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A validated `source.path`: the raw text and its parts, literal text and `{param}` tokens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PathTemplate {
    pub(crate) raw: String,
    pub(crate) parts: Vec<PathPart>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum PathPart {
    Literal(String),
    Param(String),
}

impl PathTemplate {
    pub(crate) fn params(&self) -> impl Iterator<Item = &str> {
        self.parts.iter().filter_map(|part| match part {
            PathPart::Param(name) => Some(name.as_str()),
            PathPart::Literal(_) => None,
        })
    }
}

impl Serialize for PathTemplate {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.raw)
    }
}
