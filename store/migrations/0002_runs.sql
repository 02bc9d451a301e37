-- 0002: chat and benchmark runs with ExecuTorch's runner stats, and one
-- sample row per benchmark repetition. Memory columns are bytes, NULL when
-- unknown.

CREATE TABLE runs (
    id                         INTEGER PRIMARY KEY,
    kind                       TEXT    NOT NULL CHECK (kind IN ('chat', 'bench')),
    engine                     TEXT    NOT NULL DEFAULT '',
    model_sha256               TEXT    NOT NULL DEFAULT '',
    model_path                 TEXT    NOT NULL DEFAULT '',
    model_name                 TEXT    NOT NULL DEFAULT '',
    conversation_id            INTEGER REFERENCES conversations(id) ON DELETE SET NULL,
    config                     TEXT    NOT NULL DEFAULT '{}',
    machine                    TEXT    NOT NULL DEFAULT '{}',
    app_version                TEXT    NOT NULL DEFAULT '',
    started_ms                 INTEGER NOT NULL,
    ended_ms                   INTEGER NOT NULL DEFAULT 0,
    error                      TEXT    NOT NULL DEFAULT '',

    model_load_start_ms        INTEGER NOT NULL DEFAULT 0,
    model_load_end_ms          INTEGER NOT NULL DEFAULT 0,
    inference_start_ms         INTEGER NOT NULL DEFAULT 0,
    prompt_eval_end_ms         INTEGER NOT NULL DEFAULT 0,
    first_token_ms             INTEGER NOT NULL DEFAULT 0,
    inference_end_ms           INTEGER NOT NULL DEFAULT 0,
    aggregate_sampling_time_ms INTEGER NOT NULL DEFAULT 0,
    num_prompt_tokens          INTEGER NOT NULL DEFAULT 0,
    num_generated_tokens       INTEGER NOT NULL DEFAULT 0,

    prefill_tok_s              REAL    NOT NULL DEFAULT 0,
    decode_tok_s               REAL    NOT NULL DEFAULT 0,
    ttft_ms                    REAL    NOT NULL DEFAULT 0,

    mem_after_load             INTEGER,
    mem_after_prefill          INTEGER,
    mem_after_decode           INTEGER,
    mem_peak                   INTEGER,

    n_prompt                   INTEGER NOT NULL DEFAULT 0,
    n_gen                      INTEGER NOT NULL DEFAULT 0,
    n_depth                    INTEGER NOT NULL DEFAULT 0,
    repetitions                INTEGER NOT NULL DEFAULT 0,
    avg_tok_s                  REAL    NOT NULL DEFAULT 0,
    stddev_tok_s               REAL    NOT NULL DEFAULT 0
);
CREATE INDEX runs_model ON runs(model_sha256, started_ms);
CREATE INDEX runs_started ON runs(started_ms);

CREATE TABLE bench_samples (
    run_id                     INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    rep                        INTEGER NOT NULL,
    model_load_start_ms        INTEGER NOT NULL DEFAULT 0,
    model_load_end_ms          INTEGER NOT NULL DEFAULT 0,
    inference_start_ms         INTEGER NOT NULL DEFAULT 0,
    prompt_eval_end_ms         INTEGER NOT NULL DEFAULT 0,
    first_token_ms             INTEGER NOT NULL DEFAULT 0,
    inference_end_ms           INTEGER NOT NULL DEFAULT 0,
    aggregate_sampling_time_ms INTEGER NOT NULL DEFAULT 0,
    num_prompt_tokens          INTEGER NOT NULL DEFAULT 0,
    num_generated_tokens       INTEGER NOT NULL DEFAULT 0,
    prefill_tok_s              REAL    NOT NULL DEFAULT 0,
    decode_tok_s               REAL    NOT NULL DEFAULT 0,
    ttft_ms                    REAL    NOT NULL DEFAULT 0,
    tok_s                      REAL    NOT NULL DEFAULT 0,
    mem_peak                   INTEGER,
    PRIMARY KEY (run_id, rep)
) WITHOUT ROWID;
