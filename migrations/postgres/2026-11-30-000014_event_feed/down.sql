DROP INDEX account_events_feed;
DROP TRIGGER account_events_feed_tx ON account_events;
DROP FUNCTION account_events_feed_tx();
ALTER TABLE account_events DROP COLUMN tx;
