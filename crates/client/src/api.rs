//! The typed methods, one per OpenAPI operation (the `operation` of an error is its
//! `operationId`).

use std::marker::PhantomData;
use std::time::SystemTime;

use reqwest::{Method, StatusCode};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::deprecation::{self, Deprecated};
use crate::error::ClientError;
use crate::transport::{Call, Client};
use crate::types::{
    Comment, CommentInput, DegradedPolicy, Health, HealthReport, HealthStatus, MachineHealth, Note,
    NoteInput, NoteV1, NoteV1Input, NoteV1List, Page, PageRequest, Pong, Protected, ServiceInfo,
    Tag, TagInput,
};

/// The `operationId`s of one resource's five operations.
#[derive(Debug)]
pub struct Operations {
    pub list: &'static str,
    pub create: &'static str,
    pub get: &'static str,
    pub update: &'static str,
    pub delete: &'static str,
}

const NOTES: Operations = Operations {
    list: "list_notes",
    create: "create_note",
    get: "get_note",
    update: "update_note",
    delete: "delete_note",
};
const EXAMPLE_NOTES: Operations = Operations {
    list: "example_list_notes",
    create: "example_create_note",
    get: "example_get_note",
    update: "example_update_note",
    delete: "example_delete_note",
};
const TAGS: Operations = Operations {
    list: "list_tags",
    create: "create_tag",
    get: "get_tag",
    update: "update_tag",
    delete: "delete_tag",
};
const EXAMPLE_TAGS: Operations = Operations {
    list: "example_list_tags",
    create: "example_create_tag",
    get: "example_get_tag",
    update: "example_update_tag",
    delete: "example_delete_tag",
};
const COMMENTS: Operations = Operations {
    list: "list_comments",
    create: "create_comment",
    get: "get_comment",
    update: "update_comment",
    delete: "delete_comment",
};

/// A collection with list, create, get, update and delete: `T` is the resource, `I` its
/// input. Made by [`Client::notes`], [`Client::tags`], [`Client::comments`] and the
/// `example_*` variants.
#[derive(Debug)]
pub struct Resource<'a, T, I> {
    client: &'a Client,
    path: String,
    ops: &'static Operations,
    _types: PhantomData<fn() -> (T, I)>,
}

pub type Notes<'a> = Resource<'a, Note, NoteInput>;
pub type Tags<'a> = Resource<'a, Tag, TagInput>;
pub type Comments<'a> = Resource<'a, Comment, CommentInput>;

impl<T: DeserializeOwned, I: Serialize> Resource<'_, T, I> {
    /// One page of the collection, by id ascending.
    pub async fn list(&self, page: PageRequest) -> Result<Page<T>, ClientError> {
        let call = Call::new(self.ops.list, Method::GET, &self.path).query(page.query());
        Ok(self.client.fetch(call, StatusCode::OK).await?.0)
    }

    /// Creates an item (201). Never retried.
    pub async fn create(&self, input: &I) -> Result<T, ClientError> {
        let call = Call::new(self.ops.create, Method::POST, &self.path).json(input)?;
        Ok(self.client.fetch(call, StatusCode::CREATED).await?.0)
    }

    pub async fn get(&self, id: i64) -> Result<T, ClientError> {
        let call = Call::new(self.ops.get, Method::GET, format!("{}/{id}", self.path));
        Ok(self.client.fetch(call, StatusCode::OK).await?.0)
    }

    /// Replaces an item (200).
    pub async fn update(&self, id: i64, input: &I) -> Result<T, ClientError> {
        let path = format!("{}/{id}", self.path);
        let call = Call::new(self.ops.update, Method::PUT, path).json(input)?;
        Ok(self.client.fetch(call, StatusCode::OK).await?.0)
    }

    /// Deletes an item (204).
    pub async fn delete(&self, id: i64) -> Result<(), ClientError> {
        let call = Call::new(
            self.ops.delete,
            Method::DELETE,
            format!("{}/{id}", self.path),
        );
        self.client.fetch_empty(call, StatusCode::NO_CONTENT).await
    }
}

impl Client {
    fn resource<T, I>(&self, path: String, ops: &'static Operations) -> Resource<'_, T, I> {
        Resource {
            client: self,
            path,
            ops,
            _types: PhantomData,
        }
    }

    /// `/notes`.
    pub fn notes(&self) -> Notes<'_> {
        self.resource("/notes".to_owned(), &NOTES)
    }

