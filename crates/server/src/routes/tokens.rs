//! Area D: users and scoped access tokens. Errors decided here are `{"error": "..."}` bodies
//! (the specification fixes them); what the shared layers answer first (413, 415, 503) stays a
//! problem document.

use std::collections::BTreeMap;
use std::fmt;
use std::future::{Ready, ready};
use std::marker::PhantomData;

use actix_web::dev::Payload;
use actix_web::http::StatusCode;
use actix_web::web::{Data, Json, Path};
use actix_web::{FromRequest, HttpRequest, HttpResponse, ResponseError};
use apistos::actix::{CreatedJson, NoContent};
use apistos::paths::{MediaType, Parameter, RequestBody, Response};
use apistos::reference_or::ReferenceOr;
use apistos::web::{ServiceConfig, delete, get, post, resource};
use apistos::{
    ApiComponent, ApiErrorComponent, ApistosSchema, OpenApiVersion, VersionSpecificSchema,
    api_operation,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use storage::DbConnection;
use tokens::{Scope, Token, User, Verification, service};

use apistos::schemars;

use crate::db::Db;
use crate::error::{ApiError, problem_response, problem_schema};
use crate::extract::{HeaderDoc, RawHeader, RawJson};

// ---------------------------------------------------------------------------------------------
// DTOs

/// A token's scope: `read` (the default), `write` or `admin`.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, JsonSchema, ApiComponent)]
#[schemars(crate = "apistos")]
#[serde(rename_all = "lowercase")]
pub enum ScopeDto {
    Read,
    Write,
    Admin,
}

impl From<Scope> for ScopeDto {
    fn from(s: Scope) -> Self {
        match s {
            Scope::Read => ScopeDto::Read,
            Scope::Write => ScopeDto::Write,
            Scope::Admin => ScopeDto::Admin,
        }
    }
}

/// A new user; `name` is required and not blank (at most 200 characters).
#[derive(Debug, Deserialize, JsonSchema, ApiComponent)]
#[schemars(crate = "apistos")]
pub struct UserBody {
    #[schemars(length(min = 1, max = 200), regex(pattern = super::dto::TEXT_PATTERN))]
    pub name: String,
}

#[derive(Debug, Serialize, JsonSchema, ApiComponent)]
#[schemars(crate = "apistos")]
pub struct UserDto {
    pub id: i64,
    pub name: String,
    /// RFC 3339, UTC.
    pub created_at: String,
}

impl From<User> for UserDto {
    fn from(u: User) -> Self {
        UserDto {
            id: u.id,
            name: u.name,
            created_at: u.created_at,
        }
    }
}

/// What to issue: `scope` defaults to `read`, `label` to `""` (at most 200 characters).
#[derive(Debug, Deserialize, JsonSchema, ApiComponent)]
#[schemars(crate = "apistos")]
pub struct IssueBody {
    pub scope: Option<ScopeDto>,
    #[schemars(length(max = 200), regex(pattern = r"^[^\u0000]*$"))]
    pub label: Option<String>,
}

/// A freshly issued token. `token` is the raw value (64 hex characters): shown only here,
/// never stored, never shown again.
#[derive(Debug, Serialize, JsonSchema, ApiComponent)]
#[schemars(crate = "apistos")]
pub struct IssuedTokenDto {
    pub id: i64,
    pub user_id: i64,
    pub token: String,
    pub scope: ScopeDto,
    pub label: String,
    pub created_at: String,
}

impl From<service::Issued> for IssuedTokenDto {
    fn from(i: service::Issued) -> Self {
        IssuedTokenDto {
            id: i.token.id,
            user_id: i.token.user_id,
            token: i.raw.into_string(),
            scope: i.token.scope.into(),
            label: i.token.label,
            created_at: i.token.created_at,
        }
    }
}

/// A token as listed: never the hash, never the raw value. `revoked_at` is null while active.
#[derive(Debug, Serialize, JsonSchema, ApiComponent)]
#[schemars(crate = "apistos")]
pub struct TokenDto {
    pub id: i64,
    pub user_id: i64,
    pub scope: ScopeDto,
    pub label: String,
    pub created_at: String,
    /// RFC 3339, UTC; null while the token is active.
    #[schemars(extend("type" = "string", "nullable" = true))]
    pub revoked_at: Option<String>,
}

impl From<Token> for TokenDto {
    fn from(t: Token) -> Self {
        TokenDto {
            id: t.id,
            user_id: t.user_id,
            scope: t.scope.into(),
            label: t.label,
            created_at: t.created_at,
            revoked_at: t.revoked_at,
        }
    }
}

/// All of a user's tokens, newest first, revoked ones included.
#[derive(Debug, Serialize, JsonSchema, ApiComponent)]
#[schemars(crate = "apistos")]
pub struct TokenListDto {
    pub items: Vec<TokenDto>,
    pub total: i64,
}

/// The raw token to check.
#[derive(Debug, Deserialize, JsonSchema, ApiComponent)]
#[schemars(crate = "apistos")]
pub struct VerifyBody {
    #[schemars(length(min = 1))]
    pub token: String,
}

/// `valid` is true only for a known, active token. `user_id` and `scope` come from the stored
/// record when the token is known (revoked or not) and are null otherwise.
#[derive(Debug, Serialize, JsonSchema, ApiComponent)]
#[schemars(crate = "apistos")]
pub struct VerificationDto {
    pub valid: bool,
    pub user_id: Option<i64>,
    pub scope: Option<ScopeDto>,
}

impl From<Verification> for VerificationDto {
    fn from(v: Verification) -> Self {
        VerificationDto {
            valid: v.valid,
            user_id: v.user_id,
            scope: v.scope.map(ScopeDto::from),
        }
    }
}

/// Path of the token collection (documentation; the handler reads the raw segment because a
/// non-numeric `userId` is treated as 0, not 404).
#[derive(Debug, Deserialize, JsonSchema, ApiComponent)]
#[schemars(crate = "apistos")]
pub struct UserPathDoc {
    #[serde(rename = "userId")]
    pub user_id: i64,
}

#[derive(Debug, Deserialize, JsonSchema, ApiComponent)]
#[schemars(crate = "apistos")]
pub struct TokenPathDoc {
    #[serde(rename = "userId")]
    pub user_id: i64,
    #[serde(rename = "tokenId")]
    pub token_id: i64,
}

// ---------------------------------------------------------------------------------------------
// Errors

/// A token-area failure: a domain refusal rendered as `{"error": ...}`, or a shared-layer
/// problem (500 without internals, 503).
#[derive(Debug)]
pub enum TokenError {
    Refused(tokens::Error),
    Problem(ApiError),
}

impl From<tokens::Error> for TokenError {
    fn from(err: tokens::Error) -> Self {
        if err.status() >= 500 {
            TokenError::Problem(ApiError::server_side(&err))
        } else {
            TokenError::Refused(err)
        }
    }
}

impl From<ApiError> for TokenError {
    fn from(err: ApiError) -> Self {
        TokenError::Problem(err)
    }
}

impl fmt::Display for TokenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TokenError::Refused(e) => f.write_str(e.message()),
            TokenError::Problem(e) => e.fmt(f),
        }
    }
}

