-- Exact list totals without a scan: every list's `total` reads a handful of counter rows kept
-- in the same transaction as the insert or delete that changes them (triggers, so no write path
-- can forget one: routes, seeding, group commits, data migration). `parent` is the note for
-- `comments` (the total of one note's comments), the user for `tokens` (a user's tokens) and 0
-- for whole tables. Existing rows are
-- counted here, so a database written by the previous release starts with exact totals.
-- PostgreSQL: a whole table's count is spread over 16 rows (a connection adds to the shard of
-- its backend pid), so writers on many connections and server instances do not queue on one
-- row lock; a total is the sum of its shards. The triggers run once per statement over its
-- transition table, so a multi-row insert updates a counter once, not once per row.
CREATE TABLE row_counts (
    counted TEXT NOT NULL,
    parent BIGINT NOT NULL,
    shard INTEGER NOT NULL,
    n BIGINT NOT NULL,
    PRIMARY KEY (counted, parent, shard)
);

INSERT INTO row_counts (counted, parent, shard, n)
SELECT t.counted, 0, s.shard, CASE WHEN s.shard = 0 THEN t.n ELSE 0 END
FROM (VALUES
    ('notes', (SELECT COUNT(*) FROM notes)),
    ('tags', (SELECT COUNT(*) FROM tags)),
    ('articles', (SELECT COUNT(*) FROM articles)),
    ('versioned_notes', (SELECT COUNT(*) FROM versioned_notes)),
    ('accounts', (SELECT COUNT(*) FROM accounts)),
    ('webhook_events', (SELECT COUNT(*) FROM webhook_events))
) AS t(counted, n)
CROSS JOIN generate_series(0, 15) AS s(shard);
INSERT INTO row_counts (counted, parent, shard, n)
    SELECT 'comments', note_id, 0, COUNT(*) FROM comments GROUP BY note_id;
INSERT INTO row_counts (counted, parent, shard, n)
    SELECT 'tokens', user_id, 0, COUNT(*) FROM tokens GROUP BY user_id;

CREATE FUNCTION row_counts_added() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    added BIGINT;
BEGIN
    SELECT COUNT(*) INTO added FROM added_rows;
    IF added > 0 THEN
        UPDATE row_counts SET n = n + added
        WHERE counted = TG_TABLE_NAME AND parent = 0 AND shard = pg_backend_pid() % 16;
    END IF;
    RETURN NULL;
END
$$;

CREATE FUNCTION row_counts_removed() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    removed BIGINT;
BEGIN
    SELECT COUNT(*) INTO removed FROM removed_rows;
    IF removed > 0 THEN
        UPDATE row_counts SET n = n - removed
        WHERE counted = TG_TABLE_NAME AND parent = 0 AND shard = pg_backend_pid() % 16;
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER notes_counted_insert AFTER INSERT ON notes
    REFERENCING NEW TABLE AS added_rows FOR EACH STATEMENT EXECUTE FUNCTION row_counts_added();
CREATE TRIGGER notes_counted_delete AFTER DELETE ON notes
    REFERENCING OLD TABLE AS removed_rows FOR EACH STATEMENT EXECUTE FUNCTION row_counts_removed();
CREATE TRIGGER tags_counted_insert AFTER INSERT ON tags
    REFERENCING NEW TABLE AS added_rows FOR EACH STATEMENT EXECUTE FUNCTION row_counts_added();
CREATE TRIGGER tags_counted_delete AFTER DELETE ON tags
    REFERENCING OLD TABLE AS removed_rows FOR EACH STATEMENT EXECUTE FUNCTION row_counts_removed();
CREATE TRIGGER articles_counted_insert AFTER INSERT ON articles
    REFERENCING NEW TABLE AS added_rows FOR EACH STATEMENT EXECUTE FUNCTION row_counts_added();
CREATE TRIGGER articles_counted_delete AFTER DELETE ON articles
    REFERENCING OLD TABLE AS removed_rows FOR EACH STATEMENT EXECUTE FUNCTION row_counts_removed();
CREATE TRIGGER versioned_notes_counted_insert AFTER INSERT ON versioned_notes
    REFERENCING NEW TABLE AS added_rows FOR EACH STATEMENT EXECUTE FUNCTION row_counts_added();
CREATE TRIGGER versioned_notes_counted_delete AFTER DELETE ON versioned_notes
    REFERENCING OLD TABLE AS removed_rows FOR EACH STATEMENT EXECUTE FUNCTION row_counts_removed();
CREATE TRIGGER accounts_counted_insert AFTER INSERT ON accounts
    REFERENCING NEW TABLE AS added_rows FOR EACH STATEMENT EXECUTE FUNCTION row_counts_added();
CREATE TRIGGER accounts_counted_delete AFTER DELETE ON accounts
    REFERENCING OLD TABLE AS removed_rows FOR EACH STATEMENT EXECUTE FUNCTION row_counts_removed();
