//! The two commands, validated from their JSON bodies: opening an account, appending an event.

use problem_details::{FieldError, FieldErrorCode, Fields};
use serde_json::{Map, Value};

use crate::Error;

use super::*;

/// A valid `POST /accounts` body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenAccount {
    pub(crate) account_id: String,
    pub(crate) owner: String,
    /// The user the account belongs to (`None`: no user; only the operator may use it where
    /// authentication is on). Not the `owner` text, which is the event's payload as sent.
    pub(crate) owner_id: Option<i64>,
}

impl OpenAccount {
    pub fn from_json(obj: &Map<String, Value>) -> Result<Self, Error> {
        let mut f = Fields::new(obj);
        let account_id = f.text("account_id", ACCOUNT_ID_MAX);
        if let Some(id) = &account_id
            && !is_valid_account_id(id)
        {
            f.push(FieldError::new(
                "account_id",
                FieldErrorCode::Invalid,
                "account_id must be 1 to 64 characters of A-Z, a-z, 0-9, '.', '_' and '-'",
            ));
        }
        let owner = f.text("owner", OWNER_MAX);
        f.finish().map_err(Error::Validation)?;
        match (account_id, owner) {
            (Some(account_id), Some(owner)) => Ok(OpenAccount {
                account_id,
                owner,
                owner_id: None,
            }),
            _ => Err(Error::Validation(Vec::new())),
        }
    }

    /// The account, belonging to `user` (the user whose token opens it).
    pub fn owned_by(self, user: Option<i64>) -> Self {
        OpenAccount {
            owner_id: user,
            ..self
        }
    }

    pub fn new(account_id: &str, owner: &str) -> Result<Self, Error> {
        let mut obj = Map::new();
        obj.insert("account_id".into(), account_id.into());
        obj.insert("owner".into(), owner.into());
        OpenAccount::from_json(&obj)
    }

    pub fn account_id(&self) -> &str {
        &self.account_id
    }

    pub fn owner(&self) -> &str {
        &self.owner
    }
}

/// A valid `POST /accounts/{id}/events` body.
#[derive(Debug, Clone, PartialEq)]
pub struct AppendEvent {
    pub(crate) change: Change,
    /// Stored as sent (an object).
    pub(crate) payload: Map<String, Value>,
    pub(crate) expected_sequence: Option<i64>,
}

impl AppendEvent {
    /// The same append, conditional on the account being at `sequence` (how `If-Match` on the
    /// append route is carried out).
    pub fn expecting(mut self, sequence: i64) -> Self {
        self.expected_sequence = Some(sequence);
        self
    }

    pub fn from_json(obj: &Map<String, Value>) -> Result<Self, Error> {
        let mut f = Fields::new(obj);
        let event_type = match obj.get("event_type") {
            None | Some(Value::Null) => {
                f.push(FieldError::new(
                    "event_type",
                    FieldErrorCode::Required,
                    "event_type is required",
                ));
                None
            }
            Some(Value::String(s)) => match EventType::parse(s) {
                Some(EventType::AccountOpened) => {
                    f.push(FieldError::new(
                        "event_type",
                        FieldErrorCode::Invalid,
                        "AccountOpened is recorded by POST /accounts and cannot be appended",
                    ));
                    None
                }
                Some(t) => Some(t),
                None => {
                    f.push(FieldError::new(
                        "event_type",
                        FieldErrorCode::Invalid,
                        "event_type must be one of MoneyDeposited, MoneyWithdrawn, AccountClosed",
                    ));
                    None
                }
            },
            Some(_) => {
                f.push(FieldError::new(
                    "event_type",
                    FieldErrorCode::InvalidType,
                    "event_type must be a string",
                ));
                None
            }
        };
        let payload = match obj.get("payload") {
            None | Some(Value::Null) => Some(Map::new()),
            Some(Value::Object(p)) if encoded_len(p) > PAYLOAD_MAX_BYTES => {
                f.push(FieldError::new(
                    "payload",
                    FieldErrorCode::TooLong,
                    format!("payload must serialize to at most {PAYLOAD_MAX_BYTES} bytes of JSON"),
                ));
                None
            }
            Some(Value::Object(p)) => Some(p.clone()),
            Some(_) => {
                f.push(FieldError::new(
                    "payload",
                    FieldErrorCode::InvalidType,
                    "payload must be an object",
                ));
                None
            }
        };
        let amount = match (event_type, &payload) {
            (Some(EventType::MoneyDeposited | EventType::MoneyWithdrawn), Some(p)) => {
                let mut inner = Fields::new(p);
                let amount = inner.integer("amount_cents", 1..=AMOUNT_MAX);
                if let Err(errors) = inner.finish() {
                    for mut e in errors {
                        e.field = format!("payload.{}", e.field);
                        e.message = format!("payload.{}", e.message);
                        f.push(e);
                    }
                }
                amount
            }
            _ => None,
        };
        let expected_sequence = match obj.get("expected_sequence") {
            None | Some(Value::Null) => None,
            Some(_) => f.integer("expected_sequence", 0..=i64::MAX),
        };
        f.finish().map_err(Error::Validation)?;
        let change = match (event_type, amount) {
            (Some(EventType::MoneyDeposited), Some(amount_cents)) => {
                Change::Deposited { amount_cents }
            }
            (Some(EventType::MoneyWithdrawn), Some(amount_cents)) => {
                Change::Withdrawn { amount_cents }
            }
            (Some(EventType::AccountClosed), _) => Change::Closed,
            _ => return Err(Error::Validation(Vec::new())),
        };
        Ok(AppendEvent {
            change,
            payload: payload.unwrap_or_default(),
            expected_sequence,
        })
    }

