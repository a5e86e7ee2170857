//! Area D: users and scoped access tokens. Refusals decided here are `{"error": "..."}` bodies
//! (the specification fixes them; `tokens::Error` says so through `ToProblem::plain_error`);
//! what the shared layers answer first (413, 415, 503) stays a problem document. How the
//! OpenAPI document shows that is [`document_refusals`].

mod docs;
mod dto;
mod extract;
mod listing;

use actix_web::web::{Data, Json};
use apistos::actix::{CreatedJson, NoContent};
use apistos::api_operation;
use apistos::web::{ServiceConfig, delete, get, post, resource};
use pagination::Page;
use tokens::service;

use http_edge::db::Db;
use http_edge::error::ApiError;
use http_edge::extract::{OptionalJson, RawJson, RawQuery};
use http_edge::idempotent::{Created, KeyedCreate};
use http_edge::links::{Linked, Paging};
use idempotency::Scope;

use crate::auth::{Access, Rule};
use crate::context::Context;
use actix_web::http::Method;
pub use docs::document_refusals;
pub use dto::*;
pub use extract::{ActingUser, ActingUserDoc, TokenPath, USER_ID_HEADER};
use listing::Listing;

/// Create a user
#[api_operation(operation_id = "create_user", tag = "tokens", error_code = 422)]
pub async fn create_user(
    db: Db,
    keyed: KeyedCreate,
    body: RawJson<UserBody>,
) -> Result<Created<UserDto>, ApiError> {
    // Read once: validated, and the fingerprint's view of the body.
    let object = tokens::body_object(&body.bytes)?;
    let input = tokens::NewUser::from_object(&object)?;
    keyed
        .create(
            &db,
            Scope::of("create_user", &[]).formerly("POST /users"),
            &object,
            move |c| service::create_user(c, &input).map(UserDto::from),
        )
        .await
        .map_err(ApiError::plain)
}

/// Issue a token
///
/// The raw token is in `token` of this response only; just its SHA-256 digest is stored. It
/// expires after `expires_in_days`, at `expires_at`, or after TOKEN_DEFAULT_DAYS (90), and at
/// most TOKEN_MAX_DAYS (365) ahead. Checks, in order: X-User-Id present (401), equal to userId
/// (403), user exists (404), body valid (422), fewer than TOKEN_MAX_ACTIVE (100) active tokens
/// (409 `too many active tokens…`).
#[api_operation(
    operation_id = "issue_token",
    tag = "tokens",
    error_code = 401,
    error_code = 403,
    error_code = 404,
    error_code = 409,
    error_code = 422
)]
pub async fn issue(
    db: Db,
    context: Data<Context>,
    actor: ActingUser,
    path: TokenPath<UserPathDoc>,
    body: OptionalJson<IssueBody>,
) -> Result<CreatedJson<IssuedTokenDto>, ApiError> {
    let (actor, user_id, policy) = (actor.id(path.user_id)?, path.user_id, context.token_policy);
    let issued = db
        .write(move |c| service::issue(c, actor, user_id, &body.bytes, policy))
        .await?;
    Ok(CreatedJson(issued.into()))
}

/// Rotate a token
///
/// A new raw token with the same scope and label (and a fresh TOKEN_DEFAULT_DAYS lifetime),
/// and the old one revoked, in one transaction. Checks as for revoke.
#[api_operation(
    operation_id = "rotate_token",
    tag = "tokens",
    error_code = 401,
    error_code = 403,
    error_code = 404,
    error_code = 409
)]
pub async fn rotate(
    db: Db,
    context: Data<Context>,
    actor: ActingUser,
    path: TokenPath<TokenPathDoc>,
) -> Result<CreatedJson<IssuedTokenDto>, ApiError> {
    let (actor, user_id, token_id) = (actor.id(path.user_id)?, path.user_id, path.token_id);
    let lifetime = context.token_policy.lifetime;
    let issued = db
        .write(move |c| service::rotate(c, actor, user_id, token_id, lifetime))
        .await?;
    Ok(CreatedJson(issued.into()))
}

