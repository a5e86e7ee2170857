//! The one `ResponseError` of the service. Every failure becomes an [`ApiError`] carrying a
//! [`Problem`], its extra headers (`Retry-After`, `WWW-Authenticate`) and how its body is
//! written: a problem document, which the `problems` middleware renders (it knows the request,
//! so it can resolve `type` against the configured or derived base URL and stamp the request
//! id), or area D's plain `{"error": message}` ([`ToProblem::plain_error`]).

use std::collections::BTreeMap;
use std::fmt;

use actix_web::http::StatusCode;
use actix_web::http::header::{self, HeaderName, HeaderValue};
use actix_web::{HttpResponse, ResponseError};
use apistos::paths::{MediaType, Response};
use apistos::reference_or::ReferenceOr;
use apistos::{ApiErrorComponent, ApistosSchema, OpenApiVersion, VersionSpecificSchema};
use problem_details::{Problem, Slug, ToProblem};
use storage::{Fault, StoreError};

/// A problem on its way to the client, plus the cause for the log (never for the client).
#[derive(Debug)]
pub struct ApiError {
    pub problem: Box<Problem>,
    cause: Option<String>,
    /// Sent with the problem (`Retry-After` of a 503, for example).
    headers: Vec<(HeaderName, HeaderValue)>,
    /// `Some(message)`: answered as `{"error": message}` with the problem's status.
    plain: Option<String>,
}

impl ApiError {
    pub fn new(problem: Problem) -> Self {
        ApiError {
            problem: Box::new(problem),
            cause: None,
            headers: Vec::new(),
            plain: None,
        }
    }

    /// 401 with its `WWW-Authenticate` challenge (RFC 9110 requires one on every 401).
    pub fn unauthorized(detail: impl Into<String>, challenge: HeaderValue) -> Self {
        ApiError::new(Problem::new(Slug::Unauthorized, detail))
            .with_header(header::WWW_AUTHENTICATE, challenge)
    }

    /// A 500 whose cause goes to the log only.
    /// What went wrong, for the log (never for the client).
    pub fn cause(&self) -> Option<&str> {
        self.cause.as_deref()
    }

    pub fn internal(cause: impl fmt::Display) -> Self {
        ApiError {
            cause: Some(cause.to_string()),
            ..ApiError::new(Problem::internal())
        }
    }

    pub fn with_header(mut self, name: HeaderName, value: HeaderValue) -> Self {
        self.headers.push((name, value));
        self
    }

    /// What the client is told about a storage fault: 507 `insufficient-storage` for a full
    /// disk, 503 `storage-unavailable` when the files refuse writes, 503 `service-unavailable`
    /// when the database is busy, slow or unreachable, 503 `storage-damaged` when what is
    /// stored is damaged; each with `Retry-After`. The cause goes
    /// to the log (the `problems` middleware logs every 5xx with its request id).
    pub fn fault(fault: Fault, cause: impl fmt::Display) -> Self {
        let (slug, detail) = match fault {
            Fault::Full => (
                Slug::InsufficientStorage,
                "The database's disk is full; nothing was written.",
            ),
            Fault::ReadOnly | Fault::Io | Fault::Replaced => (
                Slug::StorageUnavailable,
                "The database refuses writes; nothing was written.",
            ),
            Fault::Busy | Fault::Timeout | Fault::Unavailable => (
                Slug::ServiceUnavailable,
                "The database is unavailable; retry shortly.",
            ),
            Fault::Damaged => (
                Slug::StorageDamaged,
                "The database holds damaged data; nothing damaged is served and nothing was \
                 written. An operator must restore a backup or accept the loss.",
            ),
        };
        ApiError {
            cause: Some(format!("storage {fault}: {cause}")),
            ..ApiError::new(Problem::new(slug, detail))
        }
        .with_header(
            header::RETRY_AFTER,
            HeaderValue::from(fault.retry_after_secs()),
        )
    }

    /// A server-side failure: the storage fault in its source chain if there is one, else a 500.
    /// Either way the whole chain goes to the log.
    pub fn server_side(err: &(dyn std::error::Error + 'static)) -> Self {
        match Fault::find(err) {
            Some(fault) => ApiError::fault(fault, chain(err)),
            None => ApiError::internal(chain(err)),
        }
    }

    /// Area D answers its refusals as `{"error": message}`; this makes one raised by a shared
    /// mechanism (an `Idempotency-Key` refusal) answer so too, its detail as the message.
    pub fn plain(mut self) -> Self {
        if self.plain.is_none() && self.problem.status < 500 {
            self.plain = Some(self.problem.detail.clone());
        }
        self
    }

    pub fn from_store(err: StoreError) -> Self {
        ApiError::fault(err.fault, &err.detail)
    }
}

/// The full source chain of an error, for the log line of a 500.
pub fn chain(err: &(dyn std::error::Error + 'static)) -> String {
    storage::fault::sources(err)
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(": ")
}

impl<E> From<E> for ApiError
where
    E: ToProblem + std::error::Error + 'static,
{
    fn from(err: E) -> Self {
        let problem = err.to_problem();
        // A domain's own finding that what it read is damaged (an event that does not fold).
        if problem.slug == Slug::StorageDamaged && Fault::find(&err).is_none() {
            return ApiError::fault(Fault::Damaged, chain(&err));
        }
        // A domain's own 503 (a feature the operator has not configured) stays one; any other
        // 5xx is a failure, told by its fault.
        if problem.status >= 500 && problem.slug != Slug::ServiceUnavailable {
            return ApiError::server_side(&err);
        }
        ApiError {
            plain: err.plain_error().map(str::to_owned),
            ..ApiError::new(problem)
        }
    }
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.problem)
    }
}

