-- I3 legal history: each application job's events are complete and in order. Its timeline
-- opens with enqueued, every run started is closed, runs are numbered 1, 2, ... in order,
-- nothing runs after the job ended, and the last terminal event is the status it holds.
--
-- Returns one row per broken timeline rule (no rows: it holds); portable SQL. No parameters.
-- The "problem" column says which rule broke.
--
-- What it reads. Events (their ids give the commit order of a job's timeline) and runtime,
-- for jobs of application definitions (not "sys.") at the full audit level.
-- 1. The first event of a job is enqueued (1).
-- 2. Each execution-started (10) has a closing event for the same execution after it:
--    execution-finished (11) or lease-lost (30). One run may still be open: a recurring
--    slot's current run, while the slot's row is still executing under that run's epoch. A
--    slot never ends, and when its holder was killed shortly before the end, no recovery
--    came after it to write the lease-lost (a CI run stopped the fleet with the slot's lease
--    still live). certify_stuck reports any other job left leased.
-- 3. The n-th execution-started carries execution n (no run skipped, none numbered twice).
-- 4. No run event (10, 11, 12, 15, 16, 17, 24, 26, 27, 30) follows the job's terminal event
--    (20, 21, 22).
-- 5. A terminal job's last terminal event names its status (20 succeeded = 100, 21 failed =
--    101, 22 cancelled = 102), and a job with a terminal event is terminal.
WITH app AS (
    SELECT e.*
    FROM {schema}.events e
    JOIN {schema}.jobs j ON j.id = e.job_id
    JOIN {schema}.definitions d ON d.id = j.definition_id
    WHERE d.name NOT LIKE 'sys.%'
),
firsts AS (
    SELECT job_id, min(id) AS first_id FROM app GROUP BY job_id
),
numbered AS (
    SELECT job_ref, execution, row_number() OVER (PARTITION BY job_id ORDER BY id) AS n
    FROM app WHERE code = 10
),
ends AS (
    SELECT job_id, max(id) AS end_id FROM app WHERE code IN (20, 21, 22) GROUP BY job_id
)
SELECT a.job_ref, a.id AS event_id, 'first event is not enqueued' AS problem
FROM app a JOIN firsts f ON f.first_id = a.id
WHERE a.code <> 1
UNION ALL
SELECT s.job_ref, s.id, 'a run started and never closed'
FROM app s
WHERE s.code = 10
  AND NOT EXISTS (
      SELECT 1 FROM app c
      WHERE c.job_id = s.job_id AND c.execution = s.execution AND c.code IN (11, 30)
        AND c.id > s.id)
  AND NOT EXISTS (
      SELECT 1 FROM {schema}.runtime r
      JOIN {schema}.schedules sc ON sc.slot_id = r.job_id
      WHERE r.job_id = s.job_id AND r.status = 21 AND r.lease_epoch = s.epoch
        AND r.executions = s.execution)
UNION ALL
SELECT n.job_ref, n.execution, 'runs not numbered 1, 2, ... in order'
FROM numbered n
WHERE n.execution IS NULL OR n.execution <> n.n
UNION ALL
SELECT a.job_ref, a.id, 'a run event after the job ended'
FROM app a JOIN ends t ON t.job_id = a.job_id
WHERE a.id > t.end_id
  AND a.code IN (10, 11, 12, 15, 16, 17, 24, 26, 27, 30)
UNION ALL
SELECT j.job_ref, t.end_id, 'last terminal event does not match the status'
FROM ends t
JOIN {schema}.jobs j ON j.id = t.job_id
JOIN {schema}.runtime r ON r.job_id = t.job_id
JOIN app e ON e.id = t.end_id
WHERE r.status <> CASE e.code WHEN 20 THEN 100 WHEN 21 THEN 101 ELSE 102 END
UNION ALL
SELECT j.job_ref, NULL, 'terminal without a terminal event'
FROM {schema}.runtime r
JOIN {schema}.jobs j ON j.id = r.job_id
JOIN {schema}.definitions d ON d.id = j.definition_id
WHERE d.name NOT LIKE 'sys.%'
  AND r.status >= 100
  AND NOT EXISTS (SELECT 1 FROM app e WHERE e.job_id = r.job_id AND e.code IN (20, 21, 22))
ORDER BY 1, 2