impl ResponseError for TokenError {
    fn status_code(&self) -> StatusCode {
        match self {
            TokenError::Refused(e) => {
                StatusCode::from_u16(e.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
            }
            TokenError::Problem(e) => e.status_code(),
        }
    }

    fn error_response(&self) -> HttpResponse {
        match self {
            TokenError::Refused(e) => error_body(self.status_code(), e.message()),
            TokenError::Problem(e) => e.error_response(),
        }
    }
}

/// `{"error": message}` as `application/json` (the problems middleware leaves it alone).
pub fn error_body(status: StatusCode, message: &str) -> HttpResponse {
    HttpResponse::build(status).json(serde_json::json!({ "error": message }))
}

pub const TOKEN_ERROR_SCHEMA: &str = "TokenError";

/// JSON Schema of the token area's error body.
pub fn token_error_schema() -> serde_json::Value {
    serde_json::json!({
        "type": "object",
        "description": "Error body of the token routes (area D).",
        "required": ["error"],
        "properties": {"error": {"type": "string"}}
    })
}

/// Statuses whose body is `{"error": ...}`.
const REFUSALS: [(u16, &str); 5] = [
    (
        401,
        "`unauthorized`: the X-User-Id header is missing or not an integer.",
    ),
    (
        403,
        "`forbidden`: X-User-Id is not the path user, or the token belongs to another user.",
    ),
    (404, "`user not found`, or on revoke `token not found`."),
    (409, "`token already revoked`."),
    (
        422,
        "Invalid input, for example `invalid scope, must be read/write/admin`, \
         `name is required`, `token is required`, `token must be a string`, \
         `body must be valid JSON`.",
    ),
];

/// Statuses answered by the shared layers as problem documents.
const SHARED: [(u16, &str); 3] = [
    (413, "The body exceeds MAX_BODY_BYTES (problem document)."),
    (415, "The body is not application/json (problem document)."),
    (503, "The database is unavailable (problem document)."),
];

impl ApiErrorComponent for TokenError {
    fn schemas_by_status_code(
        oas_version: OpenApiVersion,
    ) -> BTreeMap<String, (String, ReferenceOr<ApistosSchema>)> {
        let refusal = ApistosSchema::from_value(&token_error_schema(), oas_version);
        let problem = ApistosSchema::from_value(&problem_schema(), oas_version);
        REFUSALS
            .iter()
            .map(|(code, _)| {
                (
                    code.to_string(),
                    (
                        TOKEN_ERROR_SCHEMA.to_owned(),
                        ReferenceOr::Object(refusal.clone()),
                    ),
                )
            })
            .chain(SHARED.iter().map(|(code, _)| {
                (
                    code.to_string(),
                    (
                        crate::error::PROBLEM_SCHEMA.to_owned(),
                        ReferenceOr::Object(problem.clone()),
                    ),
                )
            }))
            .collect()
    }

