//! The unpaged list of a user's tokens, streamed: the specification lists every token (revoked
//! ones included) in one answer, and a user's history has no bound, so the answer is written
//! chunk by chunk as it is read (`CHUNK` tokens per database read) and never held whole.
//! The first chunk and `total` come from one statement; later chunks are the tokens older
//! than the last one sent (tokens are never deleted, so exactly `total` items follow).

use actix_web::body::BoxBody;
use actix_web::web::Bytes;
use actix_web::{HttpRequest, HttpResponse, Responder};
use futures_util::stream;
use tokens::{Token, service};

use super::dto::{TokenDto, TokenListDto};
use http_edge::db::Db;
use http_edge::links::Linked;

/// Tokens per database read of a streamed list.
pub const CHUNK: i64 = 256;

/// A list answer: one page (with its links), or every token, streamed.
pub enum Listing {
    Page(Linked<TokenListDto>),
    Whole(Whole),
}

/// What the stream needs: the first chunk and total, read already, and how to read on.
pub struct Whole {
    pub db: Db,
    pub actor: i64,
    pub user_id: i64,
    pub first: Vec<Token>,
    pub total: i64,
}

/// The JSON text of `tokens`, comma-separated, `lead` (`[` or `,`) first.
fn items(lead: &str, tokens: Vec<Token>) -> Result<Bytes, serde_json::Error> {
    let mut out = String::new();
    for (i, token) in tokens.into_iter().enumerate() {
        out.push_str(if i == 0 { lead } else { "," });
        out.push_str(&serde_json::to_string(&TokenDto::from(token))?);
    }
    Ok(Bytes::from(out))
}

enum Step {
    /// `{"items":[` and the first chunk.
    Open(Whole),
    /// Chunks after the token `last`.
    After(Whole, i64),
    /// `],"total":N}`.
    Close(i64),
    Done,
}

impl Whole {
    fn into_stream(self) -> impl futures_util::Stream<Item = Result<Bytes, std::io::Error>> {
        stream::unfold(Step::Open(self), |step| async move {
            match step {
                Step::Open(mut whole) => {
                    let first = std::mem::take(&mut whole.first);
                    let next = next_step(whole, first.last().map(|t| t.id), first.len());
                    let opening = items("[", first).map(|items| {
                        let mut out = b"{\"items\":".to_vec();
                        if items.is_empty() {
                            out.push(b'[');
                        }
                        out.extend_from_slice(&items);
                        Bytes::from(out)
                    });
                    Some((opening.map_err(std::io::Error::other), next))
                }
                Step::After(whole, last) => {
                    let (db, actor, user_id) = (whole.db.clone(), whole.actor, whole.user_id);
                    let chunk = db
                        .read(move |c| service::list_older(c, actor, user_id, last, CHUNK))
                        .await;
                    match chunk {
                        Ok(chunk) => {
                            let next = next_step(whole, chunk.last().map(|t| t.id), chunk.len());
                            Some((items(",", chunk).map_err(std::io::Error::other), next))
                        }
                        // The answer has begun: all that is left is to end it short (the
                        // client sees a truncated body, never a partial list as whole).
                        Err(e) => {
                            log::error!("a streamed token list of user {user_id} failed: {e}");
                            Some((Err(std::io::Error::other(e.to_string())), Step::Done))
                        }
                    }
                }
                Step::Close(total) => Some((
                    Ok(Bytes::from(format!("],\"total\":{total}}}"))),
                    Step::Done,
                )),
                Step::Done => None,
            }
        })
    }
}

/// After a chunk of `read` tokens ending at `last`: more to read while chunks come back full,
/// else the closing `],"total":N}`.
fn next_step(whole: Whole, last: Option<i64>, read: usize) -> Step {
    match last {
        Some(last) if read as i64 == CHUNK => Step::After(whole, last),
        _ => Step::Close(whole.total),
    }
}

impl Responder for Listing {
    type Body = BoxBody;

    fn respond_to(self, req: &HttpRequest) -> HttpResponse {
        match self {
            Listing::Page(page) => page.respond_to(req),
            Listing::Whole(whole) => HttpResponse::Ok()
                .content_type("application/json")
                .streaming(whole.into_stream()),
        }
    }
}

// Documented as the page it is the whole of.
http_edge::document_as!(Listing => Linked<TokenListDto>);
