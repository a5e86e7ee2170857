use problem_details::{FieldError, FieldErrorCode};
use serde_json::Value;
use webhook_verify::Verifier;

use crate::Error;

/// A stored webhook event (spec 2.11). `payload` is the raw request body text, byte for byte.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "db", derive(diesel::Queryable, diesel::Selectable))]
#[cfg_attr(feature = "db", diesel(table_name = crate::schema::webhook_events))]
pub struct WebhookEvent {
    pub id: i64,
    pub event_type: String,
    pub payload: String,
    /// When the delivery was first received: RFC 3339, UTC, second precision.
    pub delivered_at: String,
}

impl WebhookEvent {
    /// About what an event whose payload and event type take `text_bytes` takes in a list
    /// response (the id, the timestamp and the member names are the fixed part).
    pub const fn listed_len(text_bytes: usize) -> usize {
        text_bytes.saturating_add(96)
    }
}

/// A delivery whose signature verified and whose body is acceptable: what gets stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivery {
    pub(crate) event_type: String,
    pub(crate) payload: String,
    /// The header's `t` digits exactly as sent (what the signed string starts with).
    pub(crate) signature_t: String,
    /// The header's `v1`; with `t` it identifies an exact replay.
    pub(crate) signature_v1: String,
}

impl Delivery {
    pub fn event_type(&self) -> &str {
        &self.event_type
    }

    pub fn payload(&self) -> &str {
        &self.payload
    }
}

/// The outcome of storing a delivery.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Recorded {
    /// The stored event's id; for a replay, the id of the original delivery.
    pub id: i64,
    /// True when the same `t`, `v1` and body had already been stored (nothing was written).
    pub replayed: bool,
}

/// Spec 4.6 steps 2 and 3: verify the signature over the raw bytes, and only then read the
/// body. Holds the verifier (`None` when no secret is configured: every delivery is refused).
#[derive(Debug, Clone)]
pub struct Intake {
    verifier: Option<Verifier>,
    clock: Clock,
}

/// The time a delivery's freshness is checked against: the system's, or a fixed one (the
/// shared test vectors carry their own time).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Clock {
    #[default]
    System,
    /// Unix seconds.
    Fixed(i64),
}

impl Clock {
    /// Unix seconds now, by this clock.
    pub fn now(self) -> i64 {
        match self {
            Clock::Fixed(now) => now,
            Clock::System => std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX)),
        }
    }
}

/// Which configured secret is unusable (empty or whitespace only).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BadSecret {
    Current,
    Previous,
}

impl Intake {
    pub fn new(verifier: Option<Verifier>) -> Self {
        Intake {
            verifier,
            clock: Clock::System,
        }
    }

    /// The intake of a service configured with `current` (none: every delivery is refused)
    /// and, while it is being rotated out, `previous`.
    pub fn from_secrets(
        current: Option<&[u8]>,
        previous: Option<&[u8]>,
    ) -> Result<Self, BadSecret> {
        let Some(current) = current else {
            return Ok(Intake::new(None));
        };
        let intake = Intake::with_secret(current).map_err(|_| BadSecret::Current)?;
        match previous {
            None => Ok(intake),
            Some(previous) => intake
                .and_previous(previous)
                .map_err(|_| BadSecret::Previous),
        }
    }

    /// Checks freshness against `clock` instead of the system's.
    pub fn with_clock(self, clock: Clock) -> Self {
        Intake { clock, ..self }
    }

    /// Deliveries signed with `secret` are accepted (byte for byte, never trimmed); an empty
    /// or whitespace-only secret is refused.
    pub fn with_secret(secret: &[u8]) -> Result<Self, Error> {
        Ok(Intake::new(Some(Verifier::new(secret)?)))
    }

    /// Also accepts deliveries signed with `secret`, the one being rotated out. Refused like
    /// [`Intake::with_secret`]; without a current secret it changes nothing.
    pub fn and_previous(self, secret: &[u8]) -> Result<Self, Error> {
        Ok(Intake {
            verifier: match self.verifier {
                Some(v) => Some(v.with_previous(secret)?),
                None => None,
            },
            clock: self.clock,
        })
    }

    /// False when no secret is configured.
    pub fn is_configured(&self) -> bool {
        self.verifier.is_some()
    }

    /// Checks one delivery now, by the intake's clock (see [`Intake::accept`]).
    pub fn accept_now(&self, signature_headers: &[&[u8]], body: &[u8]) -> Result<Delivery, Error> {
        self.accept(signature_headers, body, self.clock.now())
    }

    /// Checks one delivery.
    ///
    /// `signature_headers` are the raw values of every `X-Webhook-Signature` field of the
    /// request: none is a missing header; more than one, or one that is not UTF-8, is a
    /// malformed header. `now` is the current unix time in seconds.
    ///
    /// Order: secret configured → signature (header present, well formed, fresh, matching) →
    /// body (UTF-8 JSON object with a string `event_type`). A bad signature is therefore
    /// reported even when the body is bad too.
    pub fn accept(
        &self,
        signature_headers: &[&[u8]],
        body: &[u8],
        now: i64,
    ) -> Result<Delivery, Error> {
        let verifier = self
            .verifier
            .as_ref()
            .ok_or(webhook_verify::Error::SecretNotConfigured)?;
        let header = match signature_headers {
            [] => None,
            [one] => {
                Some(std::str::from_utf8(one).map_err(|_| webhook_verify::Error::MalformedHeader)?)
            }
            _ => return Err(webhook_verify::Error::MalformedHeader.into()),
        };
        let verified = verifier.verify(header, body, now)?;
        let (event_type, payload) = parse_body(body)?;
        Ok(Delivery {
            event_type,
            payload,
            signature_t: verified.timestamp_text,
            signature_v1: verified.signature,
        })
    }
}

