//! The token use cases, each with its checks in the order the API promises.

use chrono::{Duration, Utc};
use storage::DbConnection;

use crate::repo;
use crate::{
    Error, IssueRequest, Lifetime, NewUser, Policy, RawToken, Scope, Token, User, Verification,
    VerifyRequest, rfc3339,
};

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
/// path user (`Forbidden`), then the user must exist (`UserNotFound`). The user's row stays
/// locked to the end of the write's transaction, so what is counted for the user (active
/// tokens) cannot change before the write it allows.
fn authorize(conn: &mut DbConnection, actor: i64, user_id: i64) -> Result<(), Error> {
    if actor != user_id {
        return Err(Error::Forbidden);
    }
    repo::users::lock(conn, user_id)
}

/// Issues a token; the body is validated only after the ownership and user checks, so an
/// unknown user is 404 whatever the body, and nothing is created on any failure. It expires
/// when the body says (within `policy.lifetime.max_days`), else after its `default_days`. A user
/// who holds `policy.max_active` active tokens gets `TooManyActive` (the user's row is locked
/// first, so concurrent issues cannot pass the cap together).
pub fn issue(
    conn: &mut DbConnection,
    actor: i64,
    user_id: i64,
    body: &[u8],
    policy: Policy,
) -> Result<Issued, Error> {
    authorize(conn, actor, user_id)?;
    let request = IssueRequest::from_body(body)?;
    let now = Utc::now();
    let expires_at = request.expires_at(now, policy.lifetime)?;
    let active = repo::tokens::count_active(conn, user_id, &rfc3339(now))?;
    if active >= i64::from(policy.max_active) {
        return Err(Error::TooManyActive {
            limit: policy.max_active,
        });
    }
    store(
        conn,
        user_id,
        request.scope,
        &request.label,
        &rfc3339(now),
        &expires_at,
    )
}

fn store(
    conn: &mut DbConnection,
    user_id: i64,
    scope: Scope,
    label: &str,
    now: &str,
    expires_at: &str,
) -> Result<Issued, Error> {
    let raw = RawToken::generate()?;
    let token = repo::tokens::insert(
        conn,
        &repo::tokens::NewToken {
            user_id,
            token_hash: &raw.hash(),
            scope: scope.as_str(),
            label,
            created_at: now,
            expires_at,
        },
    )?;
    Ok(Issued { token, raw })
}

/// Replaces one of the user's tokens: a new raw token with the same scope and label and a
/// fresh default lifetime, and the old one revoked, both in the caller's transaction (so a
/// failure leaves the old token as it was). Checks as for [`revoke`].
pub fn rotate(
    conn: &mut DbConnection,
    actor: i64,
    user_id: i64,
    token_id: Option<i64>,
    lifetime: Lifetime,
) -> Result<Issued, Error> {
    let old = revoke(conn, actor, user_id, token_id)?;
    let now = Utc::now();
    let expires_at = rfc3339(now + Duration::days(i64::from(lifetime.default_days)));
    store(
        conn,
        user_id,
        old.scope,
        &old.label,
        &rfc3339(now),
        &expires_at,
    )
}

/// The user's tokens (all of them, or one `page`) and how many there are. Tokens exist only for
/// an existing user, so only an empty page looks the user up (one statement otherwise).
pub fn list(
    conn: &mut DbConnection,
    actor: i64,
    user_id: i64,
    page: Option<pagination::Page>,
) -> Result<(Vec<Token>, i64), Error> {
    if actor != user_id {
        return Err(Error::Forbidden);
    }
    let listed = repo::tokens::list_for_user(conn, user_id, page)?;
    if listed.0.is_empty() {
        repo::users::ensure_exists(conn, user_id)?;
    }
    Ok(listed)
}

/// The next chunk of a user's whole list, read in chunks so that no answer holds every token
/// at once: up to `limit` tokens older than the token `before`, newest first.
pub fn list_older(
    conn: &mut DbConnection,
    actor: i64,
    user_id: i64,
    before: i64,
    limit: i64,
) -> Result<Vec<Token>, Error> {
    if actor != user_id {
        return Err(Error::Forbidden);
    }
    repo::tokens::older_than(conn, user_id, before, limit)
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
    if token.is_revoked() {
        return Err(Error::AlreadyRevoked { id });
    }
    // The update only touches an active row, so of two concurrent revokes one wins.
    repo::tokens::revoke(conn, id)?.ok_or(Error::AlreadyRevoked { id })
}

/// One digest and one indexed lookup; no cache, so a revocation or an expiry counts from the
/// next call. Also returns the token when it is valid, so the caller can record its use.
pub fn verify(
    conn: &mut DbConnection,
    request: &VerifyRequest,
) -> Result<(Verification, Option<Token>), Error> {
    let found = repo::tokens::find_by_hash(conn, &crate::hash_token(&request.token))?;
    let now = rfc3339(Utc::now());
    Ok(match found {
        Some(token) => {
            let valid = token.is_active_at(&now);
            let verification = Verification {
                valid,
                user_id: Some(token.user_id),
                scope: Some(token.scope),
            };
            (verification, valid.then_some(token))
        }
        None => (
            Verification {
                valid: false,
                user_id: None,
                scope: None,
            },
            None,
        ),
    })
}

/// The active token behind a bearer value, for `API_AUTH=tokens`; `None` when unknown, revoked
/// or expired.
pub fn authenticate(conn: &mut DbConnection, raw: &str) -> Result<Option<Token>, Error> {
    let now = rfc3339(Utc::now());
    Ok(repo::tokens::find_by_hash(conn, &crate::hash_token(raw))?
        .filter(|token| token.is_active_at(&now)))
}

/// Records that `token` was used now, if [`Token::needs_touch`] says so: at most one write a
/// minute per token. A write: run it on the write path, after the read that found the token.
pub fn touch(conn: &mut DbConnection, token: &Token) -> Result<(), Error> {
    let now = Utc::now();
    let since = rfc3339(now - crate::LAST_USED_RESOLUTION);
    repo::tokens::touch(conn, token.id, &rfc3339(now), &since)
}
