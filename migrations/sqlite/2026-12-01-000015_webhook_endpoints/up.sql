-- Outbound webhooks (crates/outbound-webhooks, docs/events.md). The event log is the outbox:
-- an event is committed once, and each endpoint keeps its place in the commit-ordered feed
-- (cursor_tx, cursor_id), so an event and its deliveries can never disagree. No secret is
-- stored: an endpoint's secret is derived from the operator's key and secret_version.
CREATE TABLE webhook_endpoints (
    id INTEGER PRIMARY KEY AUTOINCREMENT NOT NULL,
    owner_id BIGINT,
    url TEXT NOT NULL,
    event_types TEXT NOT NULL,
    enabled BOOLEAN NOT NULL DEFAULT TRUE,
    secret_version BIGINT NOT NULL DEFAULT 1,
    -- Random, per endpoint, mixed into its secret: an id handed out again (after a restore)
    -- never gives a former endpoint's secret. Not a secret itself.
    secret_salt TEXT NOT NULL DEFAULT '',
    -- Until then (Unix ms) deliveries are signed with the previous secret too (a rotation's
    -- grace period).
    previous_secret_until BIGINT NOT NULL DEFAULT 0,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    -- The dispatcher's state: the last feed position handled, failed attempts at the next
    -- event, when it tries again (Unix ms), and which process delivers until when.
    cursor_tx BIGINT NOT NULL DEFAULT 0,
    cursor_id BIGINT NOT NULL,
    failed_attempts BIGINT NOT NULL DEFAULT 0,
    next_attempt_at BIGINT NOT NULL DEFAULT 0,
    lease_owner TEXT NOT NULL DEFAULT '',
    lease_until BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX webhook_endpoints_owner ON webhook_endpoints (owner_id, id);

-- The delivery log: one row per attempt, kept with its endpoint.
CREATE TABLE webhook_deliveries (
    id INTEGER PRIMARY KEY AUTOINCREMENT NOT NULL,
    endpoint_id BIGINT NOT NULL REFERENCES webhook_endpoints(id) ON DELETE CASCADE,
    message_id TEXT NOT NULL,
    event_id BIGINT NOT NULL,
    attempt BIGINT NOT NULL,
    outcome TEXT NOT NULL CHECK (outcome IN ('delivered', 'failed', 'gave_up')),
    response_status BIGINT,
    latency_ms BIGINT NOT NULL,
    error TEXT,
    next_attempt_at BIGINT,
    attempted_at TEXT NOT NULL,
    manual BOOLEAN NOT NULL DEFAULT FALSE
);
CREATE INDEX webhook_deliveries_endpoint ON webhook_deliveries (endpoint_id, id);
