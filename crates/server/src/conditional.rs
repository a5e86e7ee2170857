//! RFC 9110 conditional requests. A single resource's reads and write answers carry a strong
//! `ETag` (the SHA-256 of the JSON body as sent, cut to 128 bits); `If-None-Match` on a read
//! answers 304 when it names the current tag; `If-Match` on `PUT` and `DELETE` lets the write
//! happen only while the resource still has a tag it names, checked against the row locked in
//! the write's own transaction, else 412 `precondition-failed` and nothing is written.

use actix_web::body::BoxBody;
use actix_web::dev::Payload;
use actix_web::http::header::{CONTENT_TYPE, ETAG, HeaderValue, IF_MATCH, IF_NONE_MATCH};
use actix_web::http::{StatusCode, header::HeaderMap};
use actix_web::web::Json;
use actix_web::{FromRequest, HttpRequest, HttpResponse, Responder};
use apistos::OpenApiVersion;
use apistos::paths::{Header, Response};
use apistos::reference_or::ReferenceOr;
use problem_details::{Problem, Slug, ToProblem};
use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::error::ApiError;
use crate::extract::{HeaderDoc, RawHeader};
use crate::openapi::answers;

/// The strong entity tag of a representation: its bytes' SHA-256, first 128 bits, quoted.
pub fn etag(body: &[u8]) -> String {
    format!("\"{}\"", hex::encode(&Sha256::digest(body)[..16]))
}

/// The entity tags a conditional header lists; `None` for `*` (any current representation).
fn listed(headers: &HeaderMap, name: actix_web::http::header::HeaderName) -> Option<Vec<String>> {
    let mut tags = Vec::new();
    for value in headers.get_all(name) {
        let value = String::from_utf8_lossy(value.as_bytes());
        for tag in value.split(',').map(str::trim).filter(|t| !t.is_empty()) {
            if tag == "*" {
                return None;
            }
            tags.push(tag.to_owned());
        }
    }
    Some(tags)
}

/// `If-None-Match` matches when it is `*` or lists `tag` (weak comparison: `W/` is ignored).
fn none_match(headers: &HeaderMap, tag: &str) -> bool {
    if headers.get(IF_NONE_MATCH).is_none() {
        return false;
    }
    match listed(headers, IF_NONE_MATCH) {
        None => true,
        Some(tags) => tags.iter().any(|t| t.trim_start_matches("W/") == tag),
    }
}

/// A 200 JSON answer with its `ETag`, or 304 when the request's `If-None-Match` names it.
pub struct Tagged<T> {
    body: T,
    /// The tag when it is not the body's digest (an account's is its last sequence).
    tag: Option<String>,
}

impl<T> Tagged<T> {
    pub fn new(body: T) -> Self {
        Tagged { body, tag: None }
    }

    /// An account's representation changes exactly when its last sequence does.
    pub fn by_sequence(body: T, sequence: i64) -> Self {
        Tagged {
            body,
            tag: Some(sequence_tag(sequence)),
        }
    }
}

/// The `ETag` of a resource versioned by a sequence number.
pub fn sequence_tag(sequence: i64) -> String {
    format!("\"{sequence}\"")
}

impl<T: Serialize> Responder for Tagged<T> {
    type Body = BoxBody;

    fn respond_to(self, req: &HttpRequest) -> HttpResponse {
        let body = match serde_json::to_vec(&self.body) {
            Ok(body) => body,
            Err(e) => return actix_web::ResponseError::error_response(&ApiError::internal(e)),
        };
        let tag = self.tag.unwrap_or_else(|| etag(&body));
        let Ok(value) = HeaderValue::from_str(&tag) else {
            return HttpResponse::InternalServerError().finish();
        };
        // Only a read is answered "not modified"; a write's answer is its new state.
        let read = matches!(
            *req.method(),
            actix_web::http::Method::GET | actix_web::http::Method::HEAD
        );
        if read && none_match(req.headers(), &tag) {
            return HttpResponse::NotModified()
                .insert_header((ETAG, value))
                .finish();
        }
        HttpResponse::Ok()
            .insert_header((ETAG, value))
            .insert_header((CONTENT_TYPE, HeaderValue::from_static("application/json")))
            .body(body)
    }
}

/// `If-Match` of a `PUT` or `DELETE`: absent, `*`, or the tags the client last saw.
#[derive(Debug, Clone)]
pub struct IfMatch(Option<Vec<String>>);

