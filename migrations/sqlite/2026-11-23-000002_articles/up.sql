-- Area B. AUTOINCREMENT: ids only ever grow, so rows added while a client pages by cursor
-- (id < after) always land above every cursor already handed out.
CREATE TABLE articles (
    id INTEGER PRIMARY KEY AUTOINCREMENT NOT NULL,
    title TEXT NOT NULL,
    author TEXT NOT NULL,
    category TEXT,
    created_at TEXT NOT NULL
);
