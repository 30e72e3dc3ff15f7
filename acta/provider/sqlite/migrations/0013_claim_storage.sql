-- acta ledger, SQLite, migration 13: nothing to do on SQLite.
--
-- The PostgreSQL migration of the same number sets storage parameters on the hot tables
-- (fillfactor, per-table autovacuum). SQLite has neither: it updates a row in place within its
-- b-tree page, and the claim index drops a claimed row's entry in the same write, so there
-- are no dead versions to clean. The file keeps the two dialects' migration numbers in step.
SELECT 1;
