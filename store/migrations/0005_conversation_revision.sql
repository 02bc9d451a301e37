-- 0005: a revision per conversation, bumped in the transaction of every
-- message insert, update and delete and every current-leaf change. A
-- window sends with the revision it saw, so two windows writing one
-- conversation at once cannot both extend it from the same place (the
-- second is refused and re-reads, instead of storing its turn as a
-- duplicate branch). Existing conversations start at 0.

ALTER TABLE conversations ADD COLUMN revision INTEGER NOT NULL DEFAULT 0;
