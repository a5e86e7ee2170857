-- Area C: one store behind /v1/notes and /v2/notes (not the area A notes). `tags` is a JSON
-- array of strings kept as text.
CREATE TABLE versioned_notes (
    id INTEGER PRIMARY KEY AUTOINCREMENT NOT NULL,
    title TEXT NOT NULL,
    body TEXT NOT NULL DEFAULT '',
    tags TEXT NOT NULL DEFAULT '[]',
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
