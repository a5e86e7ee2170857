-- Tokens that end: every token gets an expiry, and the time it was last used (written at most
-- once a minute). Tokens issued before this release get the default lifetime, 90 days, counted
-- from the upgrade, so an upgrade cuts off no client that holds one; the list shows the date.
ALTER TABLE tokens ADD COLUMN expires_at TEXT NULL;
ALTER TABLE tokens ADD COLUMN last_used_at TEXT NULL;
UPDATE tokens SET expires_at = strftime('%Y-%m-%dT%H:%M:%SZ', 'now', '+90 days');
