//! Event-sourced accounts (area E): an account is its events; its state is their fold.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::paging::query;
use crate::conditional::ETag;

/// An account's current state (schema `AccountDto`).
///
/// ```no_run
/// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
/// let account: client::Account = api.accounts().get("acc-1").await?;
/// println!("{} cents after {} events", account.balance_cents, account.last_sequence);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Account {
    pub account_id: String,
    pub owner: String,
    pub balance_cents: i64,
    pub is_open: bool,
    /// Sequence of the last applied event.
    pub last_sequence: i64,
}

impl Account {
    /// The entity tag the service gives this state (its last sequence), for
    /// [`Accounts::append_if_match`](crate::Accounts::append_if_match).
    ///
    /// ```
    /// let account = client::Account {
    ///     account_id: "a".into(), owner: "o".into(), balance_cents: 0, is_open: true, last_sequence: 3,
    /// };
    /// assert_eq!(account.etag().as_str(), "\"3\"");
    /// ```
    pub fn etag(&self) -> ETag {
        ETag::sequence(self.last_sequence)
    }
}

/// Opens an account (schema `OpenAccountBody`); an existing `account_id` is 409 `conflict`.
///
/// ```
/// let open = client::OpenAccount::new("acc-1", "Ann");
/// assert_eq!(open.account_id, "acc-1");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OpenAccount {
    /// 1 to 64 characters of `A-Z a-z 0-9 . _ -`.
    pub account_id: String,
    pub owner: String,
}

impl OpenAccount {
    /// Account `account_id`, owned by `owner`.
    ///
    /// ```
    /// let _ = client::OpenAccount::new("acc-2", "Bob");
    /// ```
    pub fn new(account_id: impl Into<String>, owner: impl Into<String>) -> Self {
        OpenAccount {
            account_id: account_id.into(),
            owner: owner.into(),
        }
    }
}

/// `aggregate_type` of an event: always `account`.
///
/// ```no_run
/// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
/// let event = api.accounts().open(&client::OpenAccount::new("a", "o")).await?;
/// assert_eq!(event.aggregate_type, client::AggregateType::Account);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AggregateType {
    Account,
}

/// What an event records.
///
/// ```no_run
/// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
/// let event = api.accounts().append("a", &client::NewEvent::deposit(500)).await?;
/// assert_eq!(event.event_type, client::EventType::MoneyDeposited);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum EventType {
    AccountOpened,
    MoneyDeposited,
    MoneyWithdrawn,
    AccountClosed,
}

/// A stored account event (schema `AccountEventDto`).
///
/// ```no_run
/// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
/// let event: client::AccountEvent = api.accounts().append("a", &client::NewEvent::withdraw(100)).await?;
/// println!("#{} at {}: {:?}", event.sequence, event.occurred_at, event.payload);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct AccountEvent {
    pub id: i64,
    /// The account id.
    pub aggregate_id: String,
    pub aggregate_type: AggregateType,
    pub event_type: EventType,
    /// `{owner}` for AccountOpened, `{amount_cents, …}` for deposits and withdrawals, any
    /// object for AccountClosed.
    pub payload: Map<String, Value>,
    /// Per-account counter starting at 1, without gaps.
    pub sequence: i64,
    /// UTC, `YYYY-MM-DD HH:MM:SS`.
    pub occurred_at: String,
}

/// One page of an account's events, sequence ascending (schema `AccountEventList`), checked:
/// `has_more` exactly when there is a `next_cursor`, sequences ascending.
///
/// ```no_run
/// # async fn run(api: client::Client) -> Result<(), client::ClientError> {
/// let page: client::AccountEventList = api.accounts().events("a", Default::default()).await?;
/// println!("{} of {} events, next after {:?}", page.items.len(), page.total, page.next_cursor);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(try_from = "RawEventList")]
pub struct AccountEventList {
    /// How many events the account has in all.
    pub total: i64,
    pub items: Vec<AccountEvent>,
    /// More events follow this page.
    pub has_more: bool,
    /// The `after_sequence` of the next page, when `has_more`.
    pub next_cursor: Option<i64>,
}

#[derive(Deserialize)]
struct RawEventList {
    total: i64,
    items: Vec<AccountEvent>,
    has_more: bool,
    #[serde(default)]
    next_cursor: Option<i64>,
}

impl TryFrom<RawEventList> for AccountEventList {
    type Error = String;
    fn try_from(raw: RawEventList) -> Result<Self, String> {
        if raw.has_more != raw.next_cursor.is_some() {
            return Err("has_more disagrees with next_cursor".to_owned());
        }
        if raw.items.windows(2).any(|w| w[0].sequence >= w[1].sequence) {
            return Err("events are not in ascending sequence".to_owned());
        }
        Ok(AccountEventList {
            total: raw.total,
            items: raw.items,
            has_more: raw.has_more,
            next_cursor: raw.next_cursor,
        })
    }
}

