DROP INDEX webhook_events_signature;
DROP TABLE webhook_events;
