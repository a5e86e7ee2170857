//! The token routes' own extractors: the acting user's header and the raw path segments, read
//! the way the specification says (the domain decides what they mean).

use std::future::{Ready, ready};
use std::marker::PhantomData;

use actix_web::dev::Payload;
use actix_web::web::Path;
use actix_web::{FromRequest, HttpRequest};

use http_edge::actor::actor;
use http_edge::error::ApiError;
use http_edge::extract::{HeaderDoc, RawHeader};
use ownership::Actor;

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

/// Who acts on a user's tokens. With `API_AUTH=off` the specification's rule: the raw
/// `X-User-Id` header, which the domain checks (401 when missing or not an integer, 403 when it
/// is not the path user). In tokens mode the guard has already decided: an `admin` token acts as
/// its own user (an `X-User-Id` naming someone else is 403), and the operator acts as the user
/// `X-User-Id` names, or as the path user when there is none.
pub struct ActingUser {
    header: RawHeader<ActingUserDoc>,
    token_user: Option<i64>,
    operator: bool,
}

impl ActingUser {
    /// The acting user's id, for a request on `path_user`'s tokens.
    pub fn id(&self, path_user: i64) -> Result<i64, ApiError> {
        let named = || tokens::parse_actor(self.header.value());
        Ok(match (self.token_user, self.operator) {
            (Some(user), _) => match self.header.value() {
                Some(_) if named()? != user => return Err(tokens::Error::Forbidden.into()),
                _ => user,
            },
            (None, true) if self.header.value().is_none() => path_user,
            _ => named()?,
        })
    }
}

impl FromRequest for ActingUser {
    type Error = ApiError;
    type Future = Ready<Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let header = match RawHeader::<ActingUserDoc>::from_request(req, payload).into_inner() {
            Ok(header) => header,
            Err(err) => return ready(Err(err)),
        };
        let actor = actor(req);
        ready(Ok(ActingUser {
            header,
            token_user: actor.owner_id(),
            operator: actor == Actor::Operator,
        }))
    }
}

http_edge::document_as!(ActingUser => RawHeader<ActingUserDoc>);

/// The raw path segments: `userId` (not numeric → 0, as the specification says) and, on
/// revoke, `tokenId` (not an integer → no such token). `T` documents them.
pub struct TokenPath<T> {
    pub user_id: i64,
    pub token_id: Option<i64>,
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

http_edge::document_as!(TokenPath<T> => Path<T>, for T);
