//! Users and their scoped access tokens (area D).

use std::fmt;

use serde::{Deserialize, Serialize};

/// A user (schema `UserDto`).
///
/// ```no_run
/// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
/// let user: client::User = api.users().create(&client::UserInput::new("ann")).await?;
/// println!("user {} since {}", user.id, user.created_at);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct User {
    pub id: i64,
    pub name: String,
    pub created_at: String,
}

/// A new user (schema `UserBody`): a non-blank name.
///
/// ```
/// assert_eq!(client::UserInput::new("ann").name, "ann");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UserInput {
    pub name: String,
}

impl UserInput {
    /// A user called `name`.
    ///
    /// ```
    /// let _ = client::UserInput::new("bob");
    /// ```
    pub fn new(name: impl Into<String>) -> Self {
        UserInput { name: name.into() }
    }
}

/// A token's scope (schema `ScopeDto`): reads need any, writes `write` or `admin`.
///
/// ```
/// let input = client::IssueToken { scope: Some(client::Scope::Write), ..Default::default() };
/// assert_eq!(serde_json::to_string(&input).unwrap(), r#"{"scope":"write"}"#);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    Read,
    Write,
    Admin,
}

/// What to issue (schema `IssueBody`); every member is optional: `scope` defaults to `read`,
/// `label` to `""`, the lifetime to the service's default. Give at most one of
/// `expires_in_days` and `expires_at`.
///
/// ```
/// let input = client::IssueToken { label: Some("ci".into()), expires_in_days: Some(7), ..Default::default() };
/// assert_eq!(serde_json::to_string(&input).unwrap(), r#"{"label":"ci","expires_in_days":7}"#);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct IssueToken {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scope: Option<Scope>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expires_in_days: Option<i64>,
    /// RFC 3339, in the future.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<String>,
}

/// A raw token: the secret itself. `Debug` and `Display` print `***`; read it with
/// [`expose`](RawToken::expose) to hand it to whoever uses it (as
/// [`ClientBuilder::bearer_token`](crate::ClientBuilder::bearer_token), say).
///
/// ```no_run
/// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
/// let issued = api.users().tokens(1).issue(&Default::default()).await?;
/// println!("{:?}", issued.token); // prints ***
/// let as_user = client::Client::builder("http://127.0.0.1:8080")
///     .bearer_token(issued.token.expose())
///     .build()?;
/// # let _ = as_user; Ok(()) }
/// ```
#[derive(Clone, PartialEq, Eq, Deserialize)]
#[serde(transparent)]
pub struct RawToken(String);

impl RawToken {
    /// Wraps a raw token the caller holds (to [`verify`](crate::Users::verify_token) it).
    ///
    /// ```
    /// let token = client::RawToken::new("3f2a…");
    /// assert_eq!(format!("{token:?}"), "***");
    /// ```
    pub fn new(token: impl Into<String>) -> Self {
        RawToken(token.into())
    }

    /// The secret, for whoever must send it.
    ///
    /// ```
    /// assert_eq!(client::RawToken::new("abc").expose(), "abc");
    /// ```
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for RawToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

impl fmt::Display for RawToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

/// A freshly issued (or rotated) token (schema `IssuedTokenDto`): the only answer that shows the
/// raw value.
///
/// ```no_run
/// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
/// let issued: client::IssuedToken = api.users().tokens(1).issue(&Default::default()).await?;
/// assert_eq!(issued.scope, client::Scope::Read);
/// println!("token {} expires {:?}", issued.id, issued.expires_at);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct IssuedToken {
    pub id: i64,
    pub user_id: i64,
    pub token: RawToken,
    pub scope: Scope,
    pub label: String,
    pub created_at: String,
    #[serde(default)]
    pub expires_at: Option<String>,
}

/// A token as listed (schema `TokenDto`): never the raw value.
///
/// ```no_run
/// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
/// for token in api.users().tokens(1).list(Default::default()).await?.items {
///     println!("{} {:?} revoked: {}", token.id, token.scope, token.revoked_at.is_some());
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct TokenInfo {
    pub id: i64,
    pub user_id: i64,
    pub scope: Scope,
    pub label: String,
    pub created_at: String,
    /// `None` while the token is not revoked.
    #[serde(default)]
    pub revoked_at: Option<String>,
    #[serde(default)]
    pub expires_at: Option<String>,
    /// Its last use (recorded at most once a minute); `None` if never used.
    #[serde(default)]
    pub last_used_at: Option<String>,
}

/// A user's tokens, newest first, revoked ones included (schema `TokenListDto`).
///
/// ```no_run
/// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
/// let list: client::TokenList = api.users().tokens(1).list(client::PageRequest::new(10, 0)).await?;
/// println!("{} of {}", list.items.len(), list.total);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct TokenList {
    pub items: Vec<TokenInfo>,
    /// How many tokens the user has (on every page).
    pub total: i64,
}

/// `POST /tokens/verify` (schema `VerificationDto`): `valid` only for a known, active token;
/// `user_id` and `scope` whenever the token is known, revoked or not.
///
/// ```no_run
/// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
/// let check: client::Verification = api.users().verify_token(&client::RawToken::new("…")).await?;
/// if !check.valid { println!("refused (user {:?})", check.user_id); }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub struct Verification {
    pub valid: bool,
    #[serde(default)]
    pub user_id: Option<i64>,
    #[serde(default)]
    pub scope: Option<Scope>,
}
