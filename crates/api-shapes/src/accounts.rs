//! The accounts' request and answer shapes.

use apistos::ApiComponent;
use ledger::{Account, Event, Recorded};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use apistos::schemars;

use crate::TEXT_PATTERN;
use http_edge::links::{Paged, Paging};

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

http_edge::list_dto!(AccountList, AccountDto);

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

/// An account closure's payload: any object, stored as sent (absent means `{}`).
// A named schema, not an inline object: openapi-python-client drops a `oneOf` case whose
// member is an inline object (scripts/generated-clients.sh checks it).
#[derive(Debug, Deserialize, JsonSchema, ApiComponent)]
#[schemars(crate = "apistos")]
pub struct ClosePayload(pub Map<String, Value>);

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
        payload: Option<ClosePayload>,
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
pub type CreatedEvent = http_edge::created::CreatedAt<AccountEventDto>;

/// The answer of an append or an open (`Location`: the account, on open).
pub fn created_event(recorded: Recorded, location: bool) -> CreatedEvent {
    let event = recorded.event;
    CreatedEvent {
        location: location.then(|| format!("/accounts/{}", event.aggregate_id)),
        sequence: event.sequence,
        replayed: recorded.replayed,
        body: AccountEventDto::from(event),
    }
}

/// Moves `amount_cents` from `from` to `to` in one step.
#[derive(Debug, Deserialize, JsonSchema, ApiComponent)]
#[schemars(crate = "apistos")]
pub struct TransferBody {
    #[schemars(regex(pattern = ACCOUNT_ID_PATTERN))]
    pub from: String,
    /// Another account than `from`.
    #[schemars(regex(pattern = ACCOUNT_ID_PATTERN))]
    pub to: String,
    #[schemars(range(min = 1, max = ledger::AMOUNT_MAX))]
    pub amount_cents: i64,
}

/// A transfer and its two events, each naming the transfer and the other account in its
/// payload (`transfer_id`, `counterparty`).
#[derive(Debug, Serialize, JsonSchema, ApiComponent)]
#[schemars(crate = "apistos")]
pub struct TransferDto {
    pub transfer_id: String,
    pub from: String,
    pub to: String,
    pub amount_cents: i64,
    pub withdrawn: AccountEventDto,
    pub deposited: AccountEventDto,
}

impl From<ledger::service::Transferred> for TransferDto {
    fn from(t: ledger::service::Transferred) -> Self {
        TransferDto {
            transfer_id: t.transfer_id,
            from: t.from,
            to: t.to,
            amount_cents: t.amount_cents,
            withdrawn: t.withdrawn.into(),
            deposited: t.deposited.into(),
        }
    }
}

// A transfer is read through its two accounts' events: no address of its own.
impl http_edge::idempotent::Addressable for TransferDto {
    fn id_segment(&self) -> Option<String> {
        None
    }
}

/// Where an account's stream starts: after `after_sequence` (default 0); a reconnect's
/// `Last-Event-ID` takes its place.
#[derive(Debug, Deserialize, JsonSchema, ApiComponent)]
#[schemars(crate = "apistos")]
pub struct StreamQuery {
    /// Only events with a greater sequence.
    #[schemars(range(min = 0))]
    pub after_sequence: Option<i64>,
}

/// Where the feed of every account starts: after `after` (a position the feed sent as an
/// event's `id`; default the beginning); a reconnect's `Last-Event-ID` takes its place.
#[derive(Debug, Deserialize, JsonSchema, ApiComponent)]
#[schemars(crate = "apistos")]
pub struct FeedQuery {
    #[schemars(regex(pattern = r"^[0-9]{1,19}-[0-9]{1,19}$"))]
    pub after: Option<String>,
}

/// Events as a stream sends them: each `id` where a reconnect resumes (`C`, a sequence or a
/// feed position), each `data` the event as `GET /accounts/{id}/events` lists it.
pub fn frames<C: ToString>(batch: Vec<(C, Event)>) -> Vec<(C, http_edge::sse::Frame)> {
    let frame = |(at, event): (C, Event)| (frame(&at, event), at);
    batch
        .into_iter()
        .map(frame)
        .map(|(f, at)| (at, f))
        .collect()
}

/// One event as a stream sends it, `at` its position in that stream.
pub fn frame(at: &impl ToString, event: Event) -> http_edge::sse::Frame {
    let data = serde_json::to_string(&AccountEventDto::from(event)).unwrap_or_default();
    http_edge::sse::Frame {
        id: at.to_string(),
        data,
    }
}
