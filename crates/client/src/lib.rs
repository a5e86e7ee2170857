#![doc = include_str!("../README.md")]

mod api;
mod conditional;
mod deprecation;
mod error;
mod idempotency;
mod transport;
mod types;
mod walk;

pub use api::{
    Accounts, Articles, Comments, Notes, Operations, Resource, StreamedEvent, Subscription, Tags,
    Tokens, Users, V1Notes, V2Notes, WebhookEndpoints, Webhooks,
};
pub use conditional::{ETag, Tagged};
pub use deprecation::{Deprecated, DeprecationWarning};
pub use error::{ClientError, FieldCode, FieldError, Problem, ProblemKind};
pub use futures_util::{Stream, TryStreamExt};
pub use idempotency::{Created, IdempotencyKey};
pub use problem_details::{FieldErrorCode, Slug};
pub use transport::{
    Client, ClientBuilder, DEFAULT_API_KEY_HEADER, MAX_RESPONSE_BYTES, RetryPolicy,
};
pub use types::{
    Account, AccountEvent, AccountEventList, AggregateType, AmountPayload, Article,
    ArticleCursorPage, ArticleInput, ArticleOffsetPage, AuditEntry, AuditPage, AuditRequest,
    CheckState, Checks, Comment, CommentInput, CredentialType, CursorRequest, DegradedPolicy,
    EndpointChange, EndpointSecret, EventType, EventsRequest, Health, HealthReport, HealthStatus,
    IssueToken, IssuedToken, MachineHealth, NewEndpoint, NewEvent, NewTransfer, Note, NoteInput,
    NoteV1, NoteV1Input, NoteV1List, NoteV2, NoteV2Input, NoteV2List, NoteV2Meta, OkStatus,
    OpenAccount, Page, PageRequest, Pong, ProblemTypeDoc, Protected, RawToken, Readiness,
    ReadyCheck, ReadyStatus, ReceiptStatus, Scope, ServiceInfo, Tag, TagInput, TokenInfo,
    TokenList, Transfer, User, UserInput, V1Usage, Verification, WebhookDelivery, WebhookEndpoint,
    WebhookEvent, WebhookReceipt,
};
