-- 0007: the CPU engine's numerics mode of each run (issue 38): 'exact'
-- (fp32 products, the reference) or 'fast' (8-bit activations for
-- quantized weights). Rows from before read as exact, which they were.

ALTER TABLE runs ADD COLUMN numerics TEXT NOT NULL DEFAULT 'exact' CHECK (numerics IN ('exact', 'fast'));
