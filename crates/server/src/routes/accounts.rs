//! Area E: event-sourced accounts. The rules live in the `ledger` crate; this module wires.

use actix_web::body::BoxBody;
use actix_web::web::{Data, Path};
use actix_web::{HttpRequest, HttpResponse, Responder};
use apistos::actix::CreatedJson;
use apistos::paths::{RequestBody, Responses};
use apistos::reference_or::ReferenceOr;
use apistos::web::{ServiceConfig, get, post, resource};
use apistos::{ApiComponent, ApistosSchema, OpenApiVersion, api_operation};
use ledger::service::{self, EventsPage};
use ledger::{Account, Append, AppendEvent, Event, OpenAccount, Recorded};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use apistos::schemars;

use super::dto::{PageQuery, TEXT_PATTERN};
use crate::auth::{Access, Rule};
use crate::context::Context;
use crate::routes::dto::offset_page;
use http_edge::conditional::{IfMatch, IfNoneMatchParam, Precondition, Tagged};
use http_edge::db::{Db, Wrote};
use http_edge::error::ApiError;
use http_edge::extract::{JsonObject, RawQuery};
use http_edge::idempotent::KeyedCreate;
use http_edge::links::{Linked, Paged, Paging};

pub const ACCOUNT_ID_PATTERN: &str = r"^[A-Za-z0-9._-]{1,64}$";

/// A stored account event.
#[derive(Debug, Serialize, JsonSchema, ApiComponent)]
#[schemars(crate = "apistos")]
pub struct AccountEventDto {
    pub id: i64,
    /// The account id.
    pub aggregate_id: String,
    /// Always `account`.
    #[schemars(extend("enum" = ["account"]))]
    pub aggregate_type: &'static str,
    #[schemars(extend("enum" = ["AccountOpened", "MoneyDeposited", "MoneyWithdrawn", "AccountClosed"]))]
    pub event_type: String,
    /// `{owner}` for AccountOpened, `{amount_cents, ...}` for deposits and withdrawals, any
    /// object for AccountClosed.
    #[schemars(with = "Map<String, Value>")]
    pub payload: Box<RawValue>,
    /// Per-account counter starting at 1, without gaps.
    #[schemars(range(min = 1))]
    pub sequence: i64,
    /// UTC, `YYYY-MM-DD HH:MM:SS`.
    #[schemars(regex(pattern = r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$"))]
    pub occurred_at: String,
}

impl From<Event> for AccountEventDto {
    fn from(e: Event) -> Self {
        AccountEventDto {
            aggregate_type: e.aggregate_type(),
            id: e.id,
            aggregate_id: e.aggregate_id,
            event_type: e.event_type,
            payload: e.payload,
            sequence: e.sequence,
            occurred_at: e.occurred_at,
        }
    }
}

/// An account's current state (the projection of its events).
#[derive(Debug, Serialize, JsonSchema, ApiComponent)]
#[schemars(crate = "apistos")]
pub struct AccountDto {
    pub account_id: String,
    pub owner: String,
    #[schemars(range(min = 0))]
    pub balance_cents: i64,
    pub is_open: bool,
    /// Sequence of the last applied event.
    #[schemars(range(min = 1))]
    pub last_sequence: i64,
}

impl From<Account> for AccountDto {
    fn from(a: Account) -> Self {
        AccountDto {
            account_id: a.account_id,
            owner: a.state.owner,
            balance_cents: a.state.balance_cents,
            is_open: a.state.is_open,
            last_sequence: a.state.last_sequence,
        }
    }
}

crate::list_dto!(AccountList, AccountDto);

/// An account's events, sequence ascending; `total` counts all of them.
#[derive(Debug, Serialize, JsonSchema, ApiComponent)]
#[schemars(crate = "apistos")]
pub struct AccountEventList {
    pub total: i64,
    pub items: Vec<AccountEventDto>,
    /// More events follow this page: it ended at `limit` items or at about 1 MiB.
    pub has_more: bool,
    /// The `after_sequence` of the next page, when `has_more`.
    pub next_cursor: Option<i64>,
}

impl Paged for AccountEventList {
    fn paging(&self) -> Paging {
        Paging::Cursor {
            param: "after_sequence",
            next: self.next_cursor,
        }
    }
}

/// Opens an account. An existing `account_id` is 409.
#[derive(Debug, Deserialize, JsonSchema, ApiComponent)]
#[schemars(crate = "apistos")]
pub struct OpenAccountBody {
    /// 1 to 64 characters of `A-Z a-z 0-9 . _ -`.
    #[schemars(regex(pattern = ACCOUNT_ID_PATTERN))]
    pub account_id: String,
    #[schemars(length(min = 1, max = ledger::OWNER_MAX), regex(pattern = TEXT_PATTERN))]
    pub owner: String,
}

/// `amount_cents` moved by a deposit or a withdrawal; other members are stored as sent.
#[derive(Debug, Deserialize, JsonSchema, ApiComponent)]
#[schemars(crate = "apistos")]
pub struct AmountPayload {
    #[schemars(range(min = 1, max = ledger::AMOUNT_MAX))]
    pub amount_cents: i64,
}

