DROP TABLE account_idempotency_keys;
DROP TABLE account_events;
DROP TABLE accounts;
