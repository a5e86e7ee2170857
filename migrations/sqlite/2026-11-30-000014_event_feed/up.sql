-- The global event feed (GET /events/stream) in commit order. SQLite has one writer at a time,
-- so ids are handed out in commit order and the feed goes by id (the rowid): nothing to add.
-- PostgreSQL's migration of the same name records each event's transaction instead.
SELECT 1;
