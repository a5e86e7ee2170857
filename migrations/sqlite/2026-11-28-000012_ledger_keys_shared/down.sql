-- Back to the ledger's own table: its records (those that name an event) return, one per key
-- (keys were global then: of two callers' same key, the first recorded stays).
CREATE TABLE account_idempotency_keys (
    idempotency_key TEXT PRIMARY KEY NOT NULL,
    fingerprint TEXT NOT NULL,
    aggregate_id TEXT NOT NULL,
    sequence BIGINT NOT NULL,
    created_at TEXT NOT NULL
);
INSERT OR IGNORE INTO account_idempotency_keys (idempotency_key, fingerprint, aggregate_id, sequence, created_at)
SELECT idempotency_key, fingerprint, json_extract(body, '$.aggregate_id'), json_extract(body, '$.sequence'),
       replace(replace(created_at, 'T', ' '), 'Z', '')
FROM idempotency_keys
WHERE body LIKE '{"aggregate_id":%'
ORDER BY id;
DELETE FROM idempotency_keys WHERE body LIKE '{"aggregate_id":%';
