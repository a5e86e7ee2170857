use serde_json::{Map, Value};

use crate::{FieldError, Slug};

/// An RFC 9457 problem document before it is bound to a base URL.
///
/// `type` is only known at the edge (it depends on the configured `PROBLEM_BASE_URL`), so the
/// value keeps the [`Slug`] and renders the URI in [`Problem::to_json`].
#[derive(Debug, Clone, PartialEq)]
pub struct Problem {
    pub slug: Slug,
    pub title: String,
    pub status: u16,
    pub detail: String,
    /// The `errors` member of a 422: every invalid field at once.
    pub errors: Vec<FieldError>,
    /// Further extension members (for example `max_bytes` on a 413).
    pub extensions: Map<String, Value>,
}

impl Problem {
    pub fn new(slug: Slug, detail: impl Into<String>) -> Self {
        Problem {
            slug,
            title: slug.title().to_owned(),
            status: slug.status(),
            detail: detail.into(),
            errors: Vec::new(),
            extensions: Map::new(),
        }
    }

    pub fn not_found(resource: &str, id: impl std::fmt::Display) -> Self {
        Problem::new(Slug::NotFound, format!("{resource} {id} does not exist."))
    }

    /// A 422 listing `errors`; the detail sentence names the invalid fields.
    pub fn validation(errors: Vec<FieldError>) -> Self {
        let names: Vec<&str> = errors.iter().map(|e| e.field.as_str()).collect();
        let detail = if names.is_empty() {
            "The request is invalid.".to_owned()
        } else {
            format!("Invalid input: {}.", names.join(", "))
        };
        Problem {
            errors,
            ..Problem::new(Slug::ValidationFailed, detail)
        }
    }

    /// A 500 that carries no internals; the caller logs the cause.
    pub fn internal() -> Self {
        Problem::new(
            Slug::InternalServerError,
            "The server failed to process the request.",
        )
    }

    pub fn with_extension(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.extensions.insert(key.to_owned(), value.into());
        self
    }

    pub fn type_uri(&self, base: &str) -> String {
        format!("{}/{}", base.trim_end_matches('/'), self.slug.as_str())
    }

    /// The wire form, `type` resolved against `base`.
    pub fn to_json(&self, base: &str) -> Value {
        let mut obj = Map::new();
        obj.insert("type".into(), Value::String(self.type_uri(base)));
        obj.insert("title".into(), Value::String(self.title.clone()));
        obj.insert("status".into(), Value::from(self.status));
        obj.insert("detail".into(), Value::String(self.detail.clone()));
        if !self.errors.is_empty() {
            let errors = self.errors.iter().map(FieldError::to_json).collect();
            obj.insert("errors".into(), Value::Array(errors));
        }
        for (k, v) in &self.extensions {
            obj.entry(k.clone()).or_insert_with(|| v.clone());
        }
        Value::Object(obj)
    }
}

/// Implemented by every domain error enum: decides the problem (slug, status, detail) of each
/// variant next to the variant. Storage failures map to [`Problem::internal`].
pub trait ToProblem {
    fn to_problem(&self) -> Problem;

    /// `Some(message)` when the error is answered with a plain `{"error": message}` body (the
    /// body the specification fixes for area D) instead of a problem document; the status stays
    /// the problem's.
    fn plain_error(&self) -> Option<&str> {
        None
    }
}

impl ToProblem for Problem {
    fn to_problem(&self) -> Problem {
        self.clone()
    }
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({}): {}", self.slug, self.status, self.detail)
    }
}

impl std::error::Error for Problem {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::FieldErrorCode;

    #[test]
    fn renders_rfc9457_members() {
        let p = Problem::not_found("Note", 42);
        let json = p.to_json("http://x/problems/");
        assert_eq!(json["type"], "http://x/problems/not-found");
        assert_eq!(json["title"], "Resource not found.");
        assert_eq!(json["status"], 404);
        assert_eq!(json["detail"], "Note 42 does not exist.");
        assert!(json.get("errors").is_none());
    }

    #[test]
    fn validation_lists_every_field() {
        let p = Problem::validation(vec![
            FieldError::new("title", FieldErrorCode::Required, "title is required"),
            FieldError::new("body", FieldErrorCode::TooLong, "body is too long"),
        ]);
        let json = p.to_json("/problems");
        assert_eq!(json["status"], 422);
        assert_eq!(json["type"], "/problems/validation-failed");
        assert_eq!(json["errors"][0]["field"], "title");
        assert_eq!(json["errors"][0]["code"], "required");
        assert_eq!(json["errors"][1]["code"], "too_long");
        assert_eq!(json["detail"], "Invalid input: title, body.");
    }

    #[test]
    fn extensions_never_override_standard_members() {
        let p = Problem::new(Slug::PayloadTooLarge, "too big")
            .with_extension("max_bytes", 10)
            .with_extension("status", 200);
        let json = p.to_json("/problems");
        assert_eq!(json["max_bytes"], 10);
        assert_eq!(json["status"], 413);
    }

    #[test]
    fn internal_problem_has_no_internals() {
        let json = Problem::internal().to_json("/p");
        assert_eq!(json["status"], 500);
        assert_eq!(json["detail"], "The server failed to process the request.");
    }
}
