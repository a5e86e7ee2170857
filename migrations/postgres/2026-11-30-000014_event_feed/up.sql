-- The global event feed (GET /events/stream) in commit order. Identity values are handed out
-- when a row is inserted, not when its transaction commits, so on PostgreSQL a reader going by
-- id alone could pass over an event whose transaction commits after a later id was seen. Each
-- event therefore records the id of the transaction that wrote it; the feed orders by
-- (tx, id) and serves only transactions older than the oldest still running, which can no
-- longer gain events (crates/ledger/src/repo/feed.rs).
-- Existing rows keep tx = 0 (adding a column with a constant default rewrites nothing) and
-- come first, in id order, as they always did.
ALTER TABLE account_events ADD COLUMN tx BIGINT NOT NULL DEFAULT 0;
ALTER TABLE account_events ALTER COLUMN tx SET DEFAULT (pg_current_xact_id()::text::bigint);
CREATE INDEX account_events_feed ON account_events (tx, id);
