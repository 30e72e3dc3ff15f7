-- Schedules (PostgreSQL): a firing's handler ran once in the run that recorded it, and ran
-- in another run of the same firing only where the ledger explains why it was run again.
--
-- Returns one row per (slot, instant, execution) that broke the rule (no rows: it holds). No
-- parameters. The SQLite twin (sqlite/schedule_witness_once.sql) is the same check. The
-- "problem" column says which rule broke; the first rule that applies names the row.
--
-- What it reads. The slot's fired events (code 46; see schedule_fired_once.sql for their
-- message), lease-lost events (30) and execution-finished events (11, with their outcome),
-- the schedules and runtime rows of the slot, and the witness table {schema}.witness the
-- workload keeps next to the ledger (anvil/checks/witness.py): each run of a scheduled
-- handler inserts one row, in a transaction of its own committed before the handler returns,
-- with job_ref = the slot's ref (ctx.job), step = the scheduled instant as ISO 8601 text
-- (ctx.firing.at.isoformat(), the very text of the fired event's message) and execution =
-- ctx.execution. Witness rows of jobs that are not slots are not judged here.
--
-- The promise (docs/guide/schedules.md, "What is guaranteed"). A firing is recorded as
-- pending before its handler runs; the settle that ends the run writes the fired event (with
-- the run's execution) and moves the cursor, in one transaction. A run that dies, times out,
-- fails or is stopped leaves the firing pending, and the next run of the slot makes the very
-- same firing (same instant): the handler may run again for that instant (at-least-once), but
-- only after a run that did not close it. So, for each instant of a slot:
--   * recorded without running: a fired event whose outcome is succeeded, and no witness
--     row of its execution;
--   * ran more than once in the run that recorded it: two witness rows of that execution;
--   * ran again after its firing was recorded: a witness row of a later execution than the
--     fired event's (a closed firing was fired again);
--   * ran for an instant that never fired: witness rows, no fired event, and the slot has no
--     pending firing for that instant either;
--   * ran in a run that did not record it, unexplained: a witness row of another execution
--     (before the recording one, or of a firing still pending other than the slot's latest
--     run) with neither a lease-lost event of that execution (its worker died or stalled and
--     recovery took the slot back) nor an execution-finished event of it whose outcome left
--     the firing open (2 failed, 3 timed out, 5 interrupted: a retry of the same firing).
-- Firings an operator triggered are judged alike (their instant is the trigger's).
WITH fired AS (
    SELECT e.id,
           e.job_id,
           e.job_ref,
           e.execution,
           substring(e.message FROM
                     ' fired for ([0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+[+-][0-9]{2}:[0-9]{2}): ')
               AS instant,
           substring(e.message FROM ' fired for [^ ]+: ([a-z-]+)') = 'succeeded' AS succeeded
    FROM {schema}.events e
    WHERE e.code = 46
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
    WHERE f.instant IS NOT NULL
),
others AS (
    SELECT r.*,
           (SELECT max(f.execution)
              FROM fired f
             WHERE f.job_ref = r.job_ref AND f.instant = r.instant) AS fired_execution,
           EXISTS (SELECT 1
                     FROM {schema}.schedules s
                    WHERE s.slot_id = r.job_id
                      AND s.pending_at = CAST(r.instant AS timestamptz)) AS pending,
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
