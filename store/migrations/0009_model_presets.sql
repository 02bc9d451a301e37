-- 0008: per-model presets (issue 40 item 2): the settings a new
-- conversation with the model starts from (system prompt, sampling,
-- capacity, KV dtype, numerics), as the app's JSON. One per model; it
-- leaves the library with its model.

CREATE TABLE model_presets (
    model_id   INTEGER PRIMARY KEY REFERENCES models(id) ON DELETE CASCADE,
    settings   TEXT    NOT NULL DEFAULT '{}' CHECK (json_valid(settings)),
    updated_ms INTEGER NOT NULL
);
