-- I4 every extra execution is explained: a job ran its handler more than once only where the
-- ledger records why (its earlier run lost its lease, or failed, timed out, was interrupted,
-- suspended or rescheduled, or was a recurring slot's firing that re-armed it), and every
-- physical run of a handler body is a recorded run.
--
-- Returns one row per unexplained run (no rows: it holds); portable SQL. No parameters. The
-- "problem" column says which rule broke.
--
-- What it reads. Events, and the table {schema}.handler_runs that a certification run keeps
-- beside the ledger (anvil/certify/ledger.py): a certification handler inserts a row with its
-- job ref and ctx.execution as its first act, committed before it does anything else, so the
-- table counts handler runs as they really happened, including runs the ledger never settled
-- because their process was killed.
--
-- Three rules:
-- 1. Each execution-started (10) other than a job's last is closed by lease-lost (30) or by
--    execution-finished (11) with an outcome that sends the job round again: failed (2),
--    timed-out (3), interrupted (5), suspended (7), rescheduled (8); or followed by rearmed
--    (14) of the same execution: a recurring slot's firing ended and re-armed the slot, whose
--    next firing is a new run. A run closed as succeeded, cancelled or paused, or not closed
--    at all, and then followed by another run, is a duplicate execution the ledger cannot
--    explain.
-- 2. Each witnessed run (job, execution) has its execution-started event: a body running
--    under an execution number no claim recorded is a ghost run.
-- 3. No (job, execution) has two witnessed runs: one claim, one run.
WITH starts AS (
    SELECT e.job_id, e.job_ref, e.execution,
           max(e.execution) OVER (PARTITION BY e.job_id) AS last_execution
    FROM {schema}.events e
    WHERE e.code = 10 AND e.job_id IS NOT NULL
),
runs AS (
    SELECT h.job_ref, h.execution, count(*) AS n
    FROM {schema}.handler_runs h
    GROUP BY h.job_ref, h.execution
)
SELECT s.job_ref, s.execution, 'a later run followed a run that was not lost or retried'
       AS problem
FROM starts s
WHERE s.execution < s.last_execution
  AND NOT EXISTS (
      SELECT 1 FROM {schema}.events c
      WHERE c.job_id = s.job_id AND c.execution = s.execution
        AND (c.code = 30 OR (c.code = 11 AND c.outcome IN (2, 3, 5, 7, 8) OR c.code = 14)))
UNION ALL
SELECT r.job_ref, r.execution, 'a witnessed run has no execution-started event'
FROM runs r
WHERE NOT EXISTS (
    SELECT 1 FROM {schema}.events e
    WHERE e.job_ref = r.job_ref AND e.code = 10 AND e.execution = r.execution)
UNION ALL
SELECT r.job_ref, r.execution, 'one execution ran its handler more than once'
FROM runs r
WHERE r.n > 1
ORDER BY 1, 2
