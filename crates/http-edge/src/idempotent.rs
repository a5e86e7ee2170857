//! `Idempotency-Key` on every create (crates/idempotency): the [`KeyedCreate`] extractor (the key
//! header and who is asking), the write that runs once per key, and the [`Created`] answer,
//! replayed or not. Keys belong to the caller: the bearer's user in tokens mode, else the
//! operator, else `X-User-Id`, else everyone unauthenticated together.

use std::marker::PhantomData;

use actix_web::body::BoxBody;
use actix_web::dev::Payload;
use actix_web::http::StatusCode;
use actix_web::http::header::{CONTENT_TYPE, HeaderValue, LOCATION};
use actix_web::{FromRequest, HttpRequest, HttpResponse, Responder};
use apistos::actix::CreatedJson;
use apistos::paths::Responses;
use apistos::{ApiComponent, OpenApiVersion};
use idempotency::{Answer, CallerKey, Key, Outcome, Scope};
use problem_details::ToProblem;
use serde::Serialize;
use serde_json::{Map, Value};
use storage::DbConnection;

use crate::actor::actor;
use crate::answers;
use crate::db::{Db, Sharing, Wrote};
use crate::error::ApiError;
use crate::extract::HeaderDoc;
use ownership::Actor;

/// The optional `Idempotency-Key` header of every create.
pub struct IdempotencyKeyDoc;

impl HeaderDoc for IdempotencyKeyDoc {
    const NAME: &'static str = "Idempotency-Key";
    const REQUIRED: bool = false;
    const DESCRIPTION: &'static str = "Optional, on every create. A retry with the same key and \
        body returns the first response (with `Idempotent-Replayed: true`) and writes nothing; the \
        same key with another request is 422 `idempotency-key-reused`. Keys belong to the caller \
        and are kept for IDEMPOTENCY_TTL_SECS (24 hours by default).";
    fn schema() -> Value {
        serde_json::json!({
            "type": "string",
            "minLength": 1,
            "maxLength": 255,
            "pattern": "^[!-~]{1,255}$"
        })
    }
}

/// Sent with an answer that repeats the first one to the same key.
pub const REPLAYED: &str = "Idempotent-Replayed";

/// The `Idempotency-Key` of a create and who sent it.
pub struct KeyedCreate {
    key: Option<String>,
    caller: String,
    expiry: idempotency::Expiry,
    /// The collection the create posts to: a created resource's `Location` is under it.
    path: String,
}

/// What a create made, when it has a URL of its own: the id its path under the collection
/// ends with (`None` for resources nobody can fetch one by one, such as articles).
pub trait Addressable {
    fn id_segment(&self) -> Option<String>;
}

impl FromRequest for KeyedCreate {
    type Error = ApiError;
    type Future = std::future::Ready<Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let key = req
            .headers()
            .get(IdempotencyKeyDoc::NAME)
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
        let expiry = match crate::Edge::of(req) {
            Ok(edge) => edge.keys.clone(),
            Err(err) => return std::future::ready(Err(err)),
        };
        std::future::ready(Ok(KeyedCreate {
            key,
            caller: caller(req),
            expiry,
            path: req.path().trim_end_matches('/').to_owned(),
        }))
    }
}

fn caller(req: &HttpRequest) -> String {
    match actor(req) {
        Actor::User { user_id, .. } => return format!("user:{user_id}"),
        Actor::Operator => return "operator".to_owned(),
        Actor::Unidentified => {}
    }
    let user = req.headers().get("X-User-Id").and_then(|v| v.to_str().ok());
    match user.and_then(|v| v.trim().parse::<i64>().ok()) {
        Some(id) => format!("x-user-id:{id}"),
        None => "anonymous".to_owned(),
    }
}

impl KeyedCreate {
    /// The key bound to this operation (`scope`) and body, held by this caller (`None` without
    /// the header); invalid keys are 422.
    pub fn caller_key(
        &self,
        scope: &Scope,
        body: &Map<String, Value>,
    ) -> Result<Option<CallerKey>, ApiError> {
        let Some(raw) = &self.key else {
            return Ok(None);
        };
        let key = Key::scoped(raw, scope, body)?;
        Ok(Some(self.expiry.key(self.caller.clone(), key)))
    }

    /// Runs `create` in a write and answers 201 with what it made (and its `Location`, when it
    /// has one); with a key, only once per key and request (`scope` names the operation and its
    /// target, `body` is the request's JSON object). The audit row names the created resource; a replay writes
    /// none.
    pub async fn create<T, E, F>(
        &self,
        db: &Db,
        scope: Scope,
        body: &Map<String, Value>,
        create: F,
    ) -> Result<Created<T>, ApiError>
    where
        F: Fn(&mut DbConnection) -> Result<T, E> + Send + 'static,
        T: Serialize + Addressable + Send + 'static,
        E: std::error::Error + ToProblem + From<diesel::result::Error> + Send + 'static,
    {
        self.create_as(db, scope, body, create, Sharing::Batch)
            .await
    }

