use std::fmt;

use chrono::{DateTime, Duration, SecondsFormat, Utc};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::Error;

/// Longest user name, in characters.
pub const NAME_MAX: usize = 200;
/// Longest token label, in characters.
pub const LABEL_MAX: usize = 200;
/// Random bytes in a raw token (256 bits; 64 hex characters).
const TOKEN_BYTES: usize = 32;

const EXPIRES_IN_DAYS: &str =
    "expires_in_days must be a whole number of days from 1 to the longest token lifetime";
const EXPIRES_AT: &str =
    "expires_at must be an RFC 3339 time in the future, within the longest token lifetime";

/// Fields in table order: the repository selects `all_columns` into it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "db", derive(diesel::Queryable))]
pub struct User {
    pub id: i64,
    pub name: String,
    pub created_at: String,
}

/// What a token allows: `read` < `write` < `admin`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub enum Scope {
    #[default]
    Read,
    Write,
    Admin,
}

impl Scope {
    pub const ALL: [Scope; 3] = [Scope::Read, Scope::Write, Scope::Admin];

    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Read => "read",
            Scope::Write => "write",
            Scope::Admin => "admin",
        }
    }

    /// Exact, case-sensitive names only.
    pub fn parse(s: &str) -> Option<Scope> {
        Scope::ALL.into_iter().find(|scope| scope.as_str() == s)
    }

    /// True for `write` and `admin`: the scopes that may change data.
    pub fn allows_write(self) -> bool {
        self >= Scope::Write
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A stored token as the owner may see it: never the hash, never the raw value. Times are
/// RFC 3339 UTC text with second precision, so they compare as strings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Token {
    pub id: i64,
    pub user_id: i64,
    pub scope: Scope,
    pub label: String,
    pub created_at: String,
    /// `None` while the token is not revoked.
    pub revoked_at: Option<String>,
    /// When the token stops working. `None` only for a row written by a release without
    /// expiry during a rolling upgrade (the migration gave every older token one).
    pub expires_at: Option<String>,
    /// The last time it authenticated a request or verified valid, to the minute.
    pub last_used_at: Option<String>,
}

/// How often `last_used_at` is written at most, per token: a busy token costs one write a
/// minute, not one per request.
pub const LAST_USED_RESOLUTION: Duration = Duration::minutes(1);

impl Token {
    pub fn is_revoked(&self) -> bool {
        self.revoked_at.is_some()
    }

    /// Not revoked and not expired at `now` (RFC 3339 UTC).
    pub fn is_active_at(&self, now: &str) -> bool {
        !self.is_revoked() && self.expires_at.as_deref().is_none_or(|end| end > now)
    }

    /// [`Token::needs_touch`] now.
    pub fn needs_touch_now(&self) -> bool {
        self.needs_touch(Utc::now())
    }

    /// Whether a use at `now` should be recorded: never recorded, or last recorded more than
    /// [`LAST_USED_RESOLUTION`] before `now`.
    pub fn needs_touch(&self, now: DateTime<Utc>) -> bool {
        let since = rfc3339(now - LAST_USED_RESOLUTION);
        self.last_used_at
            .as_deref()
            .is_none_or(|last| last < since.as_str())
    }
}

/// RFC 3339, UTC, second precision: the form every token time is stored in.
pub fn rfc3339(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// How long tokens live: the lifetime of a token whose issue request names none, and the
/// longest one a request may name (`TOKEN_DEFAULT_DAYS`, `TOKEN_MAX_DAYS`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lifetime {
    pub default_days: u32,
    pub max_days: u32,
}

impl Default for Lifetime {
    fn default() -> Self {
        Lifetime {
            default_days: 90,
            max_days: 365,
        }
    }
}

/// What issuing may do: how long tokens live, and how many active (unrevoked, unexpired)
/// tokens one user may hold (`TOKEN_MAX_ACTIVE`), so that no user's list grows without bound
/// by issuing alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy {
    pub lifetime: Lifetime,
    pub max_active: u32,
}

