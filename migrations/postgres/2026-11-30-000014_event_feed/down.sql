DROP INDEX account_events_feed;
ALTER TABLE account_events DROP COLUMN tx;
