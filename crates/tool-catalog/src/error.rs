//! The two error types: [`CatalogError`] (loading a catalog) and [`ArgumentError`] (mapping a
//! call's arguments to a request).
//!
//! Every message is built from fixed text, entry indexes, validated tool names and field names.
//! None carries a file path, a line or column number, a serde message or an argument value.

use std::fmt;

use crate::model::Method;

/// Why a catalog was refused. `Display` (and [`CatalogError::message`]) is the JSON-RPC error
/// message: `tool catalog is invalid: <which entry and field>`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CatalogError {
    /// The text is not JSON at all (no position is reported).
    #[error("tool catalog is invalid: the catalog is not valid JSON")]
    InvalidJson,
    /// The top level is JSON but not an object.
    #[error("tool catalog is invalid: the catalog must be a JSON object with a \"tools\" array")]
    NotAnObject,
    /// The top-level `tools` member is absent.
    #[error("tool catalog is invalid: field \"tools\" is missing")]
    MissingTools,
    /// The top-level `tools` member is not an array.
    #[error("tool catalog is invalid: field \"tools\" must be an array")]
    ToolsNotArray,
    /// One entry of `tools` is invalid.
    #[error("tool catalog is invalid: {entry}: {problem}")]
    Entry {
        entry: EntryRef,
        problem: EntryProblem,
    },
}

impl CatalogError {
    /// The JSON-RPC error message, `tool catalog is invalid: <which entry and field>`.
    pub fn message(&self) -> String {
        self.to_string()
    }

    /// The offending field (`"tools"`, `"name"`, `"source.method"`...), when there is one.
    pub fn field(&self) -> Option<&'static str> {
        match self {
            CatalogError::InvalidJson | CatalogError::NotAnObject => None,
            CatalogError::MissingTools | CatalogError::ToolsNotArray => Some("tools"),
            CatalogError::Entry { problem, .. } => problem.field(),
        }
    }

    /// The offending entry, when the error is about one entry.
    pub fn entry(&self) -> Option<&EntryRef> {
        match self {
            CatalogError::Entry { entry, .. } => Some(entry),
            _ => None,
        }
    }
}

/// Which entry of `tools` an error is about: its index, and its name once the name is known to
/// be valid (an invalid name is never echoed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntryRef {
    pub index: usize,
    pub name: Option<String>,
}

impl fmt::Display for EntryRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.name {
            Some(name) => write!(f, "tools[{}] (name \"{name}\")", self.index),
            None => write!(f, "tools[{}]", self.index),
        }
    }
}

/// What is wrong with one entry. The `Display` text names the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EntryProblem {
    #[error("the entry must be a JSON object")]
    NotAnObject,
    #[error("field \"{0}\" is missing")]
    Missing(&'static str),
    #[error("field \"{0}\" must be a string")]
    NotAString(&'static str),
    #[error("field \"name\" must be 1 to 64 characters of A-Z, a-z, 0-9, \"_\", \".\" or \"-\"")]
    InvalidName,
    #[error("field \"name\" repeats the name of tools[{first}]")]
    DuplicateName { first: usize },
    #[error("field \"safety\" must be \"read\" or \"write\"")]
    InvalidSafety,
    #[error(
        "field \"safety\" is \"read\", but source.method {0} changes data: only GET tools may be \
         \"read\" (use \"write\")"
    )]
    ReadSafetyOnWrite(Method),
    #[error("field \"source\" must be a JSON object")]
    SourceNotAnObject,
    #[error("field \"source.type\" must be \"openapi\"")]
    InvalidSourceType,
    #[error("field \"source.operationId\" must not be empty")]
    EmptyOperationId,
    #[error(
        "field \"source.method\" must be one of \"GET\", \"POST\", \"PUT\", \"PATCH\", \"DELETE\" \
         (uppercase)"
    )]
    InvalidMethod,
    #[error("field \"source.path\" {0}")]
    InvalidPath(PathProblem),
    #[error("field \"inputSchema\" must be a JSON object (a JSON Schema)")]
    InputSchemaNotAnObject,
    #[error(
        "field \"inputSchema\" must describe an object: its \"type\", when present, must be \"object\""
    )]
    InputSchemaNotObjectType,
    #[error("field \"responseSchemaRef\" must be a string or null")]
    InvalidResponseSchemaRef,
}

