-- Area E: the account projection, the append-only event log and idempotency keys.
CREATE TABLE accounts (
    account_id TEXT PRIMARY KEY NOT NULL,
    owner TEXT NOT NULL,
    balance_cents BIGINT NOT NULL DEFAULT 0 CHECK (balance_cents >= 0),
    is_open BOOLEAN NOT NULL DEFAULT 1,
    last_sequence BIGINT NOT NULL DEFAULT 0 CHECK (last_sequence >= 0),
    updated_at TEXT NOT NULL
);

CREATE TABLE account_events (
    id INTEGER PRIMARY KEY AUTOINCREMENT NOT NULL,
    aggregate_id TEXT NOT NULL REFERENCES accounts(account_id),
    aggregate_type TEXT NOT NULL DEFAULT 'account' CHECK (aggregate_type = 'account'),
    event_type TEXT NOT NULL
        CHECK (event_type IN ('AccountOpened', 'MoneyDeposited', 'MoneyWithdrawn', 'AccountClosed')),
    payload TEXT NOT NULL,
    sequence BIGINT NOT NULL CHECK (sequence >= 1),
    occurred_at TEXT NOT NULL,
    UNIQUE (aggregate_id, sequence)
);

CREATE TABLE account_idempotency_keys (
    idempotency_key TEXT PRIMARY KEY NOT NULL,
    fingerprint TEXT NOT NULL,
    aggregate_id TEXT NOT NULL,
    sequence BIGINT NOT NULL,
    created_at TEXT NOT NULL
);
