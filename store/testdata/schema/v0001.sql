PRAGMA foreign_keys=OFF;
BEGIN;
CREATE TABLE schema_migrations (
    version    INTEGER PRIMARY KEY,
    name       TEXT    NOT NULL,
    applied_ms INTEGER NOT NULL
);
INSERT INTO schema_migrations VALUES(1,'0001_init',0);
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
INSERT INTO models VALUES(1,'/models/llama.pte','aa11',1234,1000,'Llama','llm','{"layers":16}','','',1000,2000);
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
INSERT INTO conversations VALUES(1,'seed-conversation',1,'aa11','Llama','seeded','{"cache":"flat"}',3,1000,3000);
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
INSERT INTO messages VALUES(1,1,NULL,'user','hi',X'0100000002000000',0,2,NULL,0,1000,1000);
INSERT INTO messages VALUES(2,1,1,'assistant','hello',X'03000000',2,3,NULL,0,2000,2000);
INSERT INTO messages VALUES(3,1,1,'assistant','hey',X'04000000',2,3,NULL,0,3000,3000);
CREATE INDEX models_sha256 ON models(sha256);
CREATE INDEX conversations_model ON conversations(model_id, updated_ms);
CREATE INDEX conversations_updated ON conversations(updated_ms);
CREATE INDEX messages_conversation ON messages(conversation_id, id);
CREATE INDEX messages_parent ON messages(parent_id, id);
COMMIT;