const NOT_UTF8: &str = "The webhook body must be UTF-8 encoded JSON.";
const NOT_JSON: &str = "The webhook body must be valid JSON.";
const NOT_OBJECT: &str = "The webhook body must be a JSON object.";
const NO_EVENT_TYPE: &str = "The webhook body must have an event_type member that is a string.";

/// Reads a (verified) body: it must be UTF-8 JSON, an object, with a string `event_type`.
/// Returns `(event_type, raw body text)`.
pub fn parse_body(body: &[u8]) -> Result<(String, String), Error> {
    let text = std::str::from_utf8(body).map_err(|_| Error::InvalidBody { reason: NOT_UTF8 })?;
    let value: Value =
        serde_json::from_str(text).map_err(|_| Error::InvalidBody { reason: NOT_JSON })?;
    let Value::Object(mut object) = value else {
        return Err(Error::InvalidBody { reason: NOT_OBJECT });
    };
    let Some(Value::String(event_type)) = object.remove("event_type") else {
        return Err(Error::InvalidBody {
            reason: NO_EVENT_TYPE,
        });
    };
    if event_type.contains('\0') {
        return Err(Error::Validation(vec![FieldError::new(
            "event_type",
            FieldErrorCode::Invalid,
            "event_type must not contain U+0000 (NUL)",
        )]));
    }
    Ok((event_type, text.to_owned()))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use webhook_verify::header;

    const SECRET: &[u8] = b"whsec_unit";
    const NOW: i64 = 1_700_000_000;

    fn intake() -> Intake {
        Intake::new(Some(Verifier::new(SECRET).unwrap()))
    }

    fn reason(body: &[u8]) -> String {
        match parse_body(body) {
            Err(Error::InvalidBody { reason }) => reason.to_owned(),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn accepts_an_object_with_a_string_event_type() {
        let body = br#"{"event_type":"note.created","x":[1,2]}"#;
        let d = intake()
            .accept(&[header(SECRET, NOW, body).as_bytes()], body, NOW)
            .unwrap();
        assert_eq!(d.event_type(), "note.created");
        assert_eq!(d.payload().as_bytes(), body);
        assert_eq!(d.signature_t, NOW.to_string());
        assert_eq!(d.signature_v1, webhook_verify::sign(SECRET, NOW, body));
    }

    #[test]
    fn body_rules() {
        assert_eq!(reason(b"\xff\xfe"), NOT_UTF8);
        assert_eq!(reason(b""), NOT_JSON);
        assert_eq!(reason(b"{"), NOT_JSON);
        assert_eq!(reason(b"[]"), NOT_OBJECT);
        assert_eq!(reason(b"\"event_type\""), NOT_OBJECT);
        assert_eq!(reason(b"null"), NOT_OBJECT);
        assert_eq!(reason(b"{}"), NO_EVENT_TYPE);
        assert_eq!(reason(br#"{"event_type":null}"#), NO_EVENT_TYPE);
        assert_eq!(reason(br#"{"event_type":1}"#), NO_EVENT_TYPE);
        assert_eq!(reason(br#"{"event_type":["a"]}"#), NO_EVENT_TYPE);
        assert_eq!(reason(br#"{"Event_Type":"a"}"#), NO_EVENT_TYPE);
        assert!(matches!(
            parse_body(br#"{"event_type":"a\u0000b"}"#),
            Err(Error::Validation(_))
        ));
        let (t, raw) = parse_body(b" {\"event_type\":\"\"}\r\n").unwrap();
        assert_eq!(t, "");
        assert_eq!(raw, " {\"event_type\":\"\"}\r\n");
    }

    #[test]
    fn signature_is_checked_before_the_body() {
        let body = b"not json";
        let err = intake()
            .accept(&[b"t=1,v1=00".as_slice()], body, NOW)
            .unwrap_err();
        assert!(matches!(
            err,
            Error::Signature(webhook_verify::Error::TimestampOutOfTolerance { .. })
        ));
        let err = intake()
            .accept(&[header(SECRET, NOW, body).as_bytes()], body, NOW)
            .unwrap_err();
        assert!(matches!(err, Error::InvalidBody { .. }));
    }

    #[test]
    fn header_presence_and_encoding() {
        let body = br#"{"event_type":"a"}"#;
        let good = header(SECRET, NOW, body);
        let err = |headers: &[&[u8]]| match intake().accept(headers, body, NOW) {
            Err(Error::Signature(e)) => e,
            other => panic!("{other:?}"),
        };
        assert_eq!(err(&[]), webhook_verify::Error::MissingHeader);
        assert_eq!(
            err(&[good.as_bytes(), good.as_bytes()]),
            webhook_verify::Error::MalformedHeader
        );
        assert_eq!(
            err(&[b"t=1700000000,v1=\xff".as_slice()]),
            webhook_verify::Error::MalformedHeader
        );
    }

    #[test]
    fn no_secret_refuses_everything() {
        let body = br#"{"event_type":"a"}"#;
        let none = Intake::new(None);
        assert!(!none.is_configured());
        let err = none
            .accept(&[header(SECRET, NOW, body).as_bytes()], body, NOW)
            .unwrap_err();
        assert!(matches!(
            err,
            Error::Signature(webhook_verify::Error::SecretNotConfigured)
        ));
    }
}
