-- Durable steps, no re-run after recording: a completed step's body never ran again once the
-- step was recorded, and ran exactly once in the execution that recorded it.
--
-- Returns one row per (job, step) that broke the rule (no rows: it holds); portable SQL, the
-- same text on every dialect. No parameters. The "problem" column says which rule broke.
--
-- What it reads. Besides the ledger's steps table, the witness table {schema}.witness that the
-- workload keeps next to the ledger (anvil/checks/witness.py): every run of a step body
-- inserts one row (job_ref, step, execution = the handler's ctx.execution) in a transaction of
-- its own, committed before the body returns. Execution numbers are handed out by the claim,
-- one per handler run of a job, in order; the steps row keeps the execution that recorded the
-- step (a completed step is never overwritten).
--
-- Why execution numbers and not instants. A body may legitimately run more than once: its
-- run was killed after the witness row committed and before the result was recorded, or its
-- worker lost the lease and the body, still running there, was fenced off from recording. In
-- both cases the run that ran it carries an earlier execution than the one that recorded the
-- step; the fenced one may even run after the recording, yet it is no re-entry. The promise of
-- a durable step is about re-entry: once recorded, later executions take the stored result.
-- So, for a witnessed (job, step) whose steps row is not at-most-once (those are
-- durable_amo_once's), with R the execution that recorded it:
--   * ran again after it was recorded: a witness row with execution > R;
--   * ran more than once in the execution that recorded it: two witness rows with execution R
--     (a step with attempts > 1 retries its body in place, so this check wants attempts = 1);
--   * recorded by an execution in which it did not run: no witness row with execution R, so
--     the stored result is not the one a body produced in that run;
--   * ran, never recorded, yet its job succeeded: witness rows without a completed steps row
--     for a job that succeeded (it assumes the workload's bodies return normally and its
--     handlers run every step; a body that raises is recorded nowhere, by design).
-- The first rule that applies names the row.
WITH witnessed AS (
    SELECT w.job_ref, w.step, count(*) AS bodies, max(w.execution) AS last_execution
    FROM {schema}.witness w
    GROUP BY w.job_ref, w.step
),
judged AS (
    SELECT x.job_ref,
           x.step,
           x.bodies,
           x.last_execution,
           st.state,
           st.execution AS recorded_execution,
           st.completed_at,
           r.status AS job_status,
           (SELECT count(*)
              FROM {schema}.witness w
             WHERE w.job_ref = x.job_ref
               AND w.step = x.step
               AND w.execution = st.execution) AS bodies_at_recording
    FROM witnessed x
    LEFT JOIN {schema}.jobs j ON j.job_ref = x.job_ref
    LEFT JOIN {schema}.runtime r ON r.job_id = j.id
    LEFT JOIN {schema}.steps st ON st.job_id = j.id AND st.name = x.step
    WHERE st.job_id IS NULL OR NOT st.at_most_once
),
found AS (
    SELECT job_ref,
           step,
           CASE
               WHEN state = 2 AND last_execution > recorded_execution
                   THEN 'ran again after it was recorded'
               WHEN state = 2 AND bodies_at_recording > 1
                   THEN 'ran more than once in the execution that recorded it'
               WHEN state = 2 AND bodies_at_recording = 0
                   THEN 'recorded by an execution in which it did not run'
               WHEN (state IS NULL OR state <> 2) AND job_status = 100
                   THEN 'ran, never recorded, yet its job succeeded'
           END AS problem,
           bodies,
           recorded_execution,
           last_execution,
           bodies_at_recording,
           completed_at
    FROM judged
)
SELECT job_ref, step, problem, bodies, recorded_execution, last_execution,
       bodies_at_recording, completed_at
FROM found
WHERE problem IS NOT NULL
ORDER BY job_ref, step;
