//! Area E: event-sourced accounts. The rules live in the `ledger` crate; this module wires.

use actix_web::web::{Data, Path};
use apistos::api_operation;
use apistos::web::{ServiceConfig, get, post, resource};
use ledger::service::{self, EventsPage};
use ledger::{Append, AppendEvent, Open, OpenAccount, Transfer};

use crate::auth::{Access, Rule};
use crate::context::Context;
use crate::routes::dto::PageQuery;
use crate::routes::dto::offset_page;
use http_edge::conditional::{IfMatch, IfNoneMatchParam, Precondition, Tagged};
use http_edge::db::{Db, Sharing};
use http_edge::error::ApiError;
use http_edge::extract::{JsonObject, RawQuery};
use http_edge::idempotent::{Created, KeyedCreate};
use http_edge::links::Linked;
use idempotency::Scope;

mod streams;

pub use api_shapes::accounts::*;

/// Open an account
///
/// Records the AccountOpened event (sequence 1) and creates the projection. An existing
/// `account_id` is 409 and nothing is written.
#[api_operation(
    operation_id = "open_account",
    tag = "accounts",
    error_code = 409,
    error_code = 422,
    error_code = 503
)]
pub async fn open(
    context: Data<Context>,
    db: Db,
    keyed: KeyedCreate,
    body: JsonObject<OpenAccountBody>,
) -> Result<CreatedEvent, ApiError> {
    let input = OpenAccount::from_json(&body)?.owned_by(db.actor().owner_id());
    let key = keyed.caller_key(&Scope::of("open_account", &[]), &body)?;
    let audit = db.action().cloned();
    let recorded = context.appender.open(Open { input, key, audit }).await?;
    context.event_committed(&recorded.event);
    Ok(created_event(recorded, true))
}

/// List accounts
///
/// Projections ordered by `account_id`, paged by `limit` and `offset`.
#[api_operation(operation_id = "list_accounts", tag = "accounts", error_code = 422)]
pub async fn list(db: Db, q: RawQuery<PageQuery>) -> Result<Linked<AccountList>, ApiError> {
    let actor = db.actor();
    let list = move |c: &mut _, page| service::list_accounts(c, page, actor);
    Ok(Linked::new(offset_page(&db, &q, list).await?))
}

/// Get an account
#[api_operation(operation_id = "get_account", tag = "accounts", error_code = 404)]
pub async fn get_one(
    db: Db,
    path: Path<AccountPath>,
    _doc: IfNoneMatchParam,
) -> Result<Tagged<AccountDto>, ApiError> {
    let (id, actor) = (path.into_inner().id, db.actor());
    let account = AccountDto::from(
        db.read(move |c| service::get_account(c, &id, actor))
            .await?,
    );
    let sequence = account.last_sequence;
    Ok(Tagged::by_sequence(account, sequence))
}

/// Append an event
///
/// The sequence is the account's last sequence plus one; the event and the projection update
/// are written atomically.
#[api_operation(
    operation_id = "append_event",
    tag = "accounts",
    error_code = 404,
    error_code = 409,
    error_code = 412,
    error_code = 422,
    error_code = 503
)]
pub async fn append(
    context: Data<Context>,
    db: Db,
    path: Path<AccountPath>,
    keyed: KeyedCreate,
    if_match: IfMatch,
    body: JsonObject<AppendEventBody>,
) -> Result<CreatedEvent, ApiError> {
    let account_id = path.into_inner().id;
    let command = AppendEvent::from_json(&body)?;
    // An invalid request (422) is refused before its precondition is judged (412).
    let key = keyed.caller_key(&Scope::of("append_event", &[&account_id]), &body)?;
    let precondition = ledger::Precondition::new(if_match.sequence::<ledger::Error>()?);
    let failed = |_| Precondition::<ledger::Error>::Failed;
    let command = precondition.apply(command).map_err(failed)?;
    let job = Append {
        account_id,
        command,
        key,
        actor: db.actor(),
        audit: db.action().cloned(),
    };
    let recorded = precondition
        .judge(context.appender.append(job).await)
        .map_err(failed)??;
    context.event_committed(&recorded.event);
    Ok(created_event(recorded, false))
}

/// Transfer money between two accounts
///
/// `MoneyWithdrawn` on `from` and `MoneyDeposited` on `to`, written together in one
/// transaction, each payload naming the transfer and the other account. Refused whole, with
/// nothing written: an unknown account (404), a closed one (409 `account-closed`), `from`
/// holding less than the amount (422 `insufficient-funds`), the same account twice (422).
#[api_operation(
    operation_id = "create_transfer",
    tag = "accounts",
    error_code = 404,
    error_code = 409,
    error_code = 422,
    error_code = 503
)]
pub async fn transfer(
    context: Data<Context>,
    db: Db,
    keyed: KeyedCreate,
    body: JsonObject<TransferBody>,
) -> Result<Created<TransferDto>, ApiError> {
    let (input, actor) = (Transfer::from_json(&body)?, db.actor());
    let scope = Scope::of("create_transfer", &[]);
    let transfer = move |c: &mut _| service::transfer(c, &input, actor).map(TransferDto::from);
    // Alone: in a shared batch its account locks would add to other writes' (`Sharing`).
    let created = keyed
        .create_as(&db, scope, &body, transfer, Sharing::Alone)
        .await?;
    let account = |field| body.get(field).and_then(|v| v.as_str()).unwrap_or_default();
    context.events_committed(&[account("from"), account("to")]);
    Ok(created)
}

/// List an account's events
///
/// Sequence ascending, after `after_sequence`, at most `limit`. An unknown account has no
/// events (200 with total 0).
#[api_operation(operation_id = "list_events", tag = "accounts", error_code = 422)]
pub async fn events(
    db: Db,
    path: Path<AccountPath>,
    q: RawQuery<EventsQuery>,
) -> Result<Linked<AccountEventList>, ApiError> {
    let (id, actor) = (path.into_inner().id, db.actor());
    let page = EventsPage::parse(q.get("after_sequence"), q.get("limit"))?;
    let (page, total) = db
        .read(move |c| service::list_events(c, &id, page, actor))
        .await?;
    Ok(Linked::new(AccountEventList {
        total,
        has_more: page.has_more,
        next_cursor: page.next_cursor,
        items: page.items.into_iter().map(Into::into).collect(),
    }))
}

/// Accounts and their events: a bearer token (a write, scope write or admin).
pub const ACCESS: &[Rule] = &[
    Rule::any("/accounts", Access::Bearer),
    Rule::any("/accounts/{id}", Access::Bearer),
    Rule::any("/accounts/{id}/events", Access::Bearer),
    Rule::any("/accounts/{id}/events/stream", Access::Bearer),
    Rule::any("/transfers", Access::Bearer),
    Rule::any("/events/stream", Access::OperatorOnly),
];

pub fn configure(cfg: &mut ServiceConfig) {
    cfg.service(
        resource("/accounts")
            .route(get().to(list))
            .route(post().to(open)),
    )
    .service(resource("/accounts/{id}").route(get().to(get_one)))
    .service(
        resource("/accounts/{id}/events")
            .route(get().to(events))
            .route(post().to(append)),
    )
    .service(resource("/accounts/{id}/events/stream").route(get().to(streams::account)))
    .service(resource("/transfers").route(post().to(transfer)))
    .service(resource("/events/stream").route(get().to(streams::all)));
}