/// Active tokens per user by default.
pub const MAX_ACTIVE_DEFAULT: u32 = 100;

impl Default for Policy {
    fn default() -> Self {
        Policy {
            lifetime: Lifetime::default(),
            max_active: MAX_ACTIVE_DEFAULT,
        }
    }
}

/// What an issue request asks about expiry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expiry {
    Default,
    InDays(i64),
    At(DateTime<Utc>),
}

/// A raw token: 32 bytes from the operating system's CSPRNG as 64 lowercase hex characters.
/// It exists only in memory between issuance and the one response that shows it; `Debug`
/// prints `***` so it cannot reach a log line by accident.
#[derive(Clone, PartialEq, Eq)]
pub struct RawToken(String);

impl RawToken {
    pub fn generate() -> Result<RawToken, Error> {
        let mut bytes = [0u8; TOKEN_BYTES];
        getrandom::fill(&mut bytes).map_err(|_| Error::Entropy)?;
        Ok(RawToken(hex::encode(bytes)))
    }

    pub fn expose(&self) -> &str {
        &self.0
    }

    /// The SHA-256 hex digest, the only form that is stored.
    pub fn hash(&self) -> String {
        hash_token(&self.0)
    }

    pub fn into_string(self) -> String {
        self.0
    }
}

impl fmt::Debug for RawToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

/// The lowercase hex SHA-256 digest of `raw` (64 characters).
pub fn hash_token(raw: &str) -> String {
    hex::encode(Sha256::digest(raw.as_bytes()))
}

/// The answer of a verification: `user_id` and `scope` come from the stored record whenever
/// the token is known, revoked or not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verification {
    pub valid: bool,
    pub user_id: Option<i64>,
    pub scope: Option<Scope>,
}

/// The acting user from `X-User-Id`: absent, or anything but a decimal 64-bit integer, is
/// `Unauthorized`.
pub fn parse_actor(header: Option<&str>) -> Result<i64, Error> {
    header.and_then(parse_integer).ok_or(Error::Unauthorized)
}

/// A user id from the path: a decimal 64-bit integer as given (negative values kept); anything
/// else is treated as 0, as the specification says.
pub fn parse_path_id(segment: &str) -> i64 {
    parse_integer(segment).unwrap_or(0)
}

/// `-?[0-9]+` that fits in an `i64`.
pub(crate) fn parse_integer(s: &str) -> Option<i64> {
    let digits = s.strip_prefix('-').unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// Parses a request body: empty means `{}`; otherwise it must be a JSON object.
pub fn body_object(body: &[u8]) -> Result<Map<String, Value>, Error> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(Map::new());
    }
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(obj)) => Ok(obj),
        Ok(_) => Err(Error::Invalid("body must be a JSON object")),
        Err(_) => Err(Error::Invalid("body must be valid JSON")),
    }
}

/// A valid user to create: `name` required, not blank, at most 200 characters, no NUL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewUser {
    pub(crate) name: String,
}

impl NewUser {
    pub fn from_body(body: &[u8]) -> Result<NewUser, Error> {
        NewUser::from_object(&body_object(body)?)
    }

    /// From a body already read by [`body_object`].
    pub fn from_object(obj: &Map<String, Value>) -> Result<NewUser, Error> {
        let name = match obj.get("name") {
            None | Some(Value::Null) => return Err(Error::Invalid("name is required")),
            Some(Value::String(s)) => s,
            Some(_) => return Err(Error::Invalid("name must be a string")),
        };
        if name.trim().is_empty() {
            return Err(Error::Invalid("name is required"));
        }
        if name.chars().count() > NAME_MAX {
            return Err(Error::Invalid("name must be at most 200 characters"));
        }
        if name.contains('\0') {
            return Err(Error::Invalid("name must not contain NUL characters"));
        }
        Ok(NewUser { name: name.clone() })
    }

    pub fn name(&self) -> &str {
        &self.name
    }
}

