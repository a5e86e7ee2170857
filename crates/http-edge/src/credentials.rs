//! The credentials other than the app's own tokens: the operator's API keys (a header of the
//! app's choosing: the operator credential of a token guard, or one route's key) and HS256
//! JWT bearers. The checks live in the `credentials` crate; this module reads the headers,
//! answers 401 problems with a `WWW-Authenticate` challenge and documents both schemes in
//! OpenAPI. The app builds one [`Credentials`] from its configuration, in [`crate::Edge`].

use std::future::{Ready, ready};
use std::time::{SystemTime, UNIX_EPOCH};

use actix_web::dev::Payload;
use actix_web::http::header::{HeaderName, HeaderValue, WWW_AUTHENTICATE};
use actix_web::{FromRequest, HttpRequest};
use apistos::security::{ApiKey, ApiKeyIn, Http, SecurityType};
use credentials::{ApiKeys, Error, Hs256, MIN_SECRET_BYTES};
use serde_json::{Map, Value};

use crate::error::ApiError;

/// The API key header when the app names none.
pub const DEFAULT_API_KEY_HEADER: &str = "X-API-Key";

/// `API_KEY_HEADER`'s value: an HTTP header name (a token of RFC 9110).
pub fn header_name(v: &str) -> Result<String, &'static str> {
    let token = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c);
    if v.chars().all(token) {
        Ok(v.to_owned())
    } else {
        Err("expected an HTTP header name such as X-API-Key")
    }
}

/// The API keys and the JWT verifier, built once from [`Settings`].
#[derive(Debug, Clone)]
pub struct Credentials {
    api_keys: ApiKeys,
    api_key_header: HeaderName,
    /// `WWW-Authenticate` of a refused API key, naming the header as configured.
    api_key_challenge: String,
    jwt: Option<Hs256>,
}

impl Credentials {
    /// Warns (without the secret) when `JWT_SECRET` is missing or too short: the protected
    /// route then answers every request with 401.
    /// Keys accepted in `api_key_header`, and the JWT secret (none, or too short: every JWT
    /// is refused, and a warning says so at start).
    pub fn new<'a>(
        api_keys: impl IntoIterator<Item = &'a str>,
        api_key_header: &str,
        jwt_secret: Option<&str>,
    ) -> Self {
        let jwt = jwt_secret.and_then(|s| Hs256::new(s.as_bytes()).ok());
        if jwt.is_none() {
            log::warn!(
                "JWT_SECRET is not set or shorter than {MIN_SECRET_BYTES} bytes: \
                 /examples/protected will answer 401 to every request"
            );
        }
        Credentials {
            api_keys: ApiKeys::new(api_keys),
            api_key_header: HeaderName::from_bytes(api_key_header.as_bytes())
                .unwrap_or_else(|_| HeaderName::from_static("x-api-key")),
            api_key_challenge: challenge(api_key_header),
            jwt,
        }
    }

    pub fn api_key_challenge(&self) -> &str {
        &self.api_key_challenge
    }

    pub fn check_api_key(&self, req: &HttpRequest) -> Result<(), Error> {
        let presented = req.headers().get(&self.api_key_header);
        self.api_keys.verify(presented.map(HeaderValue::as_bytes))
    }

    fn check_bearer(&self, req: &HttpRequest) -> Result<Map<String, Value>, Error> {
        let verifier = self.jwt.as_ref().ok_or(Error::WeakSecret)?;
        let token = crate::extract::bearer(req.headers()).ok_or(Error::MissingToken)?;
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
        verifier.verify(token, now)
    }
}

fn challenge(header: &str) -> String {
    format!("ApiKey header=\"{header}\"")
}

/// A 401 `unauthorized` problem carrying `challenge` in `WWW-Authenticate`.
fn unauthorized(err: Error, challenge: &str) -> actix_web::Error {
    let mut err = ApiError::from(err);
    if let Ok(value) = HeaderValue::from_str(challenge) {
        err = err.with_header(WWW_AUTHENTICATE, value);
    }
    err.into()
}

fn with_auth<T>(
    req: &HttpRequest,
    check: impl FnOnce(&Credentials) -> Result<T, Error>,
    unconfigured: Error,
    challenge: impl FnOnce(Option<&Credentials>) -> String,
) -> Ready<Result<T, actix_web::Error>> {
    let auth = crate::Edge::of(req).ok().map(|edge| &edge.credentials);
    let result = auth.map_or(Err(unconfigured), check);
    ready(result.map_err(|e| unauthorized(e, &challenge(auth))))
}

/// Proof that the request carried a configured API key.
pub struct ApiKeyAuth;

impl FromRequest for ApiKeyAuth {
    type Error = actix_web::Error;
    type Future = Ready<Result<Self, Self::Error>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        with_auth(
            req,
            |a| a.check_api_key(req).map(|()| ApiKeyAuth),
            Error::NoApiKeyConfigured,
            |a| {
                a.map_or_else(
                    || challenge(DEFAULT_API_KEY_HEADER),
                    |a| a.api_key_challenge.clone(),
                )
            },
        )
    }
}

/// The verified claims of the request's bearer JWT.
pub struct BearerClaims(pub Map<String, Value>);

impl FromRequest for BearerClaims {
    type Error = actix_web::Error;
    type Future = Ready<Result<Self, Self::Error>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        with_auth(
            req,
            |a| a.check_bearer(req).map(BearerClaims),
            Error::WeakSecret,
            |_| "Bearer".to_owned(),
        )
    }
}

crate::security_scheme!(
    ApiKeyAuth,
    "api_key",
    SecurityType::ApiKey(ApiKey {
        name: DEFAULT_API_KEY_HEADER.to_owned(),
        _in: ApiKeyIn::Header,
    }),
    "One of the keys in API_KEYS; the header name is API_KEY_HEADER (default X-API-Key)."
);

crate::security_scheme!(
    BearerClaims,
    "bearer_jwt",
    SecurityType::Http(Http {
        scheme: "bearer".to_owned(),
        bearer_format: Some("JWT".to_owned()),
    }),
    "An HS256 JWT signed with JWT_SECRET; exp and nbf are honoured (30 s leeway)."
);
