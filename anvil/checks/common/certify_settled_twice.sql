-- I3, I4 no execution settled twice: each handler run of a job is closed once, and each job
-- reaches a terminal status once.
--
-- Returns one row per violation (no rows: it holds); portable SQL. No parameters. The
-- "problem" column says which rule broke.
--
-- What it reads. Events only. A run (execution-started, code 10) is closed by exactly one of
-- execution-finished (11), written by its worker's settle, or lease-lost (30), written by the
-- recovery that took the lease back. Both are compare-and-set writes on the runtime row's
-- lease epoch, so at most one of them can win for one run: two closing events for one
-- (job, execution) mean two writers both passed the fence. Likewise the terminal events
-- succeeded (20), failed (21) and cancelled (22) are written once, by the transition that
-- made the job terminal; a second one means a terminal row was changed again. Restarted
-- jobs (restarted, 70) legitimately end twice and are left out; a certification run never
-- restarts a job.
WITH closings AS (
    SELECT e.job_id, e.job_ref, e.execution, count(*) AS n
    FROM {schema}.events e
    WHERE e.code IN (11, 30) AND e.execution IS NOT NULL AND e.job_id IS NOT NULL
    GROUP BY e.job_id, e.job_ref, e.execution
),
endings AS (
    SELECT e.job_id, e.job_ref, count(*) AS n
    FROM {schema}.events e
    WHERE e.code IN (20, 21, 22) AND e.job_id IS NOT NULL
    GROUP BY e.job_id, e.job_ref
)
SELECT c.job_ref, c.execution, c.n AS events, 'one run closed more than once' AS problem
FROM closings c
WHERE c.n > 1
UNION ALL
SELECT t.job_ref, NULL, t.n, 'terminal status reached more than once'
FROM endings t
WHERE t.n > 1
  AND NOT EXISTS (SELECT 1 FROM {schema}.events r WHERE r.job_id = t.job_id AND r.code = 70)
ORDER BY 1, 2