impl IfMatch {
    fn absent() -> IfMatch {
        IfMatch(Some(Vec::new()))
    }

    /// Whether the request sent one at all.
    fn is_set(&self) -> bool {
        !matches!(&self.0, Some(tags) if tags.is_empty())
    }

    /// For a resource tagged by sequence: `Ok(None)` when anything goes (absent or `*`),
    /// `Ok(Some(n))` when it names exactly one sequence tag, else the precondition fails.
    pub fn sequence<E>(&self) -> Result<Option<i64>, Precondition<E>> {
        match &self.0 {
            None => Ok(None),
            Some(tags) if tags.is_empty() => Ok(None),
            Some(tags) => match tags.as_slice() {
                [one] => one
                    .strip_prefix('"')
                    .and_then(|t| t.strip_suffix('"'))
                    .and_then(|n| n.parse::<i64>().ok())
                    .map(Some)
                    .ok_or(Precondition::Failed),
                _ => Err(Precondition::Failed),
            },
        }
    }

    /// The whole check of a conditional write, inside its transaction: when If-Match was sent,
    /// `lock` reads (and locks) the current representation, which must have a listed tag.
    /// Without If-Match nothing is read.
    pub fn guard<D: Serialize, E>(
        &self,
        lock: impl FnOnce() -> Result<D, E>,
    ) -> Result<(), Precondition<E>> {
        if !self.is_set() {
            return Ok(());
        }
        self.check(&lock().map_err(Precondition::Op)?)
    }

    /// Passes when nothing was asked, when `*` was (the resource exists: the caller found it),
    /// or when a listed tag is the current representation's (strong comparison: a weak tag
    /// never matches).
    pub fn check<T: Serialize, E>(&self, current: &T) -> Result<(), Precondition<E>> {
        let Some(tags) = &self.0 else { return Ok(()) };
        if tags.is_empty() {
            return Ok(());
        }
        let body = serde_json::to_vec(current).map_err(|_| Precondition::Failed)?;
        let tag = etag(&body);
        if tags.contains(&tag) {
            Ok(())
        } else {
            Err(Precondition::Failed)
        }
    }
}

impl FromRequest for IfMatch {
    type Error = ApiError;
    type Future = std::future::Ready<Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let found = if req.headers().get(IF_MATCH).is_none() {
            IfMatch::absent()
        } else {
            IfMatch(listed(req.headers(), IF_MATCH))
        };
        std::future::ready(Ok(found))
    }
}

/// A conditional write's error: the precondition failed, or the write itself did.
#[derive(Debug, thiserror::Error)]
pub enum Precondition<E> {
    #[error("the If-Match precondition failed")]
    Failed,
    #[error("{0}")]
    Op(#[source] E),
}

impl<E: From<diesel::result::Error>> From<diesel::result::Error> for Precondition<E> {
    fn from(e: diesel::result::Error) -> Self {
        Precondition::Op(E::from(e))
    }
}

impl<E: ToProblem> ToProblem for Precondition<E> {
    fn to_problem(&self) -> Problem {
        match self {
            Precondition::Failed => Problem::new(
                Slug::PreconditionFailed,
                "The resource no longer has the version If-Match names; nothing was written.",
            ),
            Precondition::Op(e) => e.to_problem(),
        }
    }

    fn plain_error(&self) -> Option<&str> {
        match self {
            Precondition::Failed => None,
            Precondition::Op(e) => e.plain_error(),
        }
    }
}

/// Documents `If-None-Match` on a read (`Tagged` reads the header itself when it answers).
pub type IfNoneMatchParam = RawHeader<IfNoneMatchDoc>;

pub struct IfNoneMatchDoc;

impl HeaderDoc for IfNoneMatchDoc {
    const NAME: &'static str = "If-None-Match";
    const REQUIRED: bool = false;
    const DESCRIPTION: &'static str = "Optional: ETags the client holds (or `*`). When one is \
        the current one, the answer is 304 Not Modified with no body.";
    fn schema() -> serde_json::Value {
        serde_json::json!({"type": "string"})
    }
}

pub struct IfMatchDoc;

impl HeaderDoc for IfMatchDoc {
    const NAME: &'static str = "If-Match";
    const REQUIRED: bool = false;
    const DESCRIPTION: &'static str = "Optional: the ETag the client last read (or `*`). The \
        write happens only while the resource still has it; otherwise 412 \
        `precondition-failed` and nothing is written. Without it the write is unconditional.";
    fn schema() -> serde_json::Value {
        serde_json::json!({"type": "string"})
    }
}

crate::header_component!(IfMatch, IfMatchDoc);

/// The `ETag` response header's documentation.
pub fn etag_header(v: OpenApiVersion) -> Header {
    answers::header(
        "Strong entity tag of this representation; send it back in If-None-Match (reads) or \
         If-Match (PUT, DELETE).",
        true,
        serde_json::json!({"type": "string"}),
        v,
    )
}

/// A write's 200 answer: the resource's new state with its `ETag` (never 304: a write's answer
/// is what it made).
pub struct Updated<T>(Tagged<T>);

impl<T> Updated<T> {
    pub fn new(body: T) -> Self {
        Updated(Tagged::new(body))
    }
}

impl<T: Serialize> Responder for Updated<T> {
    type Body = BoxBody;

