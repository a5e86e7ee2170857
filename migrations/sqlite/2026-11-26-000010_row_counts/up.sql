-- Exact list totals without a scan: every list's `total` reads a handful of counter rows kept
-- in the same transaction as the insert or delete that changes them (triggers, so no write path
-- can forget one: routes, seeding, group commits, data migration). `parent` is the note for
-- `comments` (the total of one note's comments), the user for `tokens` (a user's tokens) and 0
-- for whole tables. Existing rows are
-- counted here, so a database written by the previous release starts with exact totals.
-- SQLite has one writer at a time, so one row per count (shard 0).
CREATE TABLE row_counts (
    counted TEXT NOT NULL,
    parent BIGINT NOT NULL,
    shard INTEGER NOT NULL,
    n BIGINT NOT NULL,
    PRIMARY KEY (counted, parent, shard)
) WITHOUT ROWID;

INSERT INTO row_counts (counted, parent, shard, n) SELECT 'notes', 0, 0, COUNT(*) FROM notes;
INSERT INTO row_counts (counted, parent, shard, n) SELECT 'tags', 0, 0, COUNT(*) FROM tags;
INSERT INTO row_counts (counted, parent, shard, n) SELECT 'articles', 0, 0, COUNT(*) FROM articles;
INSERT INTO row_counts (counted, parent, shard, n) SELECT 'versioned_notes', 0, 0, COUNT(*) FROM versioned_notes;
INSERT INTO row_counts (counted, parent, shard, n) SELECT 'accounts', 0, 0, COUNT(*) FROM accounts;
INSERT INTO row_counts (counted, parent, shard, n) SELECT 'webhook_events', 0, 0, COUNT(*) FROM webhook_events;
INSERT INTO row_counts (counted, parent, shard, n)
    SELECT 'comments', note_id, 0, COUNT(*) FROM comments GROUP BY note_id;
INSERT INTO row_counts (counted, parent, shard, n)
    SELECT 'tokens', user_id, 0, COUNT(*) FROM tokens GROUP BY user_id;

CREATE TRIGGER notes_counted_insert AFTER INSERT ON notes BEGIN
    UPDATE row_counts SET n = n + 1 WHERE counted = 'notes' AND parent = 0 AND shard = 0;
END;
CREATE TRIGGER notes_counted_delete AFTER DELETE ON notes BEGIN
    UPDATE row_counts SET n = n - 1 WHERE counted = 'notes' AND parent = 0 AND shard = 0;
END;
CREATE TRIGGER tags_counted_insert AFTER INSERT ON tags BEGIN
    UPDATE row_counts SET n = n + 1 WHERE counted = 'tags' AND parent = 0 AND shard = 0;
END;
CREATE TRIGGER tags_counted_delete AFTER DELETE ON tags BEGIN
    UPDATE row_counts SET n = n - 1 WHERE counted = 'tags' AND parent = 0 AND shard = 0;
END;
CREATE TRIGGER articles_counted_insert AFTER INSERT ON articles BEGIN
    UPDATE row_counts SET n = n + 1 WHERE counted = 'articles' AND parent = 0 AND shard = 0;
END;
CREATE TRIGGER articles_counted_delete AFTER DELETE ON articles BEGIN
    UPDATE row_counts SET n = n - 1 WHERE counted = 'articles' AND parent = 0 AND shard = 0;
END;
CREATE TRIGGER versioned_notes_counted_insert AFTER INSERT ON versioned_notes BEGIN
    UPDATE row_counts SET n = n + 1 WHERE counted = 'versioned_notes' AND parent = 0 AND shard = 0;
END;
CREATE TRIGGER versioned_notes_counted_delete AFTER DELETE ON versioned_notes BEGIN
    UPDATE row_counts SET n = n - 1 WHERE counted = 'versioned_notes' AND parent = 0 AND shard = 0;
END;
CREATE TRIGGER accounts_counted_insert AFTER INSERT ON accounts BEGIN
    UPDATE row_counts SET n = n + 1 WHERE counted = 'accounts' AND parent = 0 AND shard = 0;
END;
CREATE TRIGGER accounts_counted_delete AFTER DELETE ON accounts BEGIN
    UPDATE row_counts SET n = n - 1 WHERE counted = 'accounts' AND parent = 0 AND shard = 0;
END;
CREATE TRIGGER webhook_events_counted_insert AFTER INSERT ON webhook_events BEGIN
    UPDATE row_counts SET n = n + 1 WHERE counted = 'webhook_events' AND parent = 0 AND shard = 0;
END;
CREATE TRIGGER webhook_events_counted_delete AFTER DELETE ON webhook_events BEGIN
    UPDATE row_counts SET n = n - 1 WHERE counted = 'webhook_events' AND parent = 0 AND shard = 0;
END;
CREATE TRIGGER comments_counted_insert AFTER INSERT ON comments BEGIN
    INSERT INTO row_counts (counted, parent, shard, n) VALUES ('comments', NEW.note_id, 0, 1)
        ON CONFLICT (counted, parent, shard) DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER comments_counted_delete AFTER DELETE ON comments BEGIN
    UPDATE row_counts SET n = n - 1 WHERE counted = 'comments' AND parent = OLD.note_id AND shard = 0;
END;
-- A deleted note's comments are gone (cascade), and so is their count.
CREATE TRIGGER notes_comments_uncounted AFTER DELETE ON notes BEGIN
    DELETE FROM row_counts WHERE counted = 'comments' AND parent = OLD.id;
END;
CREATE TRIGGER tokens_counted_insert AFTER INSERT ON tokens BEGIN
    INSERT INTO row_counts (counted, parent, shard, n) VALUES ('tokens', NEW.user_id, 0, 1)
        ON CONFLICT (counted, parent, shard) DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER tokens_counted_delete AFTER DELETE ON tokens BEGIN
    UPDATE row_counts SET n = n - 1 WHERE counted = 'tokens' AND parent = OLD.user_id AND shard = 0;
END;