    fn error_responses(oas_version: OpenApiVersion) -> Vec<(String, Response)> {
        let schema = match oas_version {
            OpenApiVersion::OAS3_0 => VersionSpecificSchema::OAS3_0(ReferenceOr::Reference {
                _ref: format!("#/components/schemas/{TOKEN_ERROR_SCHEMA}"),
            }),
            OpenApiVersion::OAS3_1 => VersionSpecificSchema::OAS3_1(ApistosSchema::from_value(
                &token_error_schema(),
                oas_version,
            )),
        };
        REFUSALS
            .iter()
            .map(|(code, description)| {
                let response = Response {
                    description: (*description).to_owned(),
                    content: BTreeMap::from([(
                        "application/json".to_owned(),
                        MediaType {
                            schema: Some(schema.clone()),
                            ..Default::default()
                        },
                    )]),
                    ..Default::default()
                };
                (code.to_string(), response)
            })
            .chain(SHARED.iter().map(|(code, description)| {
                (code.to_string(), problem_response(description, oas_version))
            }))
            .collect()
    }
}

/// Runs a token read: domain refusals stay refusals, storage failures become problems.
async fn read<T, F>(db: &Db, f: F) -> Result<T, TokenError>
where
    F: FnOnce(&mut DbConnection) -> Result<T, tokens::Error> + Send + 'static,
    T: Send + 'static,
{
    db.read_as(f).await
}

/// Runs a token write in its own committed transaction; errors as in [`read`].
async fn write<T, F>(db: &Db, f: F) -> Result<T, TokenError>
where
    F: FnOnce(&mut DbConnection) -> Result<T, tokens::Error> + Send + 'static,
    T: Send + 'static,
{
    db.write_as(f).await
}

// ---------------------------------------------------------------------------------------------
// Extractors

pub const USER_ID_HEADER: &str = "X-User-Id";

pub struct ActingUserDoc;

impl HeaderDoc for ActingUserDoc {
    const NAME: &'static str = USER_ID_HEADER;
    const REQUIRED: bool = true;
    const DESCRIPTION: &'static str = "The acting user's id; must equal the userId in the path. \
        Missing or not an integer: 401 `unauthorized`.";
    fn schema() -> serde_json::Value {
        serde_json::json!({"type": "integer", "format": "int64"})
    }
}

/// The raw `X-User-Id` header; the domain decides what an acceptable value is (401 otherwise).
pub type ActingUser = RawHeader<ActingUserDoc>;

fn actor_id(actor: &ActingUser) -> Result<i64, TokenError> {
    Ok(tokens::parse_actor(actor.value())?)
}

/// The raw path segments: `userId` (not numeric → 0, as the specification says) and, on
/// revoke, `tokenId` (not an integer → no such token). `T` documents them.
pub struct TokenPath<T> {
    user_id: i64,
    token_id: Option<i64>,
    _doc: PhantomData<T>,
}

impl<T: 'static> FromRequest for TokenPath<T> {
    type Error = ApiError;
    type Future = Ready<Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let info = req.match_info();
        ready(Ok(TokenPath {
            user_id: tokens::parse_path_id(info.get("userId").unwrap_or("")),
            token_id: info.get("tokenId").and_then(|s| s.parse::<i64>().ok()),
            _doc: PhantomData,
        }))
    }
}

impl<T: ApiComponent> ApiComponent for TokenPath<T> {
    fn child_schemas(_: OpenApiVersion) -> Vec<(String, ReferenceOr<ApistosSchema>)> {
        vec![]
    }
    fn raw_schema(v: OpenApiVersion) -> Option<ReferenceOr<ApistosSchema>> {
        T::raw_schema(v)
    }
    fn schema(_: OpenApiVersion) -> Option<(String, ReferenceOr<ApistosSchema>)> {
        None
    }
    fn request_body(_: OpenApiVersion, _: Option<String>) -> Option<RequestBody> {
        None
    }
    fn parameters(v: OpenApiVersion, description: Option<String>) -> Vec<Parameter> {
        <Path<T> as ApiComponent>::parameters(v, description)
    }
}

// ---------------------------------------------------------------------------------------------
// Handlers

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
) -> Result<CreatedJson<UserDto>, TokenError> {
    let input = tokens::NewUser::from_body(&body.bytes)?;
    let user = write(&db, move |c| service::create_user(c, &input)).await?;
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
) -> Result<CreatedJson<IssuedTokenDto>, TokenError> {
    let (actor, user_id) = (actor_id(&actor)?, path.user_id);
    let issued = write(&db, move |c| service::issue(c, actor, user_id, &body.bytes)).await?;
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
) -> Result<Json<TokenListDto>, TokenError> {
    let (actor, user_id) = (actor_id(&actor)?, path.user_id);
    let items = read(&db, move |c| service::list(c, actor, user_id)).await?;
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
) -> Result<NoContent, TokenError> {
    let (actor, user_id, token_id) = (actor_id(&actor)?, path.user_id, path.token_id);
    write(&db, move |c| service::revoke(c, actor, user_id, token_id)).await?;
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
) -> Result<Json<VerificationDto>, TokenError> {
    let request = tokens::VerifyRequest::from_body(&body.bytes)?;
    let outcome = read(&db, move |c| service::verify(c, &request)).await?;
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
