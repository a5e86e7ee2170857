//! RFC 9110 conditional requests. A single resource's reads and write answers carry a strong
//! `ETag` (the SHA-256 of the JSON body as sent, cut to 128 bits); `If-None-Match` on a read
//! answers 304 when it names the current tag; `If-Match` on `PUT` and `DELETE` lets the write
//! happen only while the resource still has a tag it names, checked against the row locked in
//! the write's own transaction, else 412 `precondition-failed` and nothing is written.
//!
//! Both headers are `*` (as the whole field value only) or a list of entity tags (RFC 9110
//! §13.1.1–2): a list that names no current tag is false, so an empty `If-Match`, a `,` or a
//! list of malformed elements is 412, and a `*` inside a list is just a malformed element.
//!
//! A write's guard is also where the ownership rule runs (crates/ownership): the row it locks
//! says who owns it, and a user's token may change only its own.

use actix_web::body::BoxBody;
use actix_web::dev::Payload;
use actix_web::http::header::{CONTENT_TYPE, ETAG, HeaderValue, IF_MATCH, IF_NONE_MATCH};
use actix_web::http::{StatusCode, header::HeaderMap};
use actix_web::web::Json;
use actix_web::{FromRequest, HttpRequest, HttpResponse, Responder};
use apistos::OpenApiVersion;
use apistos::paths::{Header, Response};
use apistos::reference_or::ReferenceOr;
use ownership::{Actor, Owned};
use problem_details::{Problem, Slug, ToProblem};
use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::answers;
use crate::error::ApiError;
use crate::extract::{HeaderDoc, RawHeader};

/// The strong entity tag of a representation: its bytes' SHA-256, first 128 bits, quoted.
pub fn etag(body: &[u8]) -> String {
    format!("\"{}\"", hex::encode(&Sha256::digest(body)[..16]))
}

/// What a conditional header (`If-Match`, `If-None-Match`) says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Condition {
    /// The request did not send it.
    Absent,
    /// `*`: any current representation.
    Any,
    /// The well-formed entity tags it lists (`W/` kept), possibly none.
    Tags(Vec<String>),
}

/// Reads header `name`: every field line of it, joined as one list (RFC 9110 §5.3).
fn condition(headers: &HeaderMap, name: actix_web::http::header::HeaderName) -> Condition {
    let lines: Vec<String> = headers
        .get_all(name)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
        .collect();
    if lines.is_empty() {
        return Condition::Absent;
    }
    let value = lines.join(",");
    if value.trim() == "*" {
        return Condition::Any;
    }
    Condition::Tags(entity_tags(&value))
}

/// The well-formed entity tags (`"…"` or `W/"…"`, no `"` inside) of a list; other elements
/// are skipped up to the next comma.
fn entity_tags(list: &str) -> Vec<String> {
    let mut tags = Vec::new();
    let mut rest = list;
    loop {
        rest = rest.trim_start_matches([',', ' ', '\t']);
        if rest.is_empty() {
            return tags;
        }
        let opaque = rest.strip_prefix("W/").unwrap_or(rest);
        let tag_end = opaque
            .strip_prefix('"')
            .and_then(|inner| inner.find('"'))
            .map(|close| rest.len() - opaque.len() + close + 2);
        // The element runs to the first comma after its tag (a tag may hold commas).
        let from = tag_end.unwrap_or(0);
        let element_end = rest[from..].find(',').map_or(rest.len(), |i| from + i);
        // A tag is one whole element: only blanks may follow it.
        if let Some(end) = tag_end
            && rest[end..element_end].trim().is_empty()
        {
            tags.push(rest[..end].to_owned());
        }
        rest = &rest[element_end..];
    }
}

