-- Nothing to change on PostgreSQL: the SQLite tree drops AUTOINCREMENT from webhook_events
-- here, and an identity column has no such per-insert cost. Both trees keep the same names.
SELECT 1;