    /// A command without the JSON round trip (tests, tools).
    pub fn new(change: Change, expected_sequence: Option<i64>) -> Self {
        let mut payload = Map::new();
        match &change {
            Change::Deposited { amount_cents } | Change::Withdrawn { amount_cents } => {
                payload.insert("amount_cents".into(), (*amount_cents).into());
            }
            Change::Opened { owner } => {
                payload.insert("owner".into(), owner.clone().into());
            }
            Change::Closed => {}
        }
        AppendEvent {
            change,
            payload,
            expected_sequence,
        }
    }

    pub fn change(&self) -> &Change {
        &self.change
    }

    pub fn expected_sequence(&self) -> Option<i64> {
        self.expected_sequence
    }
}

/// A precondition on the account an append writes to: the sequence the client last saw (HTTP
/// `If-Match: "N"`, the account's ETag). It is the append's `expected_sequence`, except that
/// its failure is the precondition failing (nothing written) rather than a conflict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Precondition(Option<i64>);

/// The precondition does not hold; nothing was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PreconditionFailed;

impl Precondition {
    /// `None`: no precondition.
    pub fn new(sequence: Option<i64>) -> Self {
        Precondition(sequence)
    }

    /// `command` under this precondition: a command that names another `expected_sequence`
    /// can never hold.
    pub fn apply(self, command: AppendEvent) -> Result<AppendEvent, PreconditionFailed> {
        match self.0 {
            None => Ok(command),
            Some(n) if command.expected_sequence().is_some_and(|m| m != n) => {
                Err(PreconditionFailed)
            }
            Some(n) => Ok(command.expecting(n)),
        }
    }

    /// What an append made under this precondition answers: with one, a sequence mismatch is
    /// the precondition failing.
    pub fn judge<T>(
        self,
        result: Result<T, Error>,
    ) -> Result<Result<T, Error>, PreconditionFailed> {
        match result {
            Err(Error::SequenceMismatch { .. }) if self.0.is_some() => Err(PreconditionFailed),
            other => Ok(other),
        }
    }
}

#[cfg(test)]
mod precondition_tests {
    use super::*;

    fn append(expected: Option<i64>) -> AppendEvent {
        let mut body =
            serde_json::json!({"event_type": "MoneyDeposited", "payload": {"amount_cents": 5}});
        if let Some(n) = expected {
            body["expected_sequence"] = n.into();
        }
        AppendEvent::from_json(body.as_object().unwrap()).unwrap()
    }

    #[test]
    fn a_precondition_is_the_expected_sequence_and_fails_as_itself() {
        let none = Precondition::new(None);
        assert_eq!(none.apply(append(Some(3))), Ok(append(Some(3))));
        let at_2 = Precondition::new(Some(2));
        assert_eq!(at_2.apply(append(None)), Ok(append(Some(2))));
        assert_eq!(at_2.apply(append(Some(2))), Ok(append(Some(2))));
        assert_eq!(at_2.apply(append(Some(3))), Err(PreconditionFailed));
        let mismatch = || {
            Err::<(), _>(Error::SequenceMismatch {
                expected: 2,
                actual: 4,
            })
        };
        assert!(matches!(at_2.judge(mismatch()), Err(PreconditionFailed)));
        assert!(matches!(
            none.judge(mismatch()),
            Ok(Err(Error::SequenceMismatch { .. }))
        ));
        assert!(matches!(at_2.judge(Ok::<_, Error>(7)), Ok(Ok(7))));
    }
}
