-- Attempts counted right: each job's runtime.attempts is exactly the attempts its history
-- spent, and runtime.executions the runs it started.
--
-- Returns one row per job whose counters disagree with its events (no rows: it holds);
-- portable SQL. No parameters.
--
-- What it reads. Events and runtime, for application jobs (acta's "sys." jobs spend no
-- attempts by design). A run spends one attempt when it ends in failure: execution-finished
-- (11) with outcome failed (2) or timed-out (3), or lease-lost (30) for a run that had
-- started (lease-lost with an execution number; a lease lost while only dispatched spends
-- nothing: acta/policy/recovery.py). Cancellations, hand-backs, suspensions and successes
-- spend none. Every run started is one execution-started (10) event at the full audit level
-- the certification's definitions use. Too few attempts would let a poison job loop
-- forever; too many fail jobs early. Restarted jobs (70) get their attempts back and are left
-- out, and so are recurring slots (a row of schedules names them): each firing starts its
-- attempts afresh, which the schedule checks judge.
WITH spent AS (
    SELECT e.job_id,
           sum(CASE WHEN e.code = 11 AND e.outcome IN (2, 3) THEN 1
                    WHEN e.code = 30 AND e.execution IS NOT NULL THEN 1
                    ELSE 0 END) AS attempts,
           sum(CASE WHEN e.code = 10 THEN 1 ELSE 0 END) AS starts
    FROM {schema}.events e
    WHERE e.job_id IS NOT NULL
    GROUP BY e.job_id
)
SELECT j.job_ref,
       r.attempts,
       COALESCE(s.attempts, 0) AS attempts_in_events,
       r.executions,
       COALESCE(s.starts, 0) AS starts_in_events
FROM {schema}.runtime r
JOIN {schema}.jobs j ON j.id = r.job_id
JOIN {schema}.definitions d ON d.id = j.definition_id
LEFT JOIN spent s ON s.job_id = r.job_id
WHERE d.name NOT LIKE 'sys.%'
  AND NOT EXISTS (SELECT 1 FROM {schema}.schedules s WHERE s.slot_id = r.job_id)
  AND NOT EXISTS (SELECT 1 FROM {schema}.events x WHERE x.job_id = r.job_id AND x.code = 70)
  AND (r.attempts <> COALESCE(s.attempts, 0) OR r.executions <> COALESCE(s.starts, 0))
ORDER BY j.job_ref
