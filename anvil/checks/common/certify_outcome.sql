-- I1, I2 every job ended, and ended as its workload says: each expected job is terminal,
-- in the status the run expected of it (succeeded, failed or cancelled).
--
-- Returns one row per job in another status than expected (no rows: it holds); portable SQL.
-- No parameters.
--
-- What it reads. The expected table (see certify_lost.sql) joined with jobs and runtime.
-- A job still ready, blocked, dispatched, executing, suspended or paused after the drain is a
-- job the run lost track of (I2); a job in the wrong terminal status is a wrong answer: a
-- flaky job that failed, a timed-out job that succeeded, a cancelled job that ran to success.
-- Missing jobs are certify_lost.sql's to report, so they do not show here.
SELECT x.job_ref,
       x.workload,
       x.outcome AS expected_status,
       r.status,
       r.executions,
       r.attempts
FROM {schema}.expected x
JOIN {schema}.jobs j ON j.job_ref = x.job_ref
JOIN {schema}.runtime r ON r.job_id = j.id
WHERE x.outcome <> 0
  AND r.status <> x.outcome
ORDER BY x.job_ref
