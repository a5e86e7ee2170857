-- A whole table's counter row is found through row_counts' primary key. The functions of
-- migration 10 compared `counted` (text) with TG_TABLE_NAME, which is of type `name`: the
-- primary key's index cannot answer that comparison (nor a plain cast to text, which keeps
-- `name`'s collation "C" where the index has the database's default), so every insert into and
-- delete from a counted table scanned all of row_counts. That was cheap while the table held
-- its ~100 whole-table rows, but each note with comments and each user with tokens adds up to
-- 16 rows, and once a run had commented on 20,000 notes every `POST /articles`, `/v1/notes`,
-- `/v2/notes` and `/accounts` scanned ~200 pages (0.2-0.3x of `POST /notes` in the bench,
-- docs/PERFORMANCE.md). Comparing as text in the column's collation uses the index. Only the
-- functions change: the rows and the triggers that call them stay as they are.
CREATE OR REPLACE FUNCTION row_counts_added() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    added BIGINT;
BEGIN
    SELECT COUNT(*) INTO added FROM added_rows;
    IF added > 0 THEN
        UPDATE row_counts SET n = n + added
        WHERE counted = TG_TABLE_NAME::text COLLATE "default" AND parent = 0 AND shard = pg_backend_pid() % 16;
    END IF;
    RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION row_counts_removed() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    removed BIGINT;
BEGIN
    SELECT COUNT(*) INTO removed FROM removed_rows;
    IF removed > 0 THEN
        UPDATE row_counts SET n = n - removed
        WHERE counted = TG_TABLE_NAME::text COLLATE "default" AND parent = 0 AND shard = pg_backend_pid() % 16;
    END IF;
    RETURN NULL;
END
$$;
