-- Schedules (SQLite): a firing's handler ran once in the run that recorded it, and ran in
-- another run of the same firing only where the ledger explains why it was run again.
--
-- Returns one row per (slot, instant, execution) that broke the rule (no rows: it holds). No
-- parameters. The PostgreSQL twin (postgres/schedule_witness_once.sql) says what it reads and
-- each rule; this text differs only in how it parses the fired events' message (instr and
-- substr: no regular expressions here) and compares the pending instant (milliseconds since
-- the epoch, from julianday, so ISO 8601 text and the ledger's millisecond text meet).
WITH events46 AS (
    SELECT e.id,
           e.job_id,
           e.job_ref,
           e.execution,
           substr(e.message, instr(e.message, ' fired for ') + 11) AS rest
    FROM {schema}.events e
    WHERE e.code = 46 AND instr(e.message, ' fired for ') > 0
),
fired AS (
    SELECT x.id,
           x.job_id,
           x.job_ref,
           x.execution,
           substr(x.rest, 1, instr(x.rest, ': ') - 1) AS instant,
           substr(x.rest, instr(x.rest, ': ') + 2, 9) = 'succeeded' AS succeeded
    FROM events46 x
    WHERE instr(x.rest, ': ') > 0
),
slots AS (
    SELECT j.id AS job_id, j.job_ref
    FROM {schema}.jobs j
    WHERE EXISTS (SELECT 1 FROM {schema}.schedules s WHERE s.slot_id = j.id)
       OR EXISTS (SELECT 1 FROM fired f WHERE f.job_id = j.id)
),
runs AS (
    SELECT sl.job_id, w.job_ref, w.step AS instant, w.execution, count(*) AS bodies
    FROM {schema}.witness w
    JOIN slots sl ON sl.job_ref = w.job_ref
    GROUP BY sl.job_id, w.job_ref, w.step, w.execution
),
recorded AS (
    SELECT f.job_ref,
           f.instant,
           f.execution,
           f.succeeded,
           COALESCE((SELECT r.bodies
                       FROM runs r
                      WHERE r.job_ref = f.job_ref AND r.instant = f.instant
                        AND r.execution = f.execution), 0) AS bodies
    FROM fired f
),
others AS (
    SELECT r.*,
           (SELECT max(f.execution)
              FROM fired f
             WHERE f.job_ref = r.job_ref AND f.instant = r.instant) AS fired_execution,
           EXISTS (SELECT 1
                     FROM {schema}.schedules s
                    WHERE s.slot_id = r.job_id
                      AND s.pending_at IS NOT NULL
                      AND round((julianday(s.pending_at) - 2440587.5) * 86400000.0)
                          = round((julianday(r.instant) - 2440587.5) * 86400000.0)) AS pending,
           (SELECT rt.executions FROM {schema}.runtime rt WHERE rt.job_id = r.job_id)
               AS latest_execution,
           EXISTS (SELECT 1
                     FROM {schema}.events e
                    WHERE e.job_id = r.job_id AND e.execution = r.execution
                      AND (e.code = 30 OR (e.code = 11 AND e.outcome IN (2, 3, 5))))
               AS explained
    FROM runs r
    WHERE NOT EXISTS (SELECT 1
                        FROM fired f
                       WHERE f.job_ref = r.job_ref AND f.instant = r.instant
                         AND f.execution = r.execution)
),
found AS (
    SELECT job_ref,
           instant,
           execution,
           CASE
               WHEN succeeded AND bodies = 0 THEN 'recorded without running'
               WHEN bodies > 1 THEN 'ran more than once in the run that recorded it'
           END AS problem,
           bodies,
           execution AS fired_execution
    FROM recorded
    UNION ALL
    SELECT job_ref,
           instant,
           execution,
           CASE
               WHEN fired_execution IS NOT NULL AND execution > fired_execution
                   THEN 'ran again after its firing was recorded'
               WHEN fired_execution IS NULL AND NOT pending
                   THEN 'ran for an instant that never fired'
               WHEN explained THEN NULL
               WHEN fired_execution IS NULL AND execution = latest_execution THEN NULL
               ELSE 'ran in a run that did not record it, unexplained'
           END,
           bodies,
           fired_execution
    FROM others
)
SELECT job_ref AS slot_ref, instant, execution, problem, bodies, fired_execution
FROM found
WHERE problem IS NOT NULL
ORDER BY job_ref, instant, execution;