/// List a user's tokens
///
/// Newest first, revoked tokens included; never the hash or the raw token. Every token, or one
/// page of them with `limit` (1 to 100) and `offset`; `total` counts them all.
#[api_operation(
    operation_id = "list_tokens",
    tag = "tokens",
    error_code = 401,
    error_code = 403,
    error_code = 404,
    error_code = 422
)]
pub async fn list(
    db: Db,
    actor: ActingUser,
    path: TokenPath<UserPathDoc>,
    q: RawQuery<TokenPageQuery>,
) -> Result<Listing, ApiError> {
    let (actor, user_id) = (actor.id(path.user_id)?, path.user_id);
    let page = match (q.get("limit"), q.get("offset")) {
        (None, None) => None,
        (limit, offset) => Some(Page::strict(limit, offset).map_err(|_| {
            tokens::Error::Invalid("limit must be an integer from 1 to 100, offset at least 0")
        })?),
    };
    // Without `limit` every token is listed, streamed a chunk at a time (`listing`).
    let read = page.unwrap_or(Page {
        limit: listing::CHUNK,
        offset: 0,
    });
    let (items, total) = db
        .read(move |c| service::list(c, actor, user_id, Some(read)))
        .await?;
    let Some(page) = page else {
        return Ok(Listing::Whole(listing::Whole {
            db,
            actor,
            user_id,
            first: items,
            total,
        }));
    };
    let items: Vec<TokenDto> = items.into_iter().map(TokenDto::from).collect();
    let end = page.offset + items.len() as i64;
    let paging = Paging::Offset {
        limit: page.limit,
        offset: page.offset,
        next: (end < total).then_some(end),
    };
    Ok(Listing::Page(Linked::with(
        TokenListDto { items, total },
        paging,
    )))
}

/// Revoke a token
///
/// Keeps the row and records `revoked_at`. Checks, in order: 401, 403 (path user), 404 (user),
/// 404 `token not found`, 403 (another user's token), 409 `token already revoked`.
#[api_operation(
    operation_id = "revoke_token",
    tag = "tokens",
    error_code = 401,
    error_code = 403,
    error_code = 404,
    error_code = 409
)]
pub async fn revoke(
    db: Db,
    actor: ActingUser,
    path: TokenPath<TokenPathDoc>,
) -> Result<NoContent, ApiError> {
    let (actor, user_id, token_id) = (actor.id(path.user_id)?, path.user_id, path.token_id);
    db.write(move |c| service::revoke(c, actor, user_id, token_id))
        .await?;
    Ok(NoContent)
}

/// Verify a raw token
///
/// Always 200 for a well-formed request; no X-User-Id needed.
#[api_operation(operation_id = "verify_token", tag = "tokens", error_code = 422)]
pub async fn verify(db: Db, body: RawJson<VerifyBody>) -> Result<Json<VerificationDto>, ApiError> {
    let request = tokens::VerifyRequest::from_body(&body.bytes)?;
    let (outcome, used) = db
        .read_primary(move |c| service::verify(c, &request))
        .await?;
    if let Some(token) = used {
        crate::auth::record_use(&db, token).await;
    }
    Ok(Json(outcome.into()))
}

/// Creating a user needs the operator key; a user's tokens, the operator key or an admin token
/// of that user; the raw token in `/tokens/verify`'s body is the credential being checked.
/// None is rate limited: an operator repairing access must never be locked out.
pub const ACCESS: &[Rule] = &[
    Rule::unmetered("/users", Access::CreateUser),
    Rule::unmetered_tree("/users/{userId}/tokens", Access::ManageTokens),
    Rule::only(Method::POST, "/tokens/verify", Access::Public),
    // Its other methods: 405, or a bearer token; never rate limited either.
    Rule::unmetered("/tokens/verify", Access::Bearer),
];

pub fn configure(cfg: &mut ServiceConfig) {
    cfg.service(resource("/users").route(post().to(create_user)))
        .service(
            resource("/users/{userId}/tokens")
                .route(post().to(issue))
                .route(get().to(list)),
        )
        .service(resource("/users/{userId}/tokens/{tokenId}").route(delete().to(revoke)))
        .service(resource("/users/{userId}/tokens/{tokenId}/rotate").route(post().to(rotate)))
        .service(resource("/tokens/verify").route(post().to(verify)));
}
