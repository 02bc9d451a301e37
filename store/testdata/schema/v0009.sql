PRAGMA foreign_keys=OFF;
BEGIN;
CREATE TABLE schema_migrations (
    version    INTEGER PRIMARY KEY,
    name       TEXT    NOT NULL,
    applied_ms INTEGER NOT NULL
);
INSERT INTO schema_migrations VALUES(1,'0001_init',0);
INSERT INTO schema_migrations VALUES(2,'0002_runs',0);
INSERT INTO schema_migrations VALUES(3,'0003_model_execution_time',0);
INSERT INTO schema_migrations VALUES(4,'0004_api_runs',0);
INSERT INTO schema_migrations VALUES(5,'0005_conversation_revision',0);
INSERT INTO schema_migrations VALUES(6,'0006_quality_runs',0);
INSERT INTO schema_migrations VALUES(7,'0007_run_numerics',0);
INSERT INTO schema_migrations VALUES(8,'0008_conversation_pin',0);
INSERT INTO schema_migrations VALUES(9,'0009_model_presets',0);
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
, revision INTEGER NOT NULL DEFAULT 0, pinned INTEGER NOT NULL DEFAULT 0 CHECK (pinned IN (0, 1)));
INSERT INTO conversations VALUES(1,'seed-conversation',1,'aa11','Llama','seeded','{"cache":"flat"}',3,1000,3000,3,0);
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
CREATE TABLE runs (
    id                                INTEGER PRIMARY KEY,
    kind                              TEXT    NOT NULL CHECK (kind IN ('chat', 'bench', 'api', 'quality')),
    engine                            TEXT    NOT NULL DEFAULT '',
    model_sha256                      TEXT    NOT NULL DEFAULT '',
    model_path                        TEXT    NOT NULL DEFAULT '',
    model_name                        TEXT    NOT NULL DEFAULT '',
    conversation_id                   INTEGER REFERENCES conversations(id) ON DELETE SET NULL,
    config                            TEXT    NOT NULL DEFAULT '{}',
    machine                           TEXT    NOT NULL DEFAULT '{}',
    app_version                       TEXT    NOT NULL DEFAULT '',
    started_ms                        INTEGER NOT NULL,
    ended_ms                          INTEGER NOT NULL DEFAULT 0,
    error                             TEXT    NOT NULL DEFAULT '',

    model_load_start_ms               INTEGER NOT NULL DEFAULT 0,
    model_load_end_ms                 INTEGER NOT NULL DEFAULT 0,
    inference_start_ms                INTEGER NOT NULL DEFAULT 0,
    prompt_eval_end_ms                INTEGER NOT NULL DEFAULT 0,
    first_token_ms                    INTEGER NOT NULL DEFAULT 0,
    inference_end_ms                  INTEGER NOT NULL DEFAULT 0,
    aggregate_sampling_time_ms        INTEGER NOT NULL DEFAULT 0,
    num_prompt_tokens                 INTEGER NOT NULL DEFAULT 0,
    num_generated_tokens              INTEGER NOT NULL DEFAULT 0,

    prefill_tok_s                     REAL    NOT NULL DEFAULT 0,
    decode_tok_s                      REAL    NOT NULL DEFAULT 0,
    ttft_ms                           REAL    NOT NULL DEFAULT 0,

    mem_after_load                    INTEGER,
    mem_after_prefill                 INTEGER,
    mem_after_decode                  INTEGER,
    mem_peak                          INTEGER,

    n_prompt                          INTEGER NOT NULL DEFAULT 0,
    n_gen                             INTEGER NOT NULL DEFAULT 0,
    n_depth                           INTEGER NOT NULL DEFAULT 0,
    repetitions                       INTEGER NOT NULL DEFAULT 0,
    avg_tok_s                         REAL    NOT NULL DEFAULT 0,
    stddev_tok_s                      REAL    NOT NULL DEFAULT 0,
    aggregate_model_execution_time_ms INTEGER NOT NULL DEFAULT 0,

    ppl                               REAL    NOT NULL DEFAULT 0,
    ppl_err                           REAL    NOT NULL DEFAULT 0,
    n_scored                          INTEGER NOT NULL DEFAULT 0,
    kld_mean                          REAL    NOT NULL DEFAULT 0,
    kld_mean_err                      REAL    NOT NULL DEFAULT 0,
    same_top_pct                      REAL    NOT NULL DEFAULT 0,
    base_sha256                       TEXT    NOT NULL DEFAULT ''
, numerics TEXT NOT NULL DEFAULT 'exact' CHECK (numerics IN ('exact', 'fast')));
INSERT INTO runs VALUES(1,'bench','cpu','aa11','','Llama',NULL,'{}','{}','',4000,0,'',0,0,0,0,0,0,0,512,0,0.0,0.0,0.0,NULL,NULL,NULL,NULL,512,0,0,1,0.0,0.0,0,0.0,0.0,0,0.0,0.0,0.0,'','exact');
INSERT INTO runs VALUES(2,'chat','metal','aa11','','Llama',NULL,'{}','{}','',5000,0,'',0,0,0,0,0,0,0,7,0,0.0,0.0,0.0,NULL,NULL,NULL,NULL,0,0,0,0,0.0,0.0,42,0.0,0.0,0,0.0,0.0,0.0,'','exact');
INSERT INTO runs VALUES(3,'api','cpu','aa11','','Llama',NULL,'{"endpoint":"/v1/chat/completions","cached_tokens":22}','{}','',6000,0,'',0,0,0,0,0,0,0,30,8,0.0,0.0,0.0,NULL,NULL,NULL,NULL,0,0,0,0,0.0,0.0,0,0.0,0.0,0,0.0,0.0,0.0,'','exact');
INSERT INTO runs VALUES(4,'quality','cpu','aa11','','Llama',NULL,'{"ctx":128}','{}','',7000,0,'',0,0,0,0,0,0,0,0,0,0.0,0.0,0.0,NULL,NULL,NULL,NULL,0,0,0,0,0.0,0.0,0,12.5,0.25,1449,0.0125,0.001,97.5,'bb22','exact');
INSERT INTO runs VALUES(5,'bench','cpu','aa11','','Llama',NULL,'{}','{}','',8000,0,'',0,0,0,0,0,0,0,0,0,0.0,0.0,0.0,NULL,NULL,NULL,NULL,128,0,0,3,0.0,0.0,0,0.0,0.0,0,0.0,0.0,0.0,'','fast');
CREATE TABLE bench_samples (
    run_id                            INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    rep                               INTEGER NOT NULL,
    model_load_start_ms               INTEGER NOT NULL DEFAULT 0,
    model_load_end_ms                 INTEGER NOT NULL DEFAULT 0,
    inference_start_ms                INTEGER NOT NULL DEFAULT 0,
    prompt_eval_end_ms                INTEGER NOT NULL DEFAULT 0,
    first_token_ms                    INTEGER NOT NULL DEFAULT 0,
    inference_end_ms                  INTEGER NOT NULL DEFAULT 0,
    aggregate_sampling_time_ms        INTEGER NOT NULL DEFAULT 0,
    num_prompt_tokens                 INTEGER NOT NULL DEFAULT 0,
    num_generated_tokens              INTEGER NOT NULL DEFAULT 0,
    prefill_tok_s                     REAL    NOT NULL DEFAULT 0,
    decode_tok_s                      REAL    NOT NULL DEFAULT 0,
    ttft_ms                           REAL    NOT NULL DEFAULT 0,
    tok_s                             REAL    NOT NULL DEFAULT 0,
    mem_peak                          INTEGER,
    aggregate_model_execution_time_ms INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (run_id, rep)
) WITHOUT ROWID;
INSERT INTO bench_samples VALUES(1,1,0,0,0,0,0,0,0,512,0,0.0,0.0,0.0,99.5,NULL,0);
CREATE TABLE model_presets (
    model_id   INTEGER PRIMARY KEY REFERENCES models(id) ON DELETE CASCADE,
    settings   TEXT    NOT NULL DEFAULT '{}' CHECK (json_valid(settings)),
    updated_ms INTEGER NOT NULL
);
INSERT INTO model_presets VALUES(1,'{"system_prompt":"be brief","temperature":0.2}',9000);
CREATE INDEX models_sha256 ON models(sha256);
CREATE INDEX conversations_model ON conversations(model_id, updated_ms);
CREATE INDEX conversations_updated ON conversations(updated_ms);
CREATE INDEX messages_conversation ON messages(conversation_id, id);
CREATE INDEX messages_parent ON messages(parent_id, id);
CREATE INDEX runs_model ON runs(model_sha256, started_ms);
CREATE INDEX runs_started ON runs(started_ms);
COMMIT;
