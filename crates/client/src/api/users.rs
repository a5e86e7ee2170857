//! Users and their access tokens (area D). These routes refuse with `{"error": "…"}` bodies,
//! which arrive as [`ClientError::Refused`].

use reqwest::{Method, StatusCode};
use serde::Serialize;

use crate::error::ClientError;
use crate::idempotency::{Created, IdempotencyKey};
use crate::transport::{Call, Client};
use crate::types::{
    IssueToken, IssuedToken, PageRequest, RawToken, TokenList, User, UserInput, Verification,
};

/// `/users` and `/tokens/verify`. Made by [`Client::users`].
///
/// ```no_run
/// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
/// let user = api.users().create(&client::UserInput::new("ann")).await?;
/// let issued = api.users().tokens(user.id).issue(&Default::default()).await?;
/// assert!(api.users().verify_token(&issued.token).await?.valid);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Users<'a> {
    client: &'a Client,
}

impl<'a> Users<'a> {
    /// `POST /users`, under a fresh random `Idempotency-Key` (so retried safely).
    ///
    /// ```no_run
    /// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
    /// let user = api.users().create(&client::UserInput::new("ann")).await?;
    /// # let _ = user; Ok(()) }
    /// ```
    pub async fn create(&self, input: &UserInput) -> Result<User, ClientError> {
        Ok(self.created(input, None).await?.value)
    }

    /// `POST /users` under the caller's `key`.
    ///
    /// ```no_run
    /// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
    /// let key = client::IdempotencyKey::new("signup-ann")?;
    /// let made = api.users().create_with_key(&client::UserInput::new("ann"), &key).await?;
    /// # let _ = made; Ok(()) }
    /// ```
    pub async fn create_with_key(
        &self,
        input: &UserInput,
        key: &IdempotencyKey,
    ) -> Result<Created<User>, ClientError> {
        self.created(input, Some(key)).await
    }

    async fn created(
        &self,
        input: &UserInput,
        key: Option<&IdempotencyKey>,
    ) -> Result<Created<User>, ClientError> {
        let call = Call::new("create_user", Method::POST, "/users")
            .json(input)?
            .plain_errors();
        self.client.create(call, key).await
    }

    /// The tokens of user `user_id`, acting as that user (`X-User-Id`).
    ///
    /// ```no_run
    /// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
    /// let tokens = api.users().tokens(7).list(Default::default()).await?;
    /// # let _ = tokens; Ok(()) }
    /// ```
    pub fn tokens(&self, user_id: i64) -> Tokens<'a> {
        Tokens {
            client: self.client,
            user_id,
        }
    }

    /// `POST /tokens/verify`: whether a raw token is known and active. It only reads, so it is
    /// retried like a GET.
    ///
    /// ```no_run
    /// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
    /// let check = api.users().verify_token(&client::RawToken::new("…")).await?;
    /// println!("valid: {}", check.valid);
    /// # Ok(()) }
    /// ```
    pub async fn verify_token(&self, token: &RawToken) -> Result<Verification, ClientError> {
        #[derive(Serialize)]
        struct VerifyBody<'t> {
            token: &'t str,
        }
        let call = Call::new("verify_token", Method::POST, "/tokens/verify")
            .json(&VerifyBody {
                token: token.expose(),
            })?
            .plain_errors()
            .retry_safe();
        Ok(self.client.fetch(call, StatusCode::OK).await?.0)
    }
}

/// `/users/{user_id}/tokens`, acting as that user. Made by [`Users::tokens`].
///
/// Issuing and rotating are never retried: the service cannot replay them (that would mean
/// storing the raw token), so a lost answer would leave a second live token. After such a
/// failure, [`list`](Tokens::list) shows what exists; revoke what you cannot see.
///
/// ```no_run
/// use client::{IssueToken, Scope};
/// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
/// let tokens = api.users().tokens(7);
/// let issued = tokens.issue(&IssueToken { scope: Some(Scope::Write), ..Default::default() }).await?;
/// let rotated = tokens.rotate(issued.id).await?;
/// tokens.revoke(rotated.id).await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Tokens<'a> {
    client: &'a Client,
    user_id: i64,
}

impl Tokens<'_> {
    fn call(&self, op: &'static str, method: Method, rest: &str) -> Result<Call, ClientError> {
        let path = format!("/users/{}/tokens{rest}", self.user_id);
        Ok(Call::new(op, method, path)
            .header("x-user-id", &self.user_id.to_string())?
            .plain_errors())
    }

    /// `POST /users/{id}/tokens`: a new token; its raw value is in this answer only.
    ///
    /// ```no_run
    /// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
    /// let issued = api.users().tokens(7).issue(&Default::default()).await?;
    /// let raw: &str = issued.token.expose();
    /// # let _ = raw; Ok(()) }
    /// ```
    pub async fn issue(&self, input: &IssueToken) -> Result<IssuedToken, ClientError> {
        let call = self.call("issue_token", Method::POST, "")?.json(input)?;
        Ok(self.client.fetch(call, StatusCode::CREATED).await?.0)
    }

    /// `GET /users/{id}/tokens`: newest first, revoked ones included. With
    /// `PageRequest::default()` every token, else that page.
    ///
    /// ```no_run
    /// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
    /// let all = api.users().tokens(7).list(client::PageRequest::default()).await?;
    /// # let _ = all; Ok(()) }
    /// ```
    pub async fn list(&self, page: PageRequest) -> Result<TokenList, ClientError> {
        let call = self
            .call("list_tokens", Method::GET, "")?
            .query(page.query());
        Ok(self.client.fetch(call, StatusCode::OK).await?.0)
    }

    /// `DELETE /users/{id}/tokens/{token_id}`: from now on the token is refused. A second
    /// revoke is refused with 409 `token already revoked`, also when it is this call's own
    /// retry after a lost answer: the token is revoked either way.
    ///
    /// ```no_run
    /// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
    /// api.users().tokens(7).revoke(12).await?;
    /// # Ok(()) }
    /// ```
    pub async fn revoke(&self, token_id: i64) -> Result<(), ClientError> {
        let call = self.call("revoke_token", Method::DELETE, &format!("/{token_id}"))?;
        self.client.fetch_empty(call, StatusCode::NO_CONTENT).await
    }

    /// `POST /users/{id}/tokens/{token_id}/rotate`: a new token with the same scope and label,
    /// the old one revoked, in one step.
    ///
    /// ```no_run
    /// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
    /// let fresh = api.users().tokens(7).rotate(12).await?;
    /// # let _ = fresh; Ok(()) }
    /// ```
    pub async fn rotate(&self, token_id: i64) -> Result<IssuedToken, ClientError> {
        let rest = format!("/{token_id}/rotate");
        let call = self.call("rotate_token", Method::POST, &rest)?;
        Ok(self.client.fetch(call, StatusCode::CREATED).await?.0)
    }
}

impl Client {
    /// Users and tokens (see [`Users`]).
    ///
    /// ```no_run
    /// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
    /// let user = api.users().create(&client::UserInput::new("ann")).await?;
    /// # let _ = user; Ok(()) }
    /// ```
    pub fn users(&self) -> Users<'_> {
        Users { client: self }
    }
}
