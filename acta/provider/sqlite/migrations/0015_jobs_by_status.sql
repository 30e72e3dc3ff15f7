-- acta ledger, SQLite, migration 15: jobs by status and definition, for the dashboard.
--
-- The dashboard's overview counts open jobs per status and, for ready jobs, per definition
-- (how many, how many are due, the oldest due); its job list filters by status. Until now the
-- counts were one pass over every runtime row, so the page grew with the history and the
-- backlog. This index holds the jobs that wait (ready 10, blocked 11, suspended 30, paused 31)
-- and those that ended badly (failed 101, cancelled 102): each count is a range of it read
-- with a LIMIT, and a list of failed jobs reads the failures, not the whole history.
--
-- Left out on purpose: leased jobs (20, 21; runtime_leases has them) and succeeded ones (100),
-- so a plain job that succeeds gets one entry only, at enqueue: the claim's new row version
-- leaves the predicate, and start and settle stay out of it. Only the detours add one: a retry
-- back to ready, a lane promotion, a durable wait, a pause, a failure or a cancel.
CREATE INDEX {schema}.runtime_by_status
    ON {schema}.runtime (namespace_id, status, definition_id, next_run_at)
    WHERE status IN (10, 11, 30, 31, 101, 102);
