//! The token area's request and response bodies, as documented in OpenAPI.

use apistos::ApiComponent;
use apistos::schemars;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tokens::{Scope, Token, User, Verification, service};

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
    #[schemars(length(min = 1, max = tokens::NAME_MAX), regex(pattern = crate::routes::dto::TEXT_PATTERN))]
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

/// No route reads one user: no URL of its own.
impl http_edge::idempotent::Addressable for UserDto {
    fn id_segment(&self) -> Option<String> {
        None
    }
}

/// What to issue: `scope` defaults to `read`, `label` to `""` (at most 200 characters). The
/// token expires after `expires_in_days` or at `expires_at` (give at most one), else after
/// TOKEN_DEFAULT_DAYS; never more than TOKEN_MAX_DAYS ahead.
#[derive(Debug, Deserialize, JsonSchema, ApiComponent)]
#[schemars(crate = "apistos")]
pub struct IssueBody {
    pub scope: Option<ScopeDto>,
    #[schemars(length(max = tokens::LABEL_MAX), regex(pattern = r"^[^\u0000]*$"))]
    pub label: Option<String>,
    #[schemars(range(min = 1))]
    pub expires_in_days: Option<i64>,
    /// RFC 3339, in the future.
    pub expires_at: Option<String>,
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
    /// RFC 3339, UTC: from then on the token is refused.
    pub expires_at: Option<String>,
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
            expires_at: i.token.expires_at,
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
    /// RFC 3339, UTC; null while the token is not revoked.
    #[schemars(extend("type" = "string", "nullable" = true))]
    pub revoked_at: Option<String>,
    /// RFC 3339, UTC: from then on the token is refused.
    #[schemars(extend("type" = "string", "nullable" = true))]
    pub expires_at: Option<String>,
    /// RFC 3339, UTC: its last use (authenticating a request, or verifying valid), recorded
    /// at most once a minute; null if never used.
    #[schemars(extend("type" = "string", "nullable" = true))]
    pub last_used_at: Option<String>,
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
            expires_at: t.expires_at,
            last_used_at: t.last_used_at,
        }
    }
}

/// A user's tokens, newest first, revoked ones included: all of them, or the page asked for.
#[derive(Debug, Serialize, JsonSchema, ApiComponent)]
#[schemars(crate = "apistos")]
pub struct TokenListDto {
    pub items: Vec<TokenDto>,
    /// How many tokens the user has (on every page).
    pub total: i64,
}

/// Paging for a user's tokens: without `limit` and `offset` the list holds every token, as the
/// specification has it; with either, one page (`limit` 1 to 100, default 20; `offset` at
/// least 0, default 0); anything else is 422.
#[derive(Debug, Deserialize, JsonSchema, ApiComponent)]
#[schemars(crate = "apistos")]
pub struct TokenPageQuery {
    /// Tokens per page, 1 to 100.
    #[schemars(range(min = 1, max = pagination::MAX_LIMIT))]
    pub limit: Option<i64>,
    /// Tokens to skip, at least 0.
    #[schemars(range(min = 0))]
    pub offset: Option<i64>,
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
