CREATE TABLE webhook_events (
    id INTEGER PRIMARY KEY AUTOINCREMENT NOT NULL,
    event_type TEXT NOT NULL,
    payload TEXT NOT NULL,
    delivered_at TEXT NOT NULL,
    signature_t TEXT NOT NULL,
    signature_v1 TEXT NOT NULL
);
-- A verified v1 is an HMAC over "<t>.<body>", so (t, v1) identifies (t, v1, body): an exact
-- replay hits this index and is answered with the original row.
CREATE UNIQUE INDEX webhook_events_signature ON webhook_events(signature_t, signature_v1);
