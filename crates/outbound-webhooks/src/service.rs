//! The endpoint use cases, each in the caller's transaction. An endpoint belongs to the user
//! that registered it (the operator's, or nobody's with authentication off, see every one):
//! another user's endpoint does not exist for a user, as another user's account does not.

use std::time::Duration;

use ownership::Actor;
use pagination::Page;
use problem_details::{FieldError, FieldErrorCode};
use storage::DbConnection;

use crate::model::{Delivery, Endpoint, EndpointInput, EndpointPatch};
use crate::{Allow, Error, SigningKey, repo};

/// An endpoint and its secret: the answer of a registration or a rotation, the only times the
/// secret is shown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WithSecret {
    pub endpoint: Endpoint,
    pub secret: String,
}

fn refused_url(why: String) -> Error {
    Error::Validation(vec![FieldError::new(
        "url",
        FieldErrorCode::Invalid,
        format!("refused destination: {why} (the operator may allow it: WEBHOOK_ENDPOINT_ALLOW)"),
    )])
}

/// Registers an endpoint for `actor`, receiving what is committed from now on; refused past
/// `settings.max_per_owner` endpoints of that owner.
pub fn register(
    conn: &mut DbConnection,
    input: &EndpointInput,
    actor: Actor,
    settings: &crate::dispatch::Settings,
) -> Result<WithSecret, Error> {
    let key = settings.key.as_ref().ok_or(Error::NoSigningKey)?;
    settings.allow.check_url(&input.url).map_err(refused_url)?;
    repo::lock_owner(conn, actor.owner_id())?;
    let limit = settings.max_per_owner;
    if repo::count_of(conn, actor.owner_id())? >= limit {
        return Err(Error::TooMany { limit });
    }
    let head = ledger::repo::feed_head(conn)?;
    let now = storage::timestamp::now_sql();
    let mut salt = [0u8; 16];
    getrandom::fill(&mut salt).map_err(|e| Error::Internal(e.to_string()))?;
    let salt: String = salt.iter().map(|b| format!("{b:02x}")).collect();
    let endpoint = repo::insert(
        conn,
        actor.owner_id(),
        input.url.as_str(),
        &input.event_types,
        &salt,
        head,
        &now,
    )?;
    let secret = key.endpoint_secret(endpoint.id, &endpoint.secret_salt, endpoint.secret_version);
    Ok(WithSecret { endpoint, secret })
}

/// Endpoint `id` (the path's text) when `actor` may see it.
pub fn get(conn: &mut DbConnection, id: &str, actor: Actor) -> Result<Endpoint, Error> {
    let found = match id.parse::<i64>() {
        Ok(n) => repo::get(conn, n)?,
        Err(_) => None,
    };
    found
        .filter(|e| actor.sees(e.owner_id))
        .ok_or_else(|| Error::NotFound { id: id.to_owned() })
}

/// A page of the endpoints `actor` may see, and how many there are.
pub fn list(
    conn: &mut DbConnection,
    page: Page,
    actor: Actor,
) -> Result<(Vec<Endpoint>, i64), Error> {
    Ok(repo::list(conn, actor.only_owner(), page)?)
}

pub fn update(
    conn: &mut DbConnection,
    id: &str,
    patch: &EndpointPatch,
    actor: Actor,
    allow: &Allow,
) -> Result<Endpoint, Error> {
    let endpoint = get(conn, id, actor)?;
    if let Some(url) = &patch.url {
        allow.check_url(url).map_err(refused_url)?;
    }
    let now = storage::timestamp::now_sql();
    let url = patch.url.as_ref().map(url::Url::as_str);
    repo::update(
        conn,
        endpoint.id,
        url,
        patch.event_types.as_ref(),
        patch.enabled,
        &now,
    )?;
    get(conn, id, actor)
}

/// A new secret; the previous one still signs deliveries for `grace`, so that receivers can
/// switch without losing one.
pub fn rotate(
    conn: &mut DbConnection,
    id: &str,
    actor: Actor,
    key: Option<&SigningKey>,
    grace: Duration,
) -> Result<WithSecret, Error> {
    let endpoint = get(conn, id, actor)?;
    let key = key.ok_or(Error::NoSigningKey)?;
    let now = storage::timestamp::now_sql();
    let version = repo::rotate(conn, endpoint.id, grace, &now)?
        .ok_or_else(|| Error::RotationInGrace { id: id.to_owned() })?;
    let endpoint = get(conn, id, actor)?;
    let secret = key.endpoint_secret(endpoint.id, &endpoint.secret_salt, version);
    Ok(WithSecret { endpoint, secret })
}

pub fn delete(conn: &mut DbConnection, id: &str, actor: Actor) -> Result<(), Error> {
    let endpoint = get(conn, id, actor)?;
    Ok(repo::delete(conn, endpoint.id)?)
}

/// A page of an endpoint's delivery log, newest first, and how many entries it has.
pub fn deliveries(
    conn: &mut DbConnection,
    id: &str,
    page: Page,
    actor: Actor,
) -> Result<(Vec<Delivery>, i64), Error> {
    let endpoint = get(conn, id, actor)?;
    Ok(repo::deliveries(conn, endpoint.id, page)?)
}
