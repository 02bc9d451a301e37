-- 0008 (issue 40; numbered 0009 where another 0008 lands first): a
-- conversation the user pinned lists first, whatever its last use. Existing
-- conversations start unpinned.

ALTER TABLE conversations ADD COLUMN pinned INTEGER NOT NULL DEFAULT 0 CHECK (pinned IN (0, 1));