    /// [`KeyedCreate::create`], sharing the write queue's batches or not as `sharing` says
    /// ([`Sharing::Alone`]: a create that locks ledger accounts).
    pub async fn create_as<T, E, F>(
        &self,
        db: &Db,
        scope: Scope,
        body: &Map<String, Value>,
        create: F,
        sharing: Sharing,
    ) -> Result<Created<T>, ApiError>
    where
        F: Fn(&mut DbConnection) -> Result<T, E> + Send + 'static,
        T: Serialize + Addressable + Send + 'static,
        E: std::error::Error + ToProblem + From<diesel::result::Error> + Send + 'static,
    {
        let collection = self.path.clone();
        let fresh = move |c: &mut DbConnection| -> Result<Answer, E> {
            let made = create(c)?;
            let body = serde_json::to_string(&made)
                .map_err(|e| diesel::result::Error::SerializationError(Box::new(e)))?;
            Ok(Answer {
                status: 201,
                location: made.id_segment().map(|id| format!("{collection}/{id}")),
                body,
            })
        };
        let Some(key) = self.caller_key(&scope, body)? else {
            let answer = db.write_as(sharing, fresh, made_at).await?;
            return Ok(Created::new(answer, false));
        };
        let keyed = key.clone();
        let stamp = self.expiry.stamp();
        let outcome = db
            .write_as(
                sharing,
                move |c| idempotency::once(c, &keyed, &stamp, &fresh),
                |o: &Outcome| match o.replayed {
                    true => Wrote::Nothing,
                    false => made_at(&o.answer),
                },
            )
            .await;
        match outcome {
            Ok(Outcome { answer, replayed }) => Ok(Created::new(answer, replayed)),
            Err(e) if e.problem.slug == problem_details::Slug::RequestInProgress => {
                answer_of(db, key).await
            }
            Err(e) => Err(e),
        }
    }
}

/// Where a create's audit row says it wrote: the created resource, else the collection.
fn made_at(answer: &Answer) -> Wrote {
    answer.location.clone().map_or(Wrote::Path, Wrote::At)
}

/// After a concurrent request with the same key committed first: its answer.
async fn answer_of<T>(db: &Db, key: CallerKey) -> Result<Created<T>, ApiError> {
    let outcome = db
        .read_primary(move |c| idempotency::replay::<idempotency::InvalidKey>(c, &key))
        .await?;
    Ok(Created::new(outcome.answer, outcome.replayed))
}

crate::header_component!(KeyedCreate, IdempotencyKeyDoc);

/// 201 with the created resource as JSON; a replayed answer is the first one, byte for byte,
/// with `Idempotent-Replayed: true`.
pub struct Created<T> {
    answer: Answer,
    replayed: bool,
    _made: PhantomData<T>,
}

impl<T> Created<T> {
    fn new(answer: Answer, replayed: bool) -> Self {
        Created {
            answer,
            replayed,
            _made: PhantomData,
        }
    }
}

impl<T> Responder for Created<T> {
    type Body = BoxBody;

    fn respond_to(self, _: &HttpRequest) -> HttpResponse {
        let status = StatusCode::from_u16(self.answer.status).unwrap_or(StatusCode::CREATED);
        let mut res = HttpResponse::build(status);
        res.insert_header((CONTENT_TYPE, HeaderValue::from_static("application/json")));
        if let Some(location) = &self.answer.location {
            res.insert_header((LOCATION, location.as_str()));
        }
        if self.replayed {
            res.insert_header((REPLAYED, "true"));
        }
        // The created resource's tag: what a GET of it answers, for a later If-Match.
        if let Ok(tag) =
            HeaderValue::from_str(&crate::conditional::etag(self.answer.body.as_bytes()))
        {
            res.insert_header((actix_web::http::header::ETAG, tag));
        }
        res.body(self.answer.body)
    }
}

crate::answer_component!(Created, CreatedJson, |v, content_type, description| {
    let created = <CreatedJson<T> as ApiComponent>::responses(v, content_type, description)?;
    let etag = crate::conditional::etag_header(v);
    let location = answers::header(
        "The created resource's path, where it has one of its own (a note: `/notes/{id}`).",
        false,
        serde_json::json!({"type": "string"}),
        v,
    );
    let created = answers::with_header(with_replayed_header(created, v), "ETag", &etag);
    Some(answers::with_header(created, "Location", &location))
});

/// Documents [`REPLAYED`] on every response of `responses`.
pub fn with_replayed_header(responses: Responses, v: OpenApiVersion) -> Responses {
    let doc = answers::header(
        "`true` when this answer repeats the first answer to the same Idempotency-Key \
         (nothing was written this time); absent otherwise.",
        false,
        serde_json::json!({"type": "string", "enum": ["true"]}),
        v,
    );
    answers::with_header(responses, REPLAYED, &doc)
}
