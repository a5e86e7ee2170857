//! Endpoints and deliveries, and the validated inputs built from JSON objects.

use problem_details::{FieldError, FieldErrorCode, Fields};
use serde_json::{Map, Value};

/// The longest endpoint URL accepted.
pub const URL_MAX: usize = 2_048;
/// The account event types an endpoint may choose among.
pub const EVENT_TYPES: [&str; 4] = [
    "AccountOpened",
    "MoneyDeposited",
    "MoneyWithdrawn",
    "AccountClosed",
];

/// Which event types an endpoint receives: a non-empty subset of [`EVENT_TYPES`], stored as a
/// comma-separated list in their canonical order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventTypes(Vec<&'static str>);

impl EventTypes {
    pub fn all() -> EventTypes {
        EventTypes(EVENT_TYPES.to_vec())
    }

    pub fn contains(&self, event_type: &str) -> bool {
        self.0.contains(&event_type)
    }

    pub fn names(&self) -> &[&'static str] {
        &self.0
    }

    /// The stored form.
    pub fn stored(&self) -> String {
        self.0.join(",")
    }

    /// From the stored form (unknown names, which no write makes, are left out).
    pub fn from_stored(text: &str) -> EventTypes {
        EventTypes(
            EVENT_TYPES
                .into_iter()
                .filter(|t| text.split(',').any(|s| s == *t))
                .collect(),
        )
    }

    fn parse(f: &mut Fields<'_>, obj: &Map<String, Value>) -> Option<EventTypes> {
        if obj.get("event_types").is_none_or(Value::is_null) {
            return Some(EventTypes::all());
        }
        let names = f.string_list("event_types", 64)?;
        let unknown = names
            .iter()
            .position(|n| !EVENT_TYPES.contains(&n.as_str()));
        if names.is_empty() || unknown.is_some() {
            f.push(FieldError::new(
                "event_types",
                FieldErrorCode::Invalid,
                "expected a non-empty list of AccountOpened, MoneyDeposited, MoneyWithdrawn, \
                 AccountClosed",
            ));
            return None;
        }
        Some(EventTypes(
            EVENT_TYPES
                .into_iter()
                .filter(|t| names.iter().any(|n| n == t))
                .collect(),
        ))
    }
}

/// `POST /webhook-endpoints`: where to deliver, and which events.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndpointInput {
    pub url: url::Url,
    pub event_types: EventTypes,
}

impl EndpointInput {
    /// Every invalid field at once (422).
    pub fn from_json(obj: &Map<String, Value>) -> Result<EndpointInput, crate::Error> {
        let mut f = Fields::new(obj);
        let url = f.text("url", URL_MAX).and_then(|u| parse_url(&mut f, &u));
        let event_types = EventTypes::parse(&mut f, obj);
        f.finish().map_err(crate::Error::Validation)?;
        match (url, event_types) {
            (Some(url), Some(event_types)) => Ok(EndpointInput { url, event_types }),
            _ => Err(crate::Error::Validation(Vec::new())),
        }
    }
}

/// `PATCH /webhook-endpoints/{id}`: any of `url`, `event_types`, `enabled`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EndpointPatch {
    pub url: Option<url::Url>,
    pub event_types: Option<EventTypes>,
    pub enabled: Option<bool>,
}

impl EndpointPatch {
    pub fn from_json(obj: &Map<String, Value>) -> Result<EndpointPatch, crate::Error> {
        let mut f = Fields::new(obj);
        let mut patch = EndpointPatch::default();
        if obj.get("url").is_some() {
            patch.url = f.text("url", URL_MAX).and_then(|u| parse_url(&mut f, &u));
        }
        if obj.get("event_types").is_some() {
            patch.event_types = EventTypes::parse(&mut f, obj);
        }
        match obj.get("enabled") {
            None => {}
            Some(Value::Bool(b)) => patch.enabled = Some(*b),
            Some(_) => f.push(FieldError::new(
                "enabled",
                FieldErrorCode::InvalidType,
                "expected true or false",
            )),
        }
        f.finish().map_err(crate::Error::Validation)?;
        Ok(patch)
    }
}

