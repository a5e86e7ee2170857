-- Who created what (crates/ownership): the creating user of every user-writable resource, NULL
-- for rows made by the operator, with authentication off, or before this migration. Existing
-- rows therefore belong to no user: in tokens mode only the operator may change them. Adding a
-- nullable column rewrites nothing, so this is instant on a large table.
ALTER TABLE notes ADD COLUMN owner_id BIGINT;
ALTER TABLE tags ADD COLUMN owner_id BIGINT;
ALTER TABLE comments ADD COLUMN owner_id BIGINT;
ALTER TABLE articles ADD COLUMN owner_id BIGINT;
ALTER TABLE versioned_notes ADD COLUMN owner_id BIGINT;
ALTER TABLE accounts ADD COLUMN owner_id BIGINT;
-- A user's accounts, in the order GET /accounts lists them.
CREATE INDEX accounts_owner_id ON accounts (owner_id, account_id);

-- The audit trail (crates/audit): one row per successful write, written in the write's own
-- transaction. Kept forever; listed newest first by the operator.
CREATE TABLE audit_log (
    id INTEGER PRIMARY KEY AUTOINCREMENT NOT NULL,
    at TEXT NOT NULL,
    actor TEXT NOT NULL CHECK (actor IN ('anonymous', 'operator', 'user')),
    user_id BIGINT,
    token_id BIGINT,
    method TEXT NOT NULL,
    route TEXT NOT NULL,
    resource TEXT NOT NULL
);
CREATE INDEX audit_log_user_id ON audit_log (user_id, id);
