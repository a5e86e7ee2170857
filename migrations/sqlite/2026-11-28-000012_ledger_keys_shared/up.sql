-- The ledger's Idempotency-Keys join every other create's in idempotency_keys (crates/idempotency):
-- one mechanism, keys held per caller and pruned after IDEMPOTENCY_TTL_SECS. A ledger record
-- answers by reference, the account and sequence of the event the key made (crates/ledger,
-- repo/keys.rs). The keys recorded before belonged to no caller: they move under '*', which the
-- ledger honours for any caller until they expire, so a retry across the upgrade still replays.
INSERT INTO idempotency_keys (caller, idempotency_key, fingerprint, status, location, body, created_at)
SELECT '*', idempotency_key, fingerprint, 201,
       CASE WHEN sequence = 1 THEN '/accounts/' || aggregate_id END,
       '{"aggregate_id":"' || aggregate_id || '","sequence":' || sequence || '}',
       replace(created_at, ' ', 'T') || 'Z'
FROM account_idempotency_keys;
DROP TABLE account_idempotency_keys;