/// `If-None-Match` matches when it is `*` or lists `tag` (weak comparison: `W/` is ignored).
fn none_match(headers: &HeaderMap, tag: &str) -> bool {
    match condition(headers, IF_NONE_MATCH) {
        Condition::Absent => false,
        Condition::Any => true,
        Condition::Tags(tags) => tags.iter().any(|t| t.trim_start_matches("W/") == tag),
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

/// `If-Match` of a `PUT`, `DELETE` or append: absent, `*`, or the tags the client last saw.
#[derive(Debug, Clone)]
pub struct IfMatch(Condition);

impl IfMatch {
    /// For a resource tagged by sequence: `Ok(None)` when anything goes (absent or `*`),
    /// `Ok(Some(n))` when it names exactly one sequence tag, else the precondition fails (an
    /// empty list included).
    pub fn sequence<E>(&self) -> Result<Option<i64>, Precondition<E>> {
        match &self.0 {
            Condition::Absent | Condition::Any => Ok(None),
            Condition::Tags(tags) => match tags.as_slice() {
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

    /// The whole check of a write to a stored resource, inside its transaction: `lock` reads
    /// (and locks) the row, which `actor` must be allowed to change (else the domain's
    /// refusal) and whose representation `D` must have a tag If-Match lists. Without If-Match
    /// and with nobody to restrict (the operator, authentication off) nothing is read.
    pub fn guard<T, D, E>(
        &self,
        actor: Actor,
        lock: impl FnOnce() -> Result<T, E>,
    ) -> Result<(), Precondition<E>>
    where
        T: Owned,
        D: From<T> + Serialize,
        E: From<ownership::Denied>,
    {
        if self.0 == Condition::Absent && !actor.is_restricted() {
            return Ok(());
        }
        let current = lock().map_err(Precondition::Op)?;
        actor
            .check(&current)
            .map_err(|denied| Precondition::Op(denied.into()))?;
        self.check(&D::from(current))
    }

    /// Passes when nothing was asked, when `*` was (the resource exists: the caller found it),
    /// or when a listed tag is the current representation's (strong comparison: a weak tag
    /// never matches; an empty list matches nothing).
    fn check<T: Serialize, E>(&self, current: &T) -> Result<(), Precondition<E>> {
        let Condition::Tags(tags) = &self.0 else {
            return Ok(());
        };
        let body = serde_json::to_vec(current).map_err(|_| Precondition::Failed)?;
        if tags.contains(&etag(&body)) {
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
        std::future::ready(Ok(IfMatch(condition(req.headers(), IF_MATCH))))
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
    const DESCRIPTION: &'static str = "Optional: the ETag the client last read (or `*` alone). \
        The write happens only while the resource still has it; otherwise 412 \
        `precondition-failed` and nothing is written (a list that names no current tag, an \
        empty one included, is 412). Without it the write is unconditional.";
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

    fn if_match(values: &[&str]) -> IfMatch {
        IfMatch(condition(&headers(IF_MATCH, values), IF_MATCH))
    }

    #[test]
    fn star_only_as_the_whole_value_and_lists_of_well_formed_tags() {
        let tags = |v: &[&str]| condition(&headers(IF_MATCH, v), IF_MATCH);
        let list = |t: &[&str]| Condition::Tags(t.iter().map(|s| (*s).to_owned()).collect());
        assert_eq!(tags(&[]), Condition::Absent);
        assert_eq!(tags(&["*"]), Condition::Any);
        assert_eq!(tags(&[" * "]), Condition::Any);
        assert_eq!(tags(&[""]), list(&[]));
        assert_eq!(tags(&[","]), list(&[]));
        assert_eq!(tags(&[" , ,"]), list(&[]));
        assert_eq!(tags(&["\"stale\", *"]), list(&["\"stale\""]));
        assert_eq!(tags(&["*", "\"a\""]), list(&["\"a\""]));
        assert_eq!(tags(&["abc, \"a\""]), list(&["\"a\""]));
        assert_eq!(tags(&["\"a\"x, \"b\""]), list(&["\"b\""]));
        assert_eq!(tags(&["\"a,b\", W/\"c\""]), list(&["\"a,b\"", "W/\"c\""]));
        assert_eq!(tags(&["\"unterminated, \"d\""]), list(&[]));
        assert_eq!(tags(&["\"a\"", "\"b\""]), list(&["\"a\"", "\"b\""]));
    }

    #[test]
    fn if_match_compares_strongly() {
        let current = serde_json::json!({"id": 1});
        let tag = etag(&serde_json::to_vec(&current).unwrap_or_default());
        let check = |m: IfMatch| m.check::<_, ()>(&current).is_ok();
        assert!(check(if_match(&[])));
        assert!(check(if_match(&["*"])));
        assert!(check(if_match(&[&format!("\"x\", {tag}")])));
        assert!(!check(if_match(&[&format!("W/{tag}")])));
        assert!(!check(if_match(&["\"x\""])));
        // A list naming no current tag is false (RFC 9110 §13.1.1): empty, blank, or only `*`
        // beside a stale tag.
        assert!(!check(if_match(&[""])));
        assert!(!check(if_match(&[","])));
        assert!(!check(if_match(&["\"stale\", *"])));
    }

    #[test]
    fn sequence_tags_name_one_sequence() {
        let seq = |v: &[&str]| if_match(v).sequence::<()>().ok();
        assert_eq!(sequence_tag(7), "\"7\"");
        assert_eq!(seq(&[]), Some(None));
        assert_eq!(seq(&["*"]), Some(None));
        assert_eq!(seq(&["\"7\""]), Some(Some(7)));
        assert_eq!(seq(&["W/\"7\""]), None);
        assert_eq!(seq(&["\"x\""]), None);
        assert_eq!(seq(&["\"1\", \"2\""]), None);
        assert_eq!(seq(&[""]), None);
        assert_eq!(seq(&["\"3\", *"]), Some(Some(3)));
    }
}
