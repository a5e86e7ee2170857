-- The global event feed (GET /events/stream, and the outbound webhooks' outbox) in an order
-- that loses nothing and keeps each account's events in sequence order. Identity values are
-- handed out when a row is inserted, not when its transaction commits, so on PostgreSQL a
-- reader going by id alone could pass over an event whose transaction commits after a later id
-- was seen. Each event therefore records a transaction number `tx`: the id of the transaction
-- that wrote it, or the account's previous event's `tx` when that is higher (a transaction
-- that waited for the account's lock behind a younger one). The feed orders by (tx, id) and
-- serves only values below the oldest transaction still running, which no later insert can
-- get (crates/ledger/src/repo/feed.rs).
-- Existing rows keep tx = 0 (adding a column with a constant default rewrites nothing) and
-- come first, in id order, as they always did.
ALTER TABLE account_events ADD COLUMN tx BIGINT NOT NULL DEFAULT 0;

CREATE FUNCTION account_events_feed_tx() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.tx := GREATEST(
        pg_current_xact_id()::text::bigint,
        COALESCE((SELECT e.tx FROM account_events e WHERE e.aggregate_id = NEW.aggregate_id
                  ORDER BY e.sequence DESC LIMIT 1), 0));
    RETURN NEW;
END
$$;

CREATE TRIGGER account_events_feed_tx BEFORE INSERT ON account_events
    FOR EACH ROW EXECUTE FUNCTION account_events_feed_tx();

CREATE INDEX account_events_feed ON account_events (tx, id);