/// A valid issue request: `scope` (default `read`) and `label` (default `""`, at most 200
/// characters, no NUL).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IssueRequest {
    pub(crate) scope: Scope,
    pub(crate) label: String,
    expiry: Expiry,
}

impl IssueRequest {
    pub fn from_body(body: &[u8]) -> Result<IssueRequest, Error> {
        let obj = body_object(body)?;
        let scope = match obj.get("scope") {
            None | Some(Value::Null) => Scope::Read,
            Some(Value::String(s)) => Scope::parse(s).ok_or(Error::InvalidScope)?,
            Some(_) => return Err(Error::InvalidScope),
        };
        let label = match obj.get("label") {
            None | Some(Value::Null) => String::new(),
            Some(Value::String(s)) => s.clone(),
            Some(_) => return Err(Error::Invalid("label must be a string")),
        };
        if label.chars().count() > LABEL_MAX {
            return Err(Error::Invalid("label must be at most 200 characters"));
        }
        if label.contains('\0') {
            return Err(Error::Invalid("label must not contain NUL characters"));
        }
        let expiry = match (obj.get("expires_in_days"), obj.get("expires_at")) {
            (None | Some(Value::Null), None | Some(Value::Null)) => Expiry::Default,
            (Some(days), None | Some(Value::Null)) => match days.as_i64() {
                Some(days) if days >= 1 => Expiry::InDays(days),
                _ => return Err(Error::Invalid(EXPIRES_IN_DAYS)),
            },
            (None | Some(Value::Null), Some(at)) => {
                match at.as_str().map(DateTime::parse_from_rfc3339) {
                    Some(Ok(at)) => Expiry::At(at.with_timezone(&Utc)),
                    _ => return Err(Error::Invalid(EXPIRES_AT)),
                }
            }
            _ => {
                return Err(Error::Invalid(
                    "give expires_in_days or expires_at, not both",
                ));
            }
        };
        Ok(IssueRequest {
            scope,
            label,
            expiry,
        })
    }

    /// When the token expires, if issued at `now` under `lifetime`: the requested time, or the
    /// default lifetime; refused past the longest lifetime or not in the future.
    pub fn expires_at(&self, now: DateTime<Utc>, lifetime: Lifetime) -> Result<String, Error> {
        let latest = now + Duration::days(i64::from(lifetime.max_days));
        let at = match self.expiry {
            Expiry::Default => now + Duration::days(i64::from(lifetime.default_days)),
            Expiry::InDays(days) if days <= i64::from(lifetime.max_days) => {
                now + Duration::days(days)
            }
            Expiry::InDays(_) => return Err(Error::Invalid(EXPIRES_IN_DAYS)),
            Expiry::At(at) if at > now && at <= latest => at,
            Expiry::At(_) => return Err(Error::Invalid(EXPIRES_AT)),
        };
        Ok(rfc3339(at))
    }

    pub fn scope(&self) -> Scope {
        self.scope
    }

    pub fn label(&self) -> &str {
        &self.label
    }
}

/// A well-formed verification request: `token` a non-empty string.
#[derive(Clone, PartialEq, Eq)]
pub struct VerifyRequest {
    pub(crate) token: String,
}

impl fmt::Debug for VerifyRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("VerifyRequest { token: *** }")
    }
}

impl VerifyRequest {
    pub fn from_body(body: &[u8]) -> Result<VerifyRequest, Error> {
        let obj = body_object(body)?;
        match obj.get("token") {
            None | Some(Value::Null) => Err(Error::Invalid("token is required")),
            Some(Value::String(s)) if s.is_empty() => Err(Error::Invalid("token is required")),
            Some(Value::String(s)) => Ok(VerifyRequest { token: s.clone() }),
            Some(_) => Err(Error::Invalid("token must be a string")),
        }
    }