/// An event to append, by `event_type`. A withdrawal above the balance is 422
/// `insufficient-funds`; any append to a closed account is 409 `account-closed`; an
/// `expected_sequence` (optimistic concurrency: the sequence the client last saw) other than the
/// account's last sequence is 409 `conflict`. Nothing is written in those cases.
#[derive(Debug, Deserialize, JsonSchema, ApiComponent)]
#[schemars(crate = "apistos")]
#[serde(tag = "event_type")]
pub enum AppendEventBody {
    MoneyDeposited {
        payload: AmountPayload,
        #[schemars(range(min = 0))]
        expected_sequence: Option<i64>,
    },
    MoneyWithdrawn {
        payload: AmountPayload,
        #[schemars(range(min = 0))]
        expected_sequence: Option<i64>,
    },
    AccountClosed {
        /// Any object (absent means `{}`).
        payload: Option<Map<String, Value>>,
        #[schemars(range(min = 0))]
        expected_sequence: Option<i64>,
    },
}

#[derive(Debug, Deserialize, JsonSchema, ApiComponent)]
#[schemars(crate = "apistos")]
pub struct AccountPath {
    /// The account id.
    pub id: String,
}

/// `after_sequence` ≥ 0 (default 0) and `limit` 1 to 1,000 (default 1,000).
#[derive(Debug, Deserialize, JsonSchema, ApiComponent)]
#[schemars(crate = "apistos")]
pub struct EventsQuery {
    /// Only events with a greater sequence.
    #[schemars(range(min = 0))]
    pub after_sequence: Option<i64>,
    /// At most this many events (1 to 1,000, default 1,000).
    #[schemars(range(min = 1, max = ledger::EVENTS_LIMIT_MAX))]
    pub limit: Option<i64>,
}

/// 201 with the stored event; `Location` names the account on open, a replayed answer carries
/// `Idempotent-Replayed: true`, and `ETag` is the account's tag as of this event (`"N"`, its
/// sequence), ready for the If-Match of the next append.
pub struct CreatedEvent {
    recorded: Recorded,
    location: bool,
}

impl Responder for CreatedEvent {
    type Body = BoxBody;

    fn respond_to(self, _: &HttpRequest) -> HttpResponse {
        let mut res = HttpResponse::Created();
        if self.location {
            res.insert_header((
                "Location",
                format!("/accounts/{}", self.recorded.event.aggregate_id),
            ));
        }
        if self.recorded.replayed {
            res.insert_header((http_edge::idempotent::REPLAYED, "true"));
        }
        res.insert_header((
            actix_web::http::header::ETAG,
            http_edge::conditional::sequence_tag(self.recorded.event.sequence),
        ));
        res.json(AccountEventDto::from(self.recorded.event))
    }
}

impl ApiComponent for CreatedEvent {
    fn child_schemas(v: OpenApiVersion) -> Vec<(String, ReferenceOr<ApistosSchema>)> {
        <CreatedJson<AccountEventDto> as ApiComponent>::child_schemas(v)
    }
    fn raw_schema(v: OpenApiVersion) -> Option<ReferenceOr<ApistosSchema>> {
        <CreatedJson<AccountEventDto> as ApiComponent>::raw_schema(v)
    }
    fn schema(v: OpenApiVersion) -> Option<(String, ReferenceOr<ApistosSchema>)> {
        <CreatedJson<AccountEventDto> as ApiComponent>::schema(v)
    }
    fn request_body(_: OpenApiVersion, _: Option<String>) -> Option<RequestBody> {
        None
    }
    fn responses(
        v: OpenApiVersion,
        content_type: Option<String>,
        description: Option<String>,
    ) -> Option<Responses> {
        let created = <CreatedJson<AccountEventDto> as ApiComponent>::responses(
            v,
            content_type,
            description,
        )?;
        let tag = http_edge::answers::header(
            "The account's ETag as of this event (`\"N\"`, the event's sequence): the If-Match \
             of a next append that must follow this one.",
            true,
            serde_json::json!({"type": "string"}),
            v,
        );
        Some(http_edge::answers::with_header(
            http_edge::idempotent::with_replayed_header(created, v),
            "ETag",
            &tag,
        ))
    }
}

/// Open an account
///
/// Records the AccountOpened event (sequence 1) and creates the projection. An existing
/// `account_id` is 409 and nothing is written.
#[api_operation(
    operation_id = "open_account",
    tag = "accounts",
    error_code = 409,
    error_code = 413,
    error_code = 415,
    error_code = 422,
    error_code = 503
)]
pub async fn open(
    db: Db,
    keyed: KeyedCreate,
    body: JsonObject<OpenAccountBody>,
) -> Result<CreatedEvent, ApiError> {
    let input = OpenAccount::from_json(&body)?.owned_by(db.actor().owner_id());
    let key = keyed.caller_key("open_account", &body)?;
    let recorded = db
        .write_recorded(
            move |c| service::open_account(c, &input, key.as_ref()),
            |r| match r.replayed {
                true => Wrote::Nothing,
                false => Wrote::At(format!("/accounts/{}", r.event.aggregate_id)),
            },
        )
        .await?;
    Ok(CreatedEvent {
        recorded,
        location: true,
    })
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
    error_code = 413,
    error_code = 415,
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
    let key = keyed.caller_key(&format!("append_event:{account_id}"), &body)?;
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
    Ok(CreatedEvent {
        recorded,
        location: false,
    })
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
    );
}