/// `after_sequence` and `limit` of an events page; `None` leaves the defaults (from the first
/// event; 1,000 events).
///
/// ```
/// let page = client::EventsRequest { after_sequence: Some(10), limit: Some(100) };
/// assert_eq!(page.after_sequence, Some(10));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct EventsRequest {
    /// Only events with a greater sequence.
    pub after_sequence: Option<i64>,
    /// 1 to 1,000.
    pub limit: Option<u32>,
}

impl EventsRequest {
    pub(crate) fn query(&self) -> Vec<(&'static str, String)> {
        query([
            ("after_sequence", self.after_sequence.map(i128::from)),
            ("limit", self.limit.map(i128::from)),
        ])
    }
}

/// `payload` of a deposit or withdrawal (schema `AmountPayload`); `extra` members (a memo, say)
/// are stored as sent.
///
/// ```
/// let payload = client::AmountPayload::new(250);
/// assert_eq!(serde_json::to_string(&payload).unwrap(), r#"{"amount_cents":250}"#);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AmountPayload {
    /// 1 to 10^12.
    pub amount_cents: i64,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl AmountPayload {
    /// Just the amount.
    ///
    /// ```
    /// assert_eq!(client::AmountPayload::new(1).amount_cents, 1);
    /// ```
    pub fn new(amount_cents: i64) -> Self {
        AmountPayload {
            amount_cents,
            extra: Map::new(),
        }
    }
}

/// An event to append (schema `AppendEventBody`). `expected_sequence`, when set, makes the
/// append conditional: any other last sequence is 409 `conflict` and nothing is written.
///
/// ```
/// let event = client::NewEvent::withdraw(100).expecting(4);
/// assert_eq!(
///     serde_json::to_value(&event).unwrap(),
///     serde_json::json!({"event_type": "MoneyWithdrawn", "payload": {"amount_cents": 100}, "expected_sequence": 4})
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "event_type")]
pub enum NewEvent {
    MoneyDeposited {
        payload: AmountPayload,
        #[serde(skip_serializing_if = "Option::is_none")]
        expected_sequence: Option<i64>,
    },
    MoneyWithdrawn {
        payload: AmountPayload,
        #[serde(skip_serializing_if = "Option::is_none")]
        expected_sequence: Option<i64>,
    },
    AccountClosed {
        /// Any object (absent means `{}`).
        #[serde(skip_serializing_if = "Option::is_none")]
        payload: Option<Map<String, Value>>,
        #[serde(skip_serializing_if = "Option::is_none")]
        expected_sequence: Option<i64>,
    },
}

impl NewEvent {
    /// A deposit of `amount_cents`.
    ///
    /// ```
    /// let _ = client::NewEvent::deposit(1_000);
    /// ```
    pub fn deposit(amount_cents: i64) -> Self {
        NewEvent::MoneyDeposited {
            payload: AmountPayload::new(amount_cents),
            expected_sequence: None,
        }
    }

    /// A withdrawal of `amount_cents` (above the balance: 422 `insufficient-funds`).
    ///
    /// ```
    /// let _ = client::NewEvent::withdraw(1_000);
    /// ```
    pub fn withdraw(amount_cents: i64) -> Self {
        NewEvent::MoneyWithdrawn {
            payload: AmountPayload::new(amount_cents),
            expected_sequence: None,
        }
    }

    /// Closing the account; every later append is 409 `account-closed`.
    ///
    /// ```
    /// let _ = client::NewEvent::close();
    /// ```
    pub fn close() -> Self {
        NewEvent::AccountClosed {
            payload: None,
            expected_sequence: None,
        }
    }

    /// Only if the account's last sequence is still `sequence` (optimistic concurrency).
    ///
    /// ```
    /// let _ = client::NewEvent::deposit(5).expecting(1);
    /// ```
    pub fn expecting(mut self, sequence: i64) -> Self {
        match &mut self {
            NewEvent::MoneyDeposited {
                expected_sequence, ..
            }
            | NewEvent::MoneyWithdrawn {
                expected_sequence, ..
            }
            | NewEvent::AccountClosed {
                expected_sequence, ..
            } => *expected_sequence = Some(sequence),
        }
        self
    }
}

/// A `POST /transfers` body: `amount_cents` from `from` to `to`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NewTransfer {
    pub from: String,
    pub to: String,
    pub amount_cents: i64,
}

impl NewTransfer {
    pub fn new(from: &str, to: &str, amount_cents: i64) -> Self {
        NewTransfer {
            from: from.to_owned(),
            to: to.to_owned(),
            amount_cents,
        }
    }
}

/// A transfer: its id and its two events (each payload names the transfer and the other
/// account).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Transfer {
    pub transfer_id: String,
    pub from: String,
    pub to: String,
    pub amount_cents: i64,
    pub withdrawn: AccountEvent,
    pub deposited: AccountEvent,
}