impl EntryProblem {
    /// The offending field, dotted for `source` members (`"source.path"`).
    pub fn field(&self) -> Option<&'static str> {
        Some(match self {
            EntryProblem::NotAnObject => return None,
            EntryProblem::Missing(field) | EntryProblem::NotAString(field) => field,
            EntryProblem::InvalidName | EntryProblem::DuplicateName { .. } => "name",
            EntryProblem::InvalidSafety | EntryProblem::ReadSafetyOnWrite(_) => "safety",
            EntryProblem::SourceNotAnObject => "source",
            EntryProblem::InvalidSourceType => "source.type",
            EntryProblem::EmptyOperationId => "source.operationId",
            EntryProblem::InvalidMethod => "source.method",
            EntryProblem::InvalidPath(_) => "source.path",
            EntryProblem::InputSchemaNotAnObject | EntryProblem::InputSchemaNotObjectType => {
                "inputSchema"
            }
            EntryProblem::InvalidResponseSchemaRef => "responseSchemaRef",
        })
    }
}

/// What is wrong with a `source.path` template. `Display` completes the sentence
/// `field "source.path" ...`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum PathProblem {
    #[error("must not be empty")]
    Empty,
    #[error("must be a path relative to the base URL, not an absolute URL")]
    AbsoluteUrl,
    #[error("must not contain a query or fragment (\"?\" or \"#\")")]
    QueryOrFragment,
    #[error("may only contain URL path characters outside {{param}} tokens")]
    InvalidCharacter,
    #[error("must not contain \".\" or \"..\" segments")]
    DotSegment,
    #[error("has a \"{{\" without a matching \"}}\"")]
    UnclosedToken,
    #[error("has a \"}}\" without a matching \"{{\"")]
    UnopenedToken,
    #[error("has a \"{{\" inside a {{param}} token")]
    NestedToken,
    #[error("has an empty {{}} token")]
    EmptyToken,
    #[error(
        "has a {{param}} token whose name is not 1 to 64 characters of A-Z, a-z, 0-9, \"_\", \
         \".\" or \"-\""
    )]
    InvalidTokenName,
}

/// Why a call's arguments (or the base URL) cannot be turned into a request. The gateway answers
/// these with JSON-RPC -32602; no message echoes an argument value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ArgumentError {
    #[error("argument \"{name}\" is required: it fills a path parameter")]
    MissingPathArgument { name: String },
    #[error("argument \"{name}\" fills a path parameter and must be a string, number or boolean")]
    InvalidPathArgument { name: String },
    #[error("argument \"{name}\" fills a path segment and must not be empty")]
    EmptyPathSegment { name: String },
    #[error("argument \"{name}\" must not make a \".\" or \"..\" path segment")]
    DotPathSegment { name: String },
    #[error(
        "argument \"{name}\" goes to the query string and must be a string, number, boolean, null \
         or an array of strings, numbers and booleans"
    )]
    InvalidQueryArgument { name: String },
    #[error(transparent)]
    InvalidBaseUrl(#[from] BaseUrlError),
}

/// Why a base URL was refused (a configuration error; check it at start-up with
/// [`crate::BaseUrl::parse`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum BaseUrlError {
    #[error("the base URL must start with http:// or https://")]
    Scheme,
    #[error("the base URL has no host")]
    NoHost,
    #[error("the base URL must not contain a query or fragment")]
    QueryOrFragment,
    #[error("the base URL must not contain spaces, control characters or backslashes")]
    InvalidCharacter,
}
