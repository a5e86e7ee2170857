//! The ledger's types, and (in [`commands`]) the validated inputs built
//! from JSON objects.

mod commands;
mod position;
mod transfer;

pub use commands::{AppendEvent, OpenAccount, Precondition, PreconditionFailed};
/// The ledger's keys are the shared `Idempotency-Key` type (crates/idempotency), held by the
/// caller that sent them.
pub use idempotency::{CallerKey, Key as IdempotencyKey};
pub use position::FeedPosition;
pub use transfer::Transfer;

use serde_json::value::RawValue;
use serde_json::{Map, Value};

pub const ACCOUNT_ID_MAX: usize = 64;
pub const OWNER_MAX: usize = 200;
/// Deposits and withdrawals move 1 ..= 10^12 cents.
pub const AMOUNT_MAX: i64 = 1_000_000_000_000;
/// Default and maximum `limit` of an event list.
pub const EVENTS_LIMIT_MAX: i64 = 1_000;
/// An event's `payload`, serialized, is at most this long. The event needs a few bytes
/// (`amount_cents`); the rest is the caller's own annotations, stored and served back with
/// every page, so unbounded extras let one 109-byte GET answer 208 MB.
pub const PAYLOAD_MAX_BYTES: usize = 4_096;
/// A page of events stops before its items pass this many bytes (at least one item is always
/// served); `has_more` and `next_cursor` lead to the rest.
pub const EVENTS_PAGE_MAX_BYTES: usize = 1_048_576;
/// `aggregate_type` of every event.
pub const AGGREGATE_TYPE: &str = "account";
/// Idempotency keys: 1 ..= 255 visible ASCII characters.
pub const IDEMPOTENCY_KEY_MAX: usize = idempotency::KEY_MAX;

/// The four event types (exact spelling of section 6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EventType {
    AccountOpened,
    MoneyDeposited,
    MoneyWithdrawn,
    AccountClosed,
}

impl EventType {
    pub const ALL: [EventType; 4] = [
        EventType::AccountOpened,
        EventType::MoneyDeposited,
        EventType::MoneyWithdrawn,
        EventType::AccountClosed,
    ];

    /// The types a client may append through the event route (not `AccountOpened`).
    pub const APPENDABLE: [EventType; 3] = [
        EventType::MoneyDeposited,
        EventType::MoneyWithdrawn,
        EventType::AccountClosed,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            EventType::AccountOpened => "AccountOpened",
            EventType::MoneyDeposited => "MoneyDeposited",
            EventType::MoneyWithdrawn => "MoneyWithdrawn",
            EventType::AccountClosed => "AccountClosed",
        }
    }

    pub fn parse(s: &str) -> Option<EventType> {
        EventType::ALL.into_iter().find(|t| t.as_str() == s)
    }
}

/// True when `id` is 1–64 characters of `[A-Za-z0-9._-]`.
pub fn is_valid_account_id(id: &str) -> bool {
    (1..=ACCOUNT_ID_MAX).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// What an event does to an account, as the fold sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    Opened { owner: String },
    Deposited { amount_cents: i64 },
    Withdrawn { amount_cents: i64 },
    Closed,
}

impl Change {
    pub fn event_type(&self) -> EventType {
        match self {
            Change::Opened { .. } => EventType::AccountOpened,
            Change::Deposited { .. } => EventType::MoneyDeposited,
            Change::Withdrawn { .. } => EventType::MoneyWithdrawn,
            Change::Closed => EventType::AccountClosed,
        }
    }

    /// Reads a stored event back (replay). An error names what is wrong with it.
    pub fn from_stored(event_type: &str, payload: &Value) -> Result<Change, String> {
        let ty = EventType::parse(event_type)
            .ok_or_else(|| format!("unknown event type {event_type:?}"))?;
        let obj = payload
            .as_object()
            .ok_or_else(|| "payload is not an object".to_owned())?;
        let amount = || {
            obj.get("amount_cents")
                .and_then(Value::as_i64)
                .filter(|a| (1..=AMOUNT_MAX).contains(a))
                .ok_or_else(|| format!("{event_type} without a valid amount_cents"))
        };
        Ok(match ty {
            EventType::AccountOpened => Change::Opened {
                owner: obj
                    .get("owner")
                    .and_then(Value::as_str)
                    .ok_or_else(|| "AccountOpened without an owner".to_owned())?
                    .to_owned(),
            },
            EventType::MoneyDeposited => Change::Deposited {
                amount_cents: amount()?,
            },
            EventType::MoneyWithdrawn => Change::Withdrawn {
                amount_cents: amount()?,
            },
            EventType::AccountClosed => Change::Closed,
        })
    }
}

