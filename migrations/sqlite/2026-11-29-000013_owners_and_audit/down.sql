DROP TABLE audit_log;
DROP INDEX accounts_owner_id;
ALTER TABLE accounts DROP COLUMN owner_id;
ALTER TABLE versioned_notes DROP COLUMN owner_id;
ALTER TABLE articles DROP COLUMN owner_id;
ALTER TABLE comments DROP COLUMN owner_id;
ALTER TABLE tags DROP COLUMN owner_id;
ALTER TABLE notes DROP COLUMN owner_id;
