CREATE TABLE webhook_events_old (
    id INTEGER PRIMARY KEY AUTOINCREMENT NOT NULL,
    event_type TEXT NOT NULL,
    payload TEXT NOT NULL,
    delivered_at TEXT NOT NULL,
    signature_t TEXT NOT NULL,
    signature_v1 TEXT NOT NULL
);
INSERT INTO webhook_events_old (id, event_type, payload, delivered_at, signature_t, signature_v1)
    SELECT id, event_type, payload, delivered_at, signature_t, signature_v1 FROM webhook_events;
DROP TABLE webhook_events;
ALTER TABLE webhook_events_old RENAME TO webhook_events;
CREATE UNIQUE INDEX webhook_events_signature ON webhook_events(signature_t, signature_v1);