    /// `/examples/notes`: the same store as [`Client::notes`].
    pub fn example_notes(&self) -> Notes<'_> {
        self.resource("/examples/notes".to_owned(), &EXAMPLE_NOTES)
    }

    /// `/tags`.
    pub fn tags(&self) -> Tags<'_> {
        self.resource("/tags".to_owned(), &TAGS)
    }

    /// `/examples/tags`: the same store as [`Client::tags`].
    pub fn example_tags(&self) -> Tags<'_> {
        self.resource("/examples/tags".to_owned(), &EXAMPLE_TAGS)
    }

    /// `/notes/{note_id}/comments`.
    pub fn comments(&self, note_id: i64) -> Comments<'_> {
        self.resource(format!("/notes/{note_id}/comments"), &COMMENTS)
    }

    fn check_service(&self, operation: &'static str, actual: &str) -> Result<(), ClientError> {
        match self.expected_service() {
            Some(expected) if expected != actual => Err(ClientError::ServiceMismatch {
                operation,
                expected: expected.to_owned(),
                actual: actual.to_owned(),
            }),
            _ => Ok(()),
        }
    }

    /// `GET /`: service metadata (its `name` is checked against
    /// [`expect_service`](crate::ClientBuilder::expect_service)).
    pub async fn service_info(&self) -> Result<ServiceInfo, ClientError> {
        let call = Call::new("service_info", Method::GET, "/");
        let (info, _): (ServiceInfo, _) = self.fetch(call, StatusCode::OK).await?;
        self.check_service("service_info", &info.name)?;
        Ok(info)
    }

    /// `GET /health`. A 503 is [`Health::Degraded`] with [`DegradedPolicy::Accept`], else
    /// [`ClientError::Degraded`]; it is never retried. The `service` member is checked first.
    pub async fn health(&self, policy: DegradedPolicy) -> Result<Health, ClientError> {
        const OP: &str = "health";
        let mut call = Call::new(OP, Method::GET, "/health");
        call.answers = &[503];
        let reply = self.execute(&call).await?;
        let degraded = reply.status == StatusCode::SERVICE_UNAVAILABLE
            && reply.content_type().as_deref() == Some("application/json");
        if !degraded {
            reply.expect(StatusCode::OK)?;
        }
        let report: HealthReport = reply.decode()?;
        self.check_service(OP, &report.service)?;
        match (degraded, report.status, policy) {
            (false, HealthStatus::Ok, _) => Ok(Health::Healthy(report)),
            (true, HealthStatus::Degraded, DegradedPolicy::Accept) => Ok(Health::Degraded(report)),
            (true, HealthStatus::Degraded, DegradedPolicy::Reject) => {
                Err(ClientError::Degraded(report))
            }
            (_, status, _) => Err(ClientError::invalid(
                OP,
                format!(
                    "status {status:?} does not match HTTP {}",
                    reply.status.as_u16()
                ),
            )),
        }
    }

    /// `GET /machine/health` with the configured API key.
    pub async fn machine_health(&self) -> Result<MachineHealth, ClientError> {
        let call = Call::new("machine_health", Method::GET, "/machine/health");
        let (health, _): (MachineHealth, _) = self.fetch(call, StatusCode::OK).await?;
        self.check_service("machine_health", &health.service)?;
        Ok(health)
    }

    /// `GET /examples/ping`.
    pub async fn ping(&self) -> Result<Pong, ClientError> {
        let call = Call::new("example_ping", Method::GET, "/examples/ping");
        let (pong, _): (Pong, _) = self.fetch(call, StatusCode::OK).await?;
        if pong.message == "pong" {
            Ok(pong)
        } else {
            Err(ClientError::invalid(
                "example_ping",
                format!("message is {:?}, not \"pong\"", pong.message),
            ))
        }
    }

    /// `GET /examples/protected` with the configured bearer JWT.
    pub async fn protected(&self) -> Result<Protected, ClientError> {
        let call = Call::new("example_protected", Method::GET, "/examples/protected");
        Ok(self.fetch(call, StatusCode::OK).await?.0)
    }

    async fn deprecated<T: DeserializeOwned>(
        &self,
        call: Call,
        expected: StatusCode,
    ) -> Result<Deprecated<T>, ClientError> {
        let (value, reply) = self.fetch(call, expected).await?;
        Ok(Deprecated {
            value,
            warning: deprecation::from_headers(&reply.headers, SystemTime::now()),
        })
    }

    /// `GET /v1/notes` (deprecated; the warning says how many days are left).
    pub async fn v1_list_notes(
        &self,
        page: PageRequest,
    ) -> Result<Deprecated<NoteV1List>, ClientError> {
        let call = Call::new("list_notes_v1", Method::GET, "/v1/notes").query(page.query());
        self.deprecated(call, StatusCode::OK).await
    }

    /// `POST /v1/notes` (deprecated). Never retried.
    pub async fn v1_create_note(
        &self,
        input: &NoteV1Input,
    ) -> Result<Deprecated<NoteV1>, ClientError> {
        let call = Call::new("create_note_v1", Method::POST, "/v1/notes").json(input)?;
        self.deprecated(call, StatusCode::CREATED).await
    }

    /// `GET /v1/notes/{id}` (deprecated).
    pub async fn v1_get_note(&self, id: i64) -> Result<Deprecated<NoteV1>, ClientError> {
        let call = Call::new("get_note_v1", Method::GET, format!("/v1/notes/{id}"));
        self.deprecated(call, StatusCode::OK).await
    }
}