/// Stored in the response's extensions; the `problems` middleware turns it into the body.
#[derive(Debug, Clone)]
pub struct PendingProblem {
    pub problem: Problem,
    pub cause: Option<String>,
}

impl ResponseError for ApiError {
    fn status_code(&self) -> StatusCode {
        StatusCode::from_u16(self.problem.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
    }

    fn error_response(&self) -> HttpResponse {
        let mut builder = HttpResponse::build(self.status_code());
        for header in &self.headers {
            builder.insert_header(header.clone());
        }
        if let Some(message) = &self.plain {
            // A JSON body of its own: the problems middleware leaves it as it is.
            return builder.json(serde_json::json!({ "error": message }));
        }
        let mut res = builder.finish();
        res.extensions_mut().insert(PendingProblem {
            problem: (*self.problem).clone(),
            cause: self.cause.clone(),
        });
        res
    }
}

pub const PROBLEM_SCHEMA: &str = "Problem";
pub const PROBLEM_CONTENT_TYPE: &str = "application/problem+json";

/// JSON Schema of the RFC 9457 body (with this service's `errors[]` member).
pub fn problem_schema() -> serde_json::Value {
    serde_json::json!({
        "type": "object",
        "description": "RFC 9457 problem details.",
        "required": ["type", "title", "status", "detail"],
        "properties": {
            "type": {"type": "string", "description": "URI {PROBLEM_BASE_URL}/<slug>"},
            "title": {"type": "string"},
            "status": {"type": "integer"},
            "detail": {"type": "string"},
            "errors": {
                "type": "array",
                "description": "Every invalid field (422 only).",
                "items": {
                    "type": "object",
                    "required": ["field", "message", "code"],
                    "properties": {
                        "field": {"type": "string"},
                        "message": {"type": "string"},
                        "code": {
                            "type": "string",
                            "enum": ["required", "too_long", "invalid", "out_of_range", "invalid_type"]
                        }
                    }
                }
            },
            "max_bytes": {"type": "integer", "description": "The body size limit (413 only)."}
        }
    })
}

/// Statuses any operation may document; each operation picks its own with `error_code`. The
/// limits layer's 413 and 415 are documented on every operation (`document::body_limits`).
const DOCUMENTED: [(u16, &str); 10] = [
    (400, "Malformed request."),
    (401, "Missing or invalid credentials."),
    (403, "Credentials do not allow this operation."),
    (404, "The resource does not exist."),
    (409, "Conflict with the current state."),
    (
        412,
        "If-Match names a version the resource no longer has; nothing was written.",
    ),
    (422, "Invalid input; `errors` lists every invalid field."),
    (429, "Rate limit exceeded."),
    (503, "A dependency is unavailable."),
    (507, "The database's disk is full; nothing was written."),
];

impl ApiErrorComponent for ApiError {
    fn schemas_by_status_code(
        oas_version: OpenApiVersion,
    ) -> BTreeMap<String, (String, ReferenceOr<ApistosSchema>)> {
        let schema = ApistosSchema::from_value(&problem_schema(), oas_version);
        DOCUMENTED
            .iter()
            .map(|(code, _)| {
                (
                    code.to_string(),
                    (
                        PROBLEM_SCHEMA.to_owned(),
                        ReferenceOr::Object(schema.clone()),
                    ),
                )
            })
            .collect()
    }

    fn error_responses(oas_version: OpenApiVersion) -> Vec<(String, Response)> {
        DOCUMENTED
            .iter()
            .map(|(code, description)| {
                (code.to_string(), problem_response(description, oas_version))
            })
            .collect()
    }
}

pub fn problem_response(description: &str, oas_version: OpenApiVersion) -> Response {
    let schema = match oas_version {
        OpenApiVersion::OAS3_0 => VersionSpecificSchema::OAS3_0(ReferenceOr::Reference {
            _ref: format!("#/components/schemas/{PROBLEM_SCHEMA}"),
        }),
        OpenApiVersion::OAS3_1 => {
            VersionSpecificSchema::OAS3_1(ApistosSchema::from_value(&problem_schema(), oas_version))
        }
    };
    Response {
        description: description.to_owned(),
        content: BTreeMap::from([(
            PROBLEM_CONTENT_TYPE.to_owned(),
            MediaType {
                schema: Some(schema),
                ..Default::default()
            },
        )]),
        ..Default::default()
    }
}
