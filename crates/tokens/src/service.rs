//! The token use cases, each with its checks in the order the API promises.

use storage::DbConnection;

use crate::repo;
use crate::{Error, IssueRequest, NewUser, RawToken, Token, User, Verification, VerifyRequest};

/// A freshly issued token and its raw value (shown once, never stored).
#[derive(Debug)]
pub struct Issued {
    pub token: Token,
    pub raw: RawToken,
}

pub fn create_user(conn: &mut DbConnection, input: &NewUser) -> Result<User, Error> {
    repo::users::create(conn, input)
}

/// Ownership first, so nobody can probe which user ids exist: the acting user must be the
/// path user (`Forbidden`), then the user must exist (`UserNotFound`).
fn authorize(conn: &mut DbConnection, actor: i64, user_id: i64) -> Result<(), Error> {
    if actor != user_id {
        return Err(Error::Forbidden);
    }
    repo::users::ensure_exists(conn, user_id)
}

/// Issues a token; the body is validated only after the ownership and user checks, so an
/// unknown user is 404 whatever the body, and nothing is created on any failure.
pub fn issue(
    conn: &mut DbConnection,
    actor: i64,
    user_id: i64,
    body: &[u8],
) -> Result<Issued, Error> {
    authorize(conn, actor, user_id)?;
    let request = IssueRequest::from_body(body)?;
    let raw = RawToken::generate()?;
    let token = repo::tokens::insert(conn, user_id, &raw.hash(), request.scope, &request.label)?;
    Ok(Issued { token, raw })
}

pub fn list(conn: &mut DbConnection, actor: i64, user_id: i64) -> Result<Vec<Token>, Error> {
    authorize(conn, actor, user_id)?;
    repo::tokens::list_for_user(conn, user_id)
}

/// Revokes one of the user's tokens. `token_id` is `None` when the path segment is not an
/// integer (no such token can exist).
pub fn revoke(
    conn: &mut DbConnection,
    actor: i64,
    user_id: i64,
    token_id: Option<i64>,
) -> Result<Token, Error> {
    authorize(conn, actor, user_id)?;
    let id = token_id.ok_or(Error::TokenNotFound)?;
    let token = repo::tokens::find(conn, id)?.ok_or(Error::TokenNotFound)?;
    if token.user_id != user_id {
        return Err(Error::Forbidden);
    }
    if !token.is_active() {
        return Err(Error::AlreadyRevoked { id });
    }
    // The update only touches an active row, so of two concurrent revokes one wins.
    repo::tokens::revoke(conn, id)?.ok_or(Error::AlreadyRevoked { id })
}

/// One digest and one indexed lookup; no cache, so a revocation counts from the next call.
pub fn verify(conn: &mut DbConnection, request: &VerifyRequest) -> Result<Verification, Error> {
    let found = repo::tokens::find_by_hash(conn, &crate::hash_token(&request.token))?;
    Ok(match found {
        Some(token) => Verification {
            valid: token.is_active(),
            user_id: Some(token.user_id),
            scope: Some(token.scope),
        },
        None => Verification {
            valid: false,
            user_id: None,
            scope: None,
        },
    })
}

/// The active token behind a bearer value, for `API_AUTH=tokens`; `None` when unknown or
/// revoked.
pub fn authenticate(conn: &mut DbConnection, raw: &str) -> Result<Option<Token>, Error> {
    Ok(repo::tokens::find_by_hash(conn, &crate::hash_token(raw))?.filter(Token::is_active))
}
