-- Idempotency-Key on every create: the first answer to each caller's key, recorded in the
-- transaction that wrote what it answers (crates/idempotency). Kept for IDEMPOTENCY_TTL_SECS,
-- then pruned by created_at. Nothing to carry forward: the ledger's own keys stay in
-- account_idempotency_keys.
CREATE TABLE idempotency_keys (
    id INTEGER PRIMARY KEY AUTOINCREMENT NOT NULL,
    caller TEXT NOT NULL,
    idempotency_key TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    status BIGINT NOT NULL,
    location TEXT,
    body TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE UNIQUE INDEX idempotency_keys_caller_key ON idempotency_keys (caller, idempotency_key);
CREATE INDEX idempotency_keys_created_at ON idempotency_keys (created_at);