    fn respond_to(self, req: &HttpRequest) -> HttpResponse {
        self.0.respond_to(req)
    }
}

crate::answer_component!(Updated, Json, |v, _, description| {
    Some(answers::with_header(
        answers::ok::<Json<T>>(v, description)?,
        "ETag",
        &etag_header(v),
    ))
});

crate::answer_component!(Tagged, Json, |v, _, description| {
    let etag = etag_header(v);
    let mut responses =
        answers::with_header(answers::ok::<Json<T>>(v, description)?, "ETag", &etag);
    let mut not_modified = Response {
        description: "Not Modified: If-None-Match named the current ETag.".to_owned(),
        ..Default::default()
    };
    answers::add(&mut not_modified, "ETag", &etag);
    responses.responses.insert(
        StatusCode::NOT_MODIFIED.as_str().to_owned(),
        ReferenceOr::Object(not_modified),
    );
    Some(responses)
});

#[cfg(test)]
mod tests {
    use super::*;
    use actix_web::http::header::HeaderName;

    fn headers(name: HeaderName, values: &[&str]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for v in values {
            h.append(
                name.clone(),
                HeaderValue::from_str(v).unwrap_or(HeaderValue::from_static("")),
            );
        }
        h
    }

    #[test]
    fn etags_are_strong_quoted_and_follow_the_bytes() {
        let a = etag(b"{\"id\":1}");
        assert_eq!(a.len(), 34);
        assert!(a.starts_with('"') && a.ends_with('"'));
        assert_ne!(a, etag(b"{\"id\":2}"));
    }

    #[test]
    fn if_none_match_lists_star_and_weak_tags() {
        let tag = etag(b"x");
        assert!(!none_match(&HeaderMap::new(), &tag));
        assert!(none_match(&headers(IF_NONE_MATCH, &["*"]), &tag));
        assert!(none_match(
            &headers(IF_NONE_MATCH, &[&format!("\"a\", W/{tag}")]),
            &tag
        ));
        assert!(none_match(&headers(IF_NONE_MATCH, &["\"a\"", &tag]), &tag));
        assert!(!none_match(&headers(IF_NONE_MATCH, &["\"a\""]), &tag));
    }

    #[test]
    fn if_match_compares_strongly() {
        let current = serde_json::json!({"id": 1});
        let tag = etag(&serde_json::to_vec(&current).unwrap_or_default());
        let check = |m: IfMatch| m.check::<_, ()>(&current).is_ok();
        assert!(check(IfMatch::absent()));
        assert!(check(IfMatch(None)));
        assert!(check(IfMatch(Some(vec!["\"x\"".into(), tag.clone()]))));
        assert!(!check(IfMatch(Some(vec![format!("W/{tag}")]))));
        assert!(!check(IfMatch(Some(vec!["\"x\"".into()]))));
    }

    #[test]
    fn sequence_tags_name_one_sequence() {
        let seq = |m: IfMatch| m.sequence::<()>().ok();
        assert_eq!(sequence_tag(7), "\"7\"");
        assert_eq!(seq(IfMatch::absent()), Some(None));
        assert_eq!(seq(IfMatch(None)), Some(None));
        assert_eq!(seq(IfMatch(Some(vec!["\"7\"".into()]))), Some(Some(7)));
        assert_eq!(seq(IfMatch(Some(vec!["W/\"7\"".into()]))), None);
        assert_eq!(seq(IfMatch(Some(vec!["\"x\"".into()]))), None);
        assert_eq!(
            seq(IfMatch(Some(vec!["\"1\"".into(), "\"2\"".into()]))),
            None
        );
    }
}