CREATE TRIGGER webhook_events_counted_insert AFTER INSERT ON webhook_events
    REFERENCING NEW TABLE AS added_rows FOR EACH STATEMENT EXECUTE FUNCTION row_counts_added();
CREATE TRIGGER webhook_events_counted_delete AFTER DELETE ON webhook_events
    REFERENCING OLD TABLE AS removed_rows FOR EACH STATEMENT EXECUTE FUNCTION row_counts_removed();

-- A note's comment count is sharded like a table's, so that writers of one busy note's comments
-- do not queue on one row either: each adds or subtracts on its own shard row (made on first
-- use; a shard may go below zero when another shard counted the rows it deletes), and the
-- total is the sum.
CREATE FUNCTION comment_counts_added() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO row_counts (counted, parent, shard, n)
        SELECT 'comments', note_id, pg_backend_pid() % 16, COUNT(*) FROM added_rows
        GROUP BY note_id ORDER BY note_id
        ON CONFLICT (counted, parent, shard) DO UPDATE SET n = row_counts.n + EXCLUDED.n;
    RETURN NULL;
END
$$;

CREATE FUNCTION comment_counts_removed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- Not for a note deleted with its comments (cascade): its counts go with it
    -- (comment_counts_dropped), whichever of the two triggers runs first.
    INSERT INTO row_counts (counted, parent, shard, n)
        SELECT 'comments', r.note_id, pg_backend_pid() % 16, -COUNT(*) FROM removed_rows r
        WHERE EXISTS (SELECT 1 FROM notes n WHERE n.id = r.note_id)
        GROUP BY r.note_id ORDER BY r.note_id
        ON CONFLICT (counted, parent, shard) DO UPDATE SET n = row_counts.n + EXCLUDED.n;
    RETURN NULL;
END
$$;

-- A deleted note's comments are gone (cascade), and so is their count.
CREATE FUNCTION comment_counts_dropped() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM row_counts
    WHERE counted = 'comments' AND parent IN (SELECT id FROM removed_rows);
    RETURN NULL;
END
$$;

CREATE TRIGGER comments_counted_insert AFTER INSERT ON comments
    REFERENCING NEW TABLE AS added_rows FOR EACH STATEMENT EXECUTE FUNCTION comment_counts_added();
CREATE TRIGGER comments_counted_delete AFTER DELETE ON comments
    REFERENCING OLD TABLE AS removed_rows FOR EACH STATEMENT EXECUTE FUNCTION comment_counts_removed();
CREATE TRIGGER notes_comments_uncounted AFTER DELETE ON notes
    REFERENCING OLD TABLE AS removed_rows FOR EACH STATEMENT EXECUTE FUNCTION comment_counts_dropped();

-- A user's tokens, counted like a note's comments (a token is revoked, not deleted, and no route
-- deletes a user: only an operator's delete reaches the last two triggers). The functions are
-- written out for each child table rather than made generic over its parent column: a generic
-- one needs dynamic SQL (EXECUTE), planned again on every write.
CREATE FUNCTION token_counts_added() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO row_counts (counted, parent, shard, n)
        SELECT 'tokens', user_id, pg_backend_pid() % 16, COUNT(*) FROM added_rows
        GROUP BY user_id ORDER BY user_id
        ON CONFLICT (counted, parent, shard) DO UPDATE SET n = row_counts.n + EXCLUDED.n;
    RETURN NULL;
END
$$;

CREATE FUNCTION token_counts_removed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO row_counts (counted, parent, shard, n)
        SELECT 'tokens', r.user_id, pg_backend_pid() % 16, -COUNT(*) FROM removed_rows r
        WHERE EXISTS (SELECT 1 FROM users u WHERE u.id = r.user_id)
        GROUP BY r.user_id ORDER BY r.user_id
        ON CONFLICT (counted, parent, shard) DO UPDATE SET n = row_counts.n + EXCLUDED.n;
    RETURN NULL;
END
$$;

CREATE FUNCTION token_counts_dropped() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM row_counts
    WHERE counted = 'tokens' AND parent IN (SELECT id FROM removed_rows);
    RETURN NULL;
END
$$;

CREATE TRIGGER tokens_counted_insert AFTER INSERT ON tokens
    REFERENCING NEW TABLE AS added_rows FOR EACH STATEMENT EXECUTE FUNCTION token_counts_added();
CREATE TRIGGER tokens_counted_delete AFTER DELETE ON tokens
    REFERENCING OLD TABLE AS removed_rows FOR EACH STATEMENT EXECUTE FUNCTION token_counts_removed();
CREATE TRIGGER users_tokens_uncounted AFTER DELETE ON users
    REFERENCING OLD TABLE AS removed_rows FOR EACH STATEMENT EXECUTE FUNCTION token_counts_dropped();
