-- Placeholder so this branch's migration 0007 has no gap; another branch owns 0006.
-- Drop this file at merge.
SELECT 1;