/// One applied event, as the fold sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fact {
    pub sequence: i64,
    pub occurred_at: String,
    pub change: Change,
}

/// The length of `payload` as compact JSON, counted as it is written rather than written into a
/// buffer: a page of events measures every event it serves.
pub fn encoded_len(payload: &Map<String, Value>) -> usize {
    struct Counter(usize);
    impl std::io::Write for Counter {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut counter = Counter(0);
    serde_json::to_writer(&mut counter, payload).map_or(usize::MAX, |()| counter.0)
}

/// A stored event.
///
/// `payload` stays the JSON text it was stored as (an object: [`Event::from_stored`] checks), so a
/// page of events is served without parsing and re-serializing every payload; the fold parses it
/// when it needs the change ([`Event::fact`]).
#[derive(Debug, Clone)]
pub struct Event {
    pub id: i64,
    pub aggregate_id: String,
    pub event_type: String,
    pub payload: Box<RawValue>,
    pub sequence: i64,
    pub occurred_at: String,
}

impl PartialEq for Event {
    fn eq(&self, other: &Event) -> bool {
        self.id == other.id
            && self.aggregate_id == other.aggregate_id
            && self.event_type == other.event_type
            && self.payload.get() == other.payload.get()
            && self.sequence == other.sequence
            && self.occurred_at == other.occurred_at
    }
}

impl Event {
    /// The stored columns as an event; `Err` says why they cannot be one (the payload is not a
    /// JSON object).
    pub fn from_stored(
        id: i64,
        aggregate_id: String,
        event_type: String,
        payload: String,
        sequence: i64,
        occurred_at: String,
    ) -> Result<Event, String> {
        let payload = RawValue::from_string(payload)
            .ok()
            .filter(|raw| raw.get().starts_with('{'))
            .ok_or_else(|| "payload is not a JSON object".to_owned())?;
        Ok(Event {
            id,
            aggregate_id,
            event_type,
            payload,
            sequence,
            occurred_at,
        })
    }

    /// Always [`AGGREGATE_TYPE`] (the tables' CHECK constraint): not read back from each row.
    pub fn aggregate_type(&self) -> &'static str {
        AGGREGATE_TYPE
    }

    /// About what the event takes in a response: its payload and text members, plus a fixed
    /// allowance for the member names and numbers.
    pub fn encoded_len(&self) -> usize {
        self.payload.get().len()
            + self.aggregate_id.len()
            + AGGREGATE_TYPE.len()
            + self.event_type.len()
            + self.occurred_at.len()
            + 128
    }

    /// The event as the fold reads it.
    pub fn fact(&self) -> Result<Fact, String> {
        let payload: Value = serde_json::from_str(self.payload.get())
            .map_err(|e| format!("payload is not JSON: {e}"))?;
        Ok(Fact {
            sequence: self.sequence,
            occurred_at: self.occurred_at.clone(),
            change: Change::from_stored(&self.event_type, &payload)?,
        })
    }
}

/// The current state of an account: what the projection stores and the fold computes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AccountState {
    pub owner: String,
    pub balance_cents: i64,
    pub is_open: bool,
    pub last_sequence: i64,
    /// `occurred_at` of the last applied event.
    pub updated_at: String,
}

