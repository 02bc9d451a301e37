-- 0003: keep ExecuTorch's aggregate_model_execution_time_ms (the forwards'
-- total), which 0002 did not store. Earlier rows read 0 (unknown).

ALTER TABLE runs ADD COLUMN aggregate_model_execution_time_ms INTEGER NOT NULL DEFAULT 0;
ALTER TABLE bench_samples ADD COLUMN aggregate_model_execution_time_ms INTEGER NOT NULL DEFAULT 0;
