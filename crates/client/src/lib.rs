#![doc = include_str!("../README.md")]

mod api;
mod deprecation;
mod error;
mod transport;
mod types;

pub use api::{Comments, Notes, Operations, Resource, Tags};
pub use deprecation::{Deprecated, DeprecationWarning};
pub use error::{ClientError, FieldCode, FieldError, Problem, ProblemKind};
pub use problem_details::{FieldErrorCode, Slug};
pub use transport::{
    Client, ClientBuilder, DEFAULT_API_KEY_HEADER, MAX_RESPONSE_BYTES, RetryPolicy,
};
pub use types::{
    CheckState, Checks, Comment, CommentInput, CredentialType, DegradedPolicy, Health,
    HealthReport, HealthStatus, MachineHealth, Note, NoteInput, NoteV1, NoteV1Input, NoteV1List,
    OkStatus, Page, PageRequest, Pong, Protected, ServiceInfo, Tag, TagInput,
};