/// A projection row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Account {
    pub account_id: String,
    pub state: AccountState,
    /// The user that opened it (`None`: the operator, authentication off, or older). Not part
    /// of the fold: who may see the account, not what its events say.
    pub owner_id: Option<i64>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use problem_details::testing::{field_codes as fields, object as obj};
    use serde_json::json;

    fn stored(payload: &str) -> Result<Event, String> {
        Event::from_stored(
            7,
            "acc".into(),
            "MoneyDeposited".into(),
            payload.into(),
            3,
            "2026-01-01 00:00:00".into(),
        )
    }

    #[test]
    fn stored_events_keep_their_payload_text_and_fold_from_it() {
        let event = stored(r#"{"amount_cents":5,"note":"x"}"#).unwrap();
        assert_eq!(event.payload.get(), r#"{"amount_cents":5,"note":"x"}"#);
        assert_eq!(event.aggregate_type(), AGGREGATE_TYPE);
        assert_eq!(
            event.encoded_len(),
            event.payload.get().len()
                + "acc".len()
                + "account".len()
                + "MoneyDeposited".len()
                + 19
                + 128
        );
        assert_eq!(
            event.fact().unwrap().change,
            Change::Deposited { amount_cents: 5 }
        );
    }

    #[test]
    fn a_stored_payload_that_is_not_a_json_object_is_refused() {
        for bad in ["[1]", "3", "\"s\"", "{\"a\":", "", "null"] {
            assert_eq!(
                stored(bad).unwrap_err(),
                "payload is not a JSON object",
                "{bad:?}"
            );
        }
        assert_eq!(stored(" {} ").unwrap().payload.get(), "{}");
    }

    #[test]
    fn account_ids() {
        assert!(is_valid_account_id("a"));
        assert!(is_valid_account_id("Acc_1.2-3"));
        assert!(is_valid_account_id(&"x".repeat(64)));
        assert!(!is_valid_account_id(&"x".repeat(65)));
        assert!(!is_valid_account_id(""));
        assert!(!is_valid_account_id("a b"));
        assert!(!is_valid_account_id("é"));
        assert!(!is_valid_account_id("a/b"));
    }

    #[test]
    fn open_reports_every_field() {
        let err = OpenAccount::from_json(&obj(json!({"account_id": "a b", "owner": " "})));
        assert_eq!(
            fields(err.unwrap_err()),
            vec![
                ("account_id".into(), "invalid"),
                ("owner".into(), "required")
            ]
        );
        let err = OpenAccount::from_json(&obj(json!({}))).unwrap_err();
        assert_eq!(fields(err).len(), 2);
        let ok = OpenAccount::from_json(&obj(json!({"account_id": "acc-1", "owner": " Ann "})));
        assert_eq!(ok.unwrap().owner(), " Ann ");
    }

    #[test]
    fn append_rules() {
        let e = AppendEvent::from_json(&obj(
            json!({"event_type": "MoneyDeposited", "payload": {"amount_cents": 5}}),
        ))
        .unwrap();
        assert_eq!(e.change, Change::Deposited { amount_cents: 5 });
        let err = AppendEvent::from_json(&obj(json!({"event_type": "AccountOpened"})));
        assert_eq!(
            fields(err.unwrap_err()),
            vec![("event_type".into(), "invalid")]
        );
        let err = AppendEvent::from_json(&obj(
            json!({"event_type": "MoneyWithdrawn", "payload": {"amount_cents": 0}}),
        ));
        assert_eq!(
            fields(err.unwrap_err()),
            vec![("payload.amount_cents".into(), "out_of_range")]
        );
        let err = AppendEvent::from_json(&obj(
            json!({"event_type": "Nope", "payload": 3, "expected_sequence": -1}),
        ));
        assert_eq!(
            fields(err.unwrap_err()),
            vec![
                ("event_type".into(), "invalid"),
                ("payload".into(), "invalid_type"),
                ("expected_sequence".into(), "out_of_range"),
            ]
        );
        let closed = AppendEvent::from_json(&obj(
            json!({"event_type": "AccountClosed", "payload": {"reason": [1]}, "expected_sequence": 3}),
        ))
        .unwrap();
        assert_eq!(closed.change, Change::Closed);
        assert_eq!(closed.expected_sequence, Some(3));
    }

    #[test]
    fn stored_changes_round_trip() {
        for change in [
            Change::Opened { owner: "o".into() },
            Change::Deposited { amount_cents: 7 },
            Change::Withdrawn { amount_cents: 3 },
            Change::Closed,
        ] {
            let cmd = AppendEvent::new(change.clone(), None);
            let read = Change::from_stored(
                change.event_type().as_str(),
                &Value::Object(cmd.payload.clone()),
            );
            assert_eq!(read.unwrap(), change);
        }
        assert!(Change::from_stored("X", &json!({})).is_err());
        assert!(Change::from_stored("MoneyDeposited", &json!({"amount_cents": -1})).is_err());
    }
}
