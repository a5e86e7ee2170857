-- Nothing to change on SQLite: its triggers name each table's counter row literally, and the
-- PostgreSQL tree fixes how its shared trigger functions find theirs. Both trees keep the same
-- names.
SELECT 1;