/// An absolute `http` or `https` URL with a host and no credentials. Where it may lead is
/// checked when it is registered and again at every delivery ([`crate::destination`]).
fn parse_url(f: &mut Fields<'_>, text: &str) -> Option<url::Url> {
    let invalid = |f: &mut Fields<'_>, why: &str| {
        f.push(FieldError::new("url", FieldErrorCode::Invalid, why));
        None
    };
    let Ok(url) = url::Url::parse(text.trim()) else {
        return invalid(f, "expected an absolute http or https URL");
    };
    if !matches!(url.scheme(), "http" | "https") || url.host().is_none() {
        return invalid(f, "expected an absolute http or https URL");
    }
    if !url.username().is_empty() || url.password().is_some() {
        return invalid(f, "credentials do not belong in the URL");
    }
    Some(url)
}

/// A registered endpoint, as its owner sees it (its secret only in the answers that make one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    pub id: i64,
    pub owner_id: Option<i64>,
    pub url: String,
    pub event_types: EventTypes,
    pub enabled: bool,
    pub secret_version: i64,
    /// Mixed into the secret (not secret itself): see [`crate::secret`].
    pub secret_salt: String,
    pub created_at: String,
    pub updated_at: String,
    /// The dispatcher's state: failed attempts at the next event, and when it tries again
    /// (Unix milliseconds; 0 when it is not waiting).
    pub failed_attempts: i64,
    pub next_attempt_at: i64,
}

/// One attempt at delivering one event to one endpoint, or a manual redelivery.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivery {
    pub id: i64,
    pub endpoint_id: i64,
    /// The `webhook-id` sent: the same for every attempt at the same event.
    pub message_id: String,
    pub event_id: i64,
    pub attempt: i64,
    /// `delivered`, `failed` (tried again later) or `gave_up` (the last attempt failed; the
    /// endpoint went on to the next event).
    pub outcome: String,
    pub response_status: Option<i64>,
    pub latency_ms: i64,
    pub error: Option<String>,
    /// When the next attempt is due (Unix milliseconds), after a failure.
    pub next_attempt_at: Option<i64>,
    pub attempted_at: String,
    pub manual: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap()
    }

    #[test]
    fn inputs_are_validated_all_at_once() {
        let ok = EndpointInput::from_json(&obj(json!({
            "url": "https://hooks.example.com/in",
            "event_types": ["MoneyWithdrawn", "MoneyDeposited"]
        })))
        .unwrap();
        assert_eq!(ok.event_types.names(), ["MoneyDeposited", "MoneyWithdrawn"]);
        let all = EndpointInput::from_json(&obj(json!({"url": "http://h/x"}))).unwrap();
        assert_eq!(all.event_types, EventTypes::all());
        for (body, fields) in [
            (json!({}), vec!["url"]),
            (
                json!({"url": "ftp://h/x", "event_types": []}),
                vec!["url", "event_types"],
            ),
            (json!({"url": "https://u:p@h/x"}), vec!["url"]),
            (
                json!({"url": "/relative", "event_types": ["Nope"]}),
                vec!["url", "event_types"],
            ),
            (json!({"url": 5}), vec!["url"]),
        ] {
            let Err(crate::Error::Validation(errors)) =
                EndpointInput::from_json(&obj(body.clone()))
            else {
                panic!("{body} was accepted")
            };
            let got: Vec<&str> = errors.iter().map(|e| e.field.as_str()).collect();
            assert_eq!(got, fields, "{body}");
        }
        let patch = EndpointPatch::from_json(&obj(json!({"enabled": false}))).unwrap();
        assert_eq!(patch.enabled, Some(false));
        assert!(EndpointPatch::from_json(&obj(json!({"enabled": "no"}))).is_err());
        let stored = EventTypes::from_stored(&ok.event_types.stored());
        assert_eq!(stored, ok.event_types);
    }
}
