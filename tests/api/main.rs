//! HTTP tests of the whole service. Every test runs on SQLite, and again on PostgreSQL when
//! `TEST_POSTGRES_URL` is set (each test on its own throwaway database).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod helpers;

mod accounts;
mod articles;
mod comments;
mod conditional;
mod cross_cutting;
mod examples;
mod health;

mod hostile;
mod idempotency;
mod links;
mod logs;
mod metrics;
mod migrations;
mod notes;
mod openapi;
mod outbound_webhooks;
mod ownership;
mod replicas;
mod request_limits;
mod storage_faults;
mod streams;
mod tags;
mod tokens;
mod transfers;
mod versioned_notes;
mod webhooks;
