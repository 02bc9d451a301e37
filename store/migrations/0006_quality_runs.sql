-- 0006: runs of kind 'quality' (etchat perplexity, the app's Quality
-- view): a perplexity over a text and, against a base, the KL divergence.
-- SQLite cannot change a CHECK constraint in place, so runs is rebuilt as
-- 0004 rebuilt it (bench_samples, which cascades from runs, copied aside
-- and back; every row and id kept), with the kind admitted and the
-- figures a Quality view lists and charts as columns: ppl ± ppl_err over
-- n_scored tokens, and against a base (base_sha256 not empty) the mean
-- KLD ± its error and the same-top-token percentage. The rest of a run
-- (window, text, percentiles, the base's engine) is its config JSON.

CREATE TABLE runs_0006 AS SELECT * FROM runs;
CREATE TABLE bench_samples_0006 AS SELECT * FROM bench_samples;
DROP TABLE bench_samples;
DROP TABLE runs;

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
);
CREATE INDEX runs_model ON runs(model_sha256, started_ms);
CREATE INDEX runs_started ON runs(started_ms);

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

INSERT INTO runs (id, kind, engine, model_sha256, model_path, model_name, conversation_id, config, machine, app_version,
    started_ms, ended_ms, error, model_load_start_ms, model_load_end_ms, inference_start_ms, prompt_eval_end_ms,
    first_token_ms, inference_end_ms, aggregate_sampling_time_ms, num_prompt_tokens, num_generated_tokens,
    prefill_tok_s, decode_tok_s, ttft_ms, mem_after_load, mem_after_prefill, mem_after_decode, mem_peak,
    n_prompt, n_gen, n_depth, repetitions, avg_tok_s, stddev_tok_s, aggregate_model_execution_time_ms)
SELECT id, kind, engine, model_sha256, model_path, model_name, conversation_id, config, machine, app_version,
    started_ms, ended_ms, error, model_load_start_ms, model_load_end_ms, inference_start_ms, prompt_eval_end_ms,
    first_token_ms, inference_end_ms, aggregate_sampling_time_ms, num_prompt_tokens, num_generated_tokens,
    prefill_tok_s, decode_tok_s, ttft_ms, mem_after_load, mem_after_prefill, mem_after_decode, mem_peak,
    n_prompt, n_gen, n_depth, repetitions, avg_tok_s, stddev_tok_s, aggregate_model_execution_time_ms
FROM runs_0006;

INSERT INTO bench_samples (run_id, rep, model_load_start_ms, model_load_end_ms, inference_start_ms, prompt_eval_end_ms,
    first_token_ms, inference_end_ms, aggregate_sampling_time_ms, num_prompt_tokens, num_generated_tokens,
    prefill_tok_s, decode_tok_s, ttft_ms, tok_s, mem_peak, aggregate_model_execution_time_ms)
SELECT run_id, rep, model_load_start_ms, model_load_end_ms, inference_start_ms, prompt_eval_end_ms,
    first_token_ms, inference_end_ms, aggregate_sampling_time_ms, num_prompt_tokens, num_generated_tokens,
    prefill_tok_s, decode_tok_s, ttft_ms, tok_s, mem_peak, aggregate_model_execution_time_ms
FROM bench_samples_0006;

DROP TABLE bench_samples_0006;
DROP TABLE runs_0006;
