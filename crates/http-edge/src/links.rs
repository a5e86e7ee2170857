//! RFC 8288 `Link` headers on every paged list, so generic HTTP paginators can follow them:
//! `rel="next"` while items remain, `rel="prev"` and `rel="first"` on offset pages (cheap: they
//! only need the page's own `limit` and `offset`). Targets are relative references: the
//! request's own path with its `limit` and the paging parameter, resolved by the client against
//! the request URI as RFC 8288 says. The versioned notes' lists are left without: V1 answers
//! carry their deprecation `Link` (successor-version) alone, and the spec (§9.3) keeps every
//! V1 header, `Link` included, off V2 answers, whose paging is in the body's `meta`.

use actix_web::body::BoxBody;
use actix_web::http::Uri;
use actix_web::web::Json;
use actix_web::{HttpRequest, HttpResponse, Responder};
use serde::Serialize;

use crate::answers;

/// Where a page sits in its list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Paging {
    /// `next`: the next page's offset, `None` on the last page.
    Offset {
        limit: i64,
        offset: i64,
        next: Option<i64>,
    },
    /// `next`: the value of `param` for the next page, `None` on the last page.
    Cursor {
        param: &'static str,
        next: Option<i64>,
    },
}

/// A list body that knows its paging.
pub trait Paged {
    fn paging(&self) -> Paging;
}

/// A 200 JSON list with its `Link` header.
pub struct Linked<T> {
    body: T,
    paging: Option<Paging>,
}

impl<T: Paged> Linked<T> {
    pub fn new(body: T) -> Self {
        let paging = Some(body.paging());
        Linked { body, paging }
    }
}

impl<T> Linked<T> {
    /// For lists whose body does not carry its paging (V1, a user's tokens).
    pub fn with(body: T, paging: Paging) -> Self {
        Linked {
            body,
            paging: Some(paging),
        }
    }

    /// A list that was not asked for in pages: no links.
    pub fn unpaged(body: T) -> Self {
        Linked { body, paging: None }
    }
}

impl<T: Serialize> Responder for Linked<T> {
    type Body = BoxBody;

    fn respond_to(self, req: &HttpRequest) -> HttpResponse {
        let mut res = HttpResponse::Ok();
        if let Some(link) = self.paging.and_then(|p| link_header(req.uri(), p)) {
            res.insert_header(("Link", link));
        }
        res.json(self.body)
    }
}

/// The `Link` value for a page of the list at `uri`, if it has any relation to name.
pub fn link_header(uri: &Uri, paging: Paging) -> Option<String> {
    let mut links = Vec::new();
    let mut push = |param: &str, value: Option<i64>, rel: &str| {
        links.push(format!(
            "<{}>; rel=\"{rel}\"",
            with_param(uri, param, value)
        ));
    };
    match paging {
        Paging::Offset {
            limit,
            offset,
            next,
        } => {
            if let Some(next) = next {
                push("offset", Some(next), "next");
            }
            if offset > 0 {
                push("offset", Some((offset - limit).max(0)), "prev");
            }
            push("offset", Some(0), "first");
        }
        Paging::Cursor { param, next } => {
            if let Some(next) = next {
                push(param, Some(next), "next");
            }
            push(param, None, "first");
        }
    }
    (!links.is_empty()).then(|| links.join(", "))
}

/// `uri`'s path with its `limit` and `param` set to `value` (or left out). Nothing else of the
/// query is repeated: whatever else a client put there (a token, by mistake) is not echoed.
fn with_param(uri: &Uri, param: &str, value: Option<i64>) -> String {
    let mut pairs: Vec<String> = uri
        .query()
        .unwrap_or("")
        .split('&')
        .filter(|p| p.split('=').next() == Some("limit"))
        .take(1)
        .map(str::to_owned)
        .collect();
    if let Some(value) = value {
        pairs.push(format!("{param}={value}"));
    }
    if pairs.is_empty() {
        uri.path().to_owned()
    } else {
        format!("{}?{}", uri.path(), pairs.join("&"))
    }
}

crate::answer_component!(Linked, Json, |v, _, description| {
    let doc = answers::header(LINK_DOC, false, serde_json::json!({"type": "string"}), v);
    Some(answers::with_header(
        answers::ok::<Json<T>>(v, description)?,
        "Link",
        &doc,
    ))
});

const LINK_DOC: &str = "RFC 8288 links to the next page (while items remain) and, on offset \
    pages, the previous and first pages; relative to the request URI. Example: \
    `</notes?limit=20&offset=20>; rel=\"next\", </notes?limit=20&offset=0>; rel=\"first\"`.";

#[cfg(test)]
mod tests {
    use super::*;

    fn link(uri: &str, paging: Paging) -> Option<String> {
        link_header(&uri.parse::<Uri>().expect("uri"), paging)
    }

    #[test]
    fn offset_pages_link_next_prev_and_first_keeping_only_the_limit() {
        let middle = Paging::Offset {
            limit: 20,
            offset: 40,
            next: Some(60),
        };
        assert_eq!(
            link("/notes?limit=20&offset=40", middle).as_deref(),
            Some(
                "</notes?limit=20&offset=60>; rel=\"next\", \
                 </notes?limit=20&offset=20>; rel=\"prev\", \
                 </notes?limit=20&offset=0>; rel=\"first\""
            )
        );
        let last = Paging::Offset {
            limit: 20,
            offset: 10,
            next: None,
        };
        assert_eq!(
            link("/tags?offset=10&token=secret&limit=20", last).as_deref(),
            Some(
                "</tags?limit=20&offset=0>; rel=\"prev\", </tags?limit=20&offset=0>; rel=\"first\""
            )
        );
        let only = Paging::Offset {
            limit: 20,
            offset: 0,
            next: Some(20),
        };
        assert_eq!(
            link("/notes", only).as_deref(),
            Some("</notes?offset=20>; rel=\"next\", </notes?offset=0>; rel=\"first\"")
        );
    }

    #[test]
    fn cursor_pages_link_next_and_first() {
        let page = Paging::Cursor {
            param: "after",
            next: Some(81),
        };
        assert_eq!(
            link("/articles/cursor?limit=20&after=101", page).as_deref(),
            Some(
                "</articles/cursor?limit=20&after=81>; rel=\"next\", \
                 </articles/cursor?limit=20>; rel=\"first\""
            )
        );
        let last = Paging::Cursor {
            param: "after_sequence",
            next: None,
        };
        assert_eq!(
            link("/accounts/a/events?after_sequence=3", last).as_deref(),
            Some("</accounts/a/events>; rel=\"first\"")
        );
    }
}
