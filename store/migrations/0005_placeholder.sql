-- 0005: a placeholder on branch h-ppl only, which keeps the versions
-- gapless while another branch's 0005 (conversation revisions) is not
-- merged. It changes nothing; at merge it is deleted with its frozen dump
-- (testdata/schema/v0005.sql) in favour of that branch's 0005.
SELECT 1;