    pub fn new(token: impl Into<String>) -> VerifyRequest {
        VerifyRequest {
            token: token.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(r: Result<impl fmt::Debug, Error>) -> &'static str {
        r.unwrap_err().message()
    }

    #[test]
    fn raw_tokens_are_64_lowercase_hex_and_distinct() {
        let a = RawToken::generate().unwrap();
        let b = RawToken::generate().unwrap();
        assert_eq!(a.expose().len(), 64);
        assert!(
            a.expose()
                .bytes()
                .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(&c))
        );
        assert_ne!(a, b);
        assert_eq!(format!("{a:?}"), "***");
        assert_eq!(a.hash().len(), 64);
        assert_ne!(a.hash(), a.expose());
    }

    #[test]
    fn hash_is_sha256_hex() {
        assert_eq!(
            hash_token("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn scopes() {
        assert_eq!(Scope::parse("write"), Some(Scope::Write));
        assert_eq!(Scope::parse("WRITE"), None);
        assert_eq!(Scope::parse(" read"), None);
        assert!(!Scope::Read.allows_write());
        assert!(Scope::Write.allows_write() && Scope::Admin.allows_write());
        assert_eq!(Scope::default(), Scope::Read);
    }

    #[test]
    fn ids() {
        assert_eq!(parse_actor(Some("42")).unwrap(), 42);
        assert_eq!(parse_actor(Some("-3")).unwrap(), -3);
        for bad in [
            None,
            Some(""),
            Some("x"),
            Some("1.0"),
            Some("+1"),
            Some(" 1"),
            Some("-"),
        ] {
            assert!(
                matches!(parse_actor(bad), Err(Error::Unauthorized)),
                "{bad:?}"
            );
        }
        assert!(parse_actor(Some("99999999999999999999")).is_err());
        assert_eq!(parse_path_id("7"), 7);
        assert_eq!(parse_path_id("-7"), -7);
        assert_eq!(parse_path_id("abc"), 0);
        assert_eq!(parse_path_id("99999999999999999999"), 0);
    }

    #[test]
    fn issue_requests() {
        let r = IssueRequest::from_body(b"").unwrap();
        assert_eq!((r.scope(), r.label()), (Scope::Read, ""));
        let r = IssueRequest::from_body(br#"{"scope":"admin","label":"ci"}"#).unwrap();
        assert_eq!((r.scope(), r.label()), (Scope::Admin, "ci"));
        assert_eq!(
            message(IssueRequest::from_body(br#"{"scope":"root"}"#)),
            "invalid scope, must be read/write/admin"
        );
        assert_eq!(
            message(IssueRequest::from_body(br#"{"scope":1}"#)),
            "invalid scope, must be read/write/admin"
        );
        let long = format!(r#"{{"label":"{}"}}"#, "é".repeat(201));
        assert_eq!(
            message(IssueRequest::from_body(long.as_bytes())),
            "label must be at most 200 characters"
        );
        let ok = format!(r#"{{"label":"{}"}}"#, "é".repeat(200));
        assert!(IssueRequest::from_body(ok.as_bytes()).is_ok());
        assert_eq!(
            message(IssueRequest::from_body(b"[1]")),
            "body must be a JSON object"
        );
        assert_eq!(
            message(IssueRequest::from_body(b"{")),
            "body must be valid JSON"
        );
    }

    #[test]
    fn verify_and_user_requests() {
        assert_eq!(
            message(VerifyRequest::from_body(br#"{"token":""}"#)),
            "token is required"
        );
        assert_eq!(
            message(VerifyRequest::from_body(br#"{"token":5}"#)),
            "token must be a string"
        );
        assert_eq!(
            format!(
                "{:?}",
                VerifyRequest::from_body(br#"{"token":"s3cret"}"#).unwrap()
            ),
            "VerifyRequest { token: *** }"
        );
        assert_eq!(
            message(NewUser::from_body(br#"{"name":"  "}"#)),
            "name is required"
        );
        assert_eq!(message(NewUser::from_body(b"{}")), "name is required");
        assert_eq!(
            message(NewUser::from_body(br#"{"name":["a"]}"#)),
            "name must be a string"
        );
        assert_eq!(
            NewUser::from_body(br#"{"name":" Ann "}"#).unwrap().name(),
            " Ann "
        );
    }
}
