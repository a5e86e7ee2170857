//! Area D: users and scoped access tokens. Refusals decided here are `{"error": "..."}` bodies
//! (the specification fixes them; `tokens::Error` says so through `ToProblem::plain_error`);
//! what the shared layers answer first (413, 415, 503) stays a problem document. How the
//! OpenAPI document shows that is [`document_refusals`].

mod docs;
mod dto;
mod extract;

use actix_web::web::{Data, Json};
use apistos::actix::{CreatedJson, NoContent};
use apistos::api_operation;
use apistos::web::{ServiceConfig, delete, get, post, resource};
use tokens::service;

use crate::db::Db;
use crate::error::ApiError;
use crate::extract::RawJson;

pub use docs::document_refusals;
pub use dto::*;
pub use extract::{ActingUser, ActingUserDoc, TokenPath, USER_ID_HEADER, actor_id};

/// Create a user
#[api_operation(
    operation_id = "create_user",
    tag = "tokens",
    error_code = 413,
    error_code = 415,
    error_code = 422
)]
pub async fn create_user(
    db: Data<Db>,
    body: RawJson<UserBody>,
) -> Result<CreatedJson<UserDto>, ApiError> {
    let input = tokens::NewUser::from_body(&body.bytes)?;
    let user = db.write(move |c| service::create_user(c, &input)).await?;
    Ok(CreatedJson(user.into()))
}

/// Issue a token
///
/// The raw token is in `token` of this response only; just its SHA-256 digest is stored.
/// Checks, in order: X-User-Id present (401), equal to userId (403), user exists (404), body
/// valid (422).
#[api_operation(
    operation_id = "issue_token",
    tag = "tokens",
    error_code = 401,
    error_code = 403,
    error_code = 404,
    error_code = 413,
    error_code = 415,
    error_code = 422
)]
pub async fn issue(
    db: Data<Db>,
    actor: ActingUser,
    path: TokenPath<UserPathDoc>,
    body: RawJson<IssueBody, false>,
) -> Result<CreatedJson<IssuedTokenDto>, ApiError> {
    let (actor, user_id) = (actor_id(&actor)?, path.user_id);
    let issued = db
        .write(move |c| service::issue(c, actor, user_id, &body.bytes))
        .await?;
    Ok(CreatedJson(issued.into()))
}

/// List a user's tokens
///
/// Newest first, revoked tokens included; never the hash or the raw token.
#[api_operation(
    operation_id = "list_tokens",
    tag = "tokens",
    error_code = 401,
    error_code = 403,
    error_code = 404
)]
pub async fn list(
    db: Data<Db>,
    actor: ActingUser,
    path: TokenPath<UserPathDoc>,
) -> Result<Json<TokenListDto>, ApiError> {
    let (actor, user_id) = (actor_id(&actor)?, path.user_id);
    let items = db.read(move |c| service::list(c, actor, user_id)).await?;
    let total = items.len() as i64;
    let items = items.into_iter().map(TokenDto::from).collect();
    Ok(Json(TokenListDto { items, total }))
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
    db: Data<Db>,
    actor: ActingUser,
    path: TokenPath<TokenPathDoc>,
) -> Result<NoContent, ApiError> {
    let (actor, user_id, token_id) = (actor_id(&actor)?, path.user_id, path.token_id);
    db.write(move |c| service::revoke(c, actor, user_id, token_id))
        .await?;
    Ok(NoContent)
}

/// Verify a raw token
///
/// Always 200 for a well-formed request; no X-User-Id needed.
#[api_operation(
    operation_id = "verify_token",
    tag = "tokens",
    error_code = 413,
    error_code = 415,
    error_code = 422
)]
pub async fn verify(
    db: Data<Db>,
    body: RawJson<VerifyBody>,
) -> Result<Json<VerificationDto>, ApiError> {
    let request = tokens::VerifyRequest::from_body(&body.bytes)?;
    let outcome = db.read(move |c| service::verify(c, &request)).await?;
    Ok(Json(outcome.into()))
}

pub fn configure(cfg: &mut ServiceConfig) {
    cfg.service(resource("/users").route(post().to(create_user)))
        .service(
            resource("/users/{userId}/tokens")
                .route(post().to(issue))
                .route(get().to(list)),
        )
        .service(resource("/users/{userId}/tokens/{tokenId}").route(delete().to(revoke)))
        .service(resource("/tokens/verify").route(post().to(verify)));
}
