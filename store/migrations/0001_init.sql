-- 0001: models, conversations and the message tree.
-- Times are INTEGER milliseconds since the Unix epoch (UTC).

CREATE TABLE models (
    id             INTEGER PRIMARY KEY,
    path           TEXT    NOT NULL UNIQUE,
    sha256         TEXT    NOT NULL DEFAULT '',
    size           INTEGER NOT NULL DEFAULT 0,
    mtime_ms       INTEGER NOT NULL DEFAULT 0,
    display_name   TEXT    NOT NULL DEFAULT '',
    kind           TEXT    NOT NULL DEFAULT '',
    metadata       TEXT    NOT NULL DEFAULT '{}',
    tokenizer_path TEXT    NOT NULL DEFAULT '',
    template       TEXT    NOT NULL DEFAULT '',
    added_ms       INTEGER NOT NULL,
    last_used_ms   INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX models_sha256 ON models(sha256);

-- A conversation keeps a copy of its model's name and hash, so removing the
-- model from the library never makes its conversations meaningless.
CREATE TABLE conversations (
    id              INTEGER PRIMARY KEY,
    uid             TEXT    NOT NULL UNIQUE,
    model_id        INTEGER REFERENCES models(id) ON DELETE SET NULL,
    model_sha256    TEXT    NOT NULL DEFAULT '',
    model_name      TEXT    NOT NULL DEFAULT '',
    title           TEXT    NOT NULL DEFAULT '',
    settings        TEXT    NOT NULL DEFAULT '{}',
    current_leaf_id INTEGER REFERENCES messages(id) ON DELETE SET NULL,
    created_ms      INTEGER NOT NULL,
    updated_ms      INTEGER NOT NULL
);
CREATE INDEX conversations_model ON conversations(model_id, updated_ms);
CREATE INDEX conversations_updated ON conversations(updated_ms);

-- Messages form a tree: an edit or a regeneration is a sibling, so the
-- alternatives stay. token_ids is little-endian uint32, 4 bytes a token.
CREATE TABLE messages (
    id              INTEGER PRIMARY KEY,
    conversation_id INTEGER NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    parent_id       INTEGER REFERENCES messages(id) ON DELETE CASCADE,
    role            TEXT    NOT NULL,
    text            TEXT    NOT NULL DEFAULT '',
    token_ids       BLOB,
    pos_start       INTEGER NOT NULL DEFAULT 0,
    pos_end         INTEGER NOT NULL DEFAULT 0,
    stats           TEXT,
    partial         INTEGER NOT NULL DEFAULT 0,
    created_ms      INTEGER NOT NULL,
    updated_ms      INTEGER NOT NULL,
    CHECK (pos_end >= pos_start)
);
CREATE INDEX messages_conversation ON messages(conversation_id, id);
CREATE INDEX messages_parent ON messages(parent_id, id);
