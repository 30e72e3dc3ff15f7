-- Durable sleeps, honoured: no execution of a sleeping job got past its sleep before the
-- sleep was due, and no job of the sleeping definition succeeded without having slept.
--
-- Returns one row per violation (no rows: it holds); portable SQL. Parameters: :sleep_job,
-- the definition whose jobs sleep, and :sleep_after_step, the name of the step its handler
-- runs right after the sleep (both set by the certification's sleeping workload). The
-- "problem" column says which rule broke.
--
-- What it reads. The ledger's waits (kind 1, a sleep: due_at is the instant it ends, fixed
-- when first armed and never moved by re-entry), the execution-started events (10), and the
-- witness table {schema}.witness the workload keeps beside the ledger (anvil/checks/witness.py),
-- where the step after the sleep leaves one row per body run, carrying ctx.execution.
--
-- Why the witness and not the steps row. A run that reaches the sleep ends there; so does a
-- run that re-enters while the sleep is still pending (after a lost lease): it finds the wait
-- armed and suspends again, legitimately starting before due_at. Only a run that went past
-- the sleep runs the step after it, so the rule is: an execution with a witness row of that
-- step started at or after the sleep's due_at. Instants on both sides are acta's (the
-- workers' clock, acta/clock.py), written by the same code on the same machine.
--   * woke before its sleep was due: a witness row of the step after the sleep in an
--     execution whose execution-started event is earlier than the wait's due_at;
--   * succeeded without sleeping: a succeeded job of :sleep_job with no sleep wait.
WITH sleeps AS (
    SELECT j.id AS job_id, j.job_ref, w.due_at, w.execution AS armed_in
    FROM {schema}.waits w
    JOIN {schema}.jobs j ON j.id = w.job_id
    JOIN {schema}.definitions d ON d.id = j.definition_id
    WHERE w.kind = 1 AND d.name = :sleep_job
)
SELECT s.job_ref, s.armed_in, e.execution, s.due_at, e.at AS started_at,
       'woke before its sleep was due' AS problem
FROM sleeps s
JOIN {schema}.events e ON e.job_id = s.job_id AND e.code = 10
WHERE e.at < s.due_at
  AND EXISTS (SELECT 1 FROM {schema}.witness x
              WHERE x.job_ref = s.job_ref AND x.step = :sleep_after_step
                AND x.execution = e.execution)
UNION ALL
SELECT j.job_ref, NULL, NULL, NULL, NULL, 'succeeded without sleeping'
FROM {schema}.jobs j
JOIN {schema}.definitions d ON d.id = j.definition_id
JOIN {schema}.runtime r ON r.job_id = j.id
WHERE d.name = :sleep_job
  AND r.status = 100
  AND NOT EXISTS (SELECT 1 FROM {schema}.waits w WHERE w.job_id = j.id AND w.kind = 1)
ORDER BY 1, 3
