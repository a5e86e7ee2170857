-- Migration 10's functions again (the comparison with TG_TABLE_NAME as `name`).
CREATE OR REPLACE FUNCTION row_counts_added() RETURNS trigger LANGUAGE plpgsql AS $$
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

CREATE OR REPLACE FUNCTION row_counts_removed() RETURNS trigger LANGUAGE plpgsql AS $$
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
