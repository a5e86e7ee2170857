//! A transfer: money moved from one account to another in one step, as two events (a
//! `MoneyWithdrawn` on `from`, a `MoneyDeposited` on `to`) that are written together or not
//! at all. Both payloads name the transfer and the other account.

use problem_details::{FieldError, FieldErrorCode, Fields};
use serde_json::{Map, Value, json};

use super::{ACCOUNT_ID_MAX, AMOUNT_MAX, AppendEvent, is_valid_account_id};
use crate::Error;

/// A valid `POST /transfers` body.
#[derive(Debug, Clone, PartialEq)]
pub struct Transfer {
    pub(crate) from: String,
    pub(crate) to: String,
    pub(crate) amount_cents: i64,
}

impl Transfer {
    /// Every invalid field at once: `from` and `to` account ids, different from each other;
    /// `amount_cents` 1 ..= [`AMOUNT_MAX`].
    pub fn from_json(obj: &Map<String, Value>) -> Result<Self, Error> {
        let mut f = Fields::new(obj);
        let id = |f: &mut Fields, name: &'static str| {
            let id = f.text(name, ACCOUNT_ID_MAX);
            if let Some(id) = &id
                && !is_valid_account_id(id)
            {
                f.push(FieldError::new(
                    name,
                    FieldErrorCode::Invalid,
                    format!("{name} must be an account id: 1 to 64 characters of A-Z, a-z, 0-9, '.', '_' and '-'"),
                ));
            }
            id
        };
        let from = id(&mut f, "from");
        let to = id(&mut f, "to");
        let amount_cents = match obj.get("amount_cents") {
            None | Some(Value::Null) => {
                f.push(FieldError::new(
                    "amount_cents",
                    FieldErrorCode::Required,
                    "amount_cents is required",
                ));
                None
            }
            Some(v) => match v.as_i64().filter(|n| (1..=AMOUNT_MAX).contains(n)) {
                Some(n) => Some(n),
                None => {
                    f.push(FieldError::new(
                        "amount_cents",
                        FieldErrorCode::Invalid,
                        format!("amount_cents must be a whole number from 1 to {AMOUNT_MAX}"),
                    ));
                    None
                }
            },
        };
        if let (Some(from), Some(to)) = (&from, &to)
            && from == to
        {
            f.push(FieldError::new(
                "to",
                FieldErrorCode::Invalid,
                "to must be another account than from",
            ));
        }
        f.finish().map_err(Error::Validation)?;
        match (from, to, amount_cents) {
            (Some(from), Some(to), Some(amount_cents)) => Ok(Transfer {
                from,
                to,
                amount_cents,
            }),
            _ => Err(Error::Validation(Vec::new())),
        }
    }

    pub fn from(&self) -> &str {
        &self.from
    }

    pub fn to(&self) -> &str {
        &self.to
    }

    pub fn amount_cents(&self) -> i64 {
        self.amount_cents
    }

    /// The two appends that carry the transfer `transfer_id` out: the withdrawal from `from`,
    /// then the deposit to `to`.
    pub fn legs(&self, transfer_id: &str) -> Result<[(&str, AppendEvent); 2], Error> {
        let leg = |event_type: &str, counterparty: &str| {
            let body = json!({
                "event_type": event_type,
                "payload": {
                    "amount_cents": self.amount_cents,
                    "transfer_id": transfer_id,
                    "counterparty": counterparty,
                },
            });
            match body {
                Value::Object(obj) => AppendEvent::from_json(&obj),
                _ => unreachable!("a JSON object literal"),
            }
        };
        Ok([
            (self.from.as_str(), leg("MoneyWithdrawn", &self.to)?),
            (self.to.as_str(), leg("MoneyDeposited", &self.from)?),
        ])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(v: Value) -> Result<Transfer, Error> {
        Transfer::from_json(v.as_object().unwrap())
    }

    #[test]
    fn every_bad_field_is_reported_at_once() {
        let Err(Error::Validation(errors)) = parse(json!({"from": "a b", "amount_cents": 0}))
        else {
            panic!("refused")
        };
        let fields: Vec<&str> = errors.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(fields, ["from", "to", "amount_cents"]);
        let Err(Error::Validation(errors)) =
            parse(json!({"from": "a", "to": "a", "amount_cents": 5}))
        else {
            panic!("refused")
        };
        assert_eq!(errors[0].field, "to");
        assert!(parse(json!({"from": "a", "to": "b", "amount_cents": AMOUNT_MAX + 1})).is_err());
        assert!(parse(json!({"from": "a", "to": "b", "amount_cents": 1.5})).is_err());
    }

    #[test]
    fn the_legs_name_the_transfer_and_each_other() {
        let t = parse(json!({"from": "a", "to": "b", "amount_cents": 250})).unwrap();
        let [(from, out), (to, into)] = t.legs("tr_1").unwrap();
        assert_eq!((from, to), ("a", "b"));
        assert_eq!(out.payload["counterparty"], "b");
        assert_eq!(into.payload["counterparty"], "a");
        assert_eq!(out.payload["transfer_id"], "tr_1");
        assert_eq!(into.payload["amount_cents"], 250);
        assert_eq!(out.change.event_type().as_str(), "MoneyWithdrawn");
    }
}
