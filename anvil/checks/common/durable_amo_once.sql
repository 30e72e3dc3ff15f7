-- At-most-once steps: the body of an at-most-once step ran at most once, ever, and only in
-- the execution that recorded its intent first.
--
-- Returns one row per step that broke the rule (no rows: it holds); portable SQL, the same
-- text on every dialect. No parameters. The "problem" column says which rule broke.
--
-- What it reads. The ledger's steps table and step-begun events (code 40, message = the step
-- name), and the witness table {schema}.witness that the workload keeps next to the ledger
-- (anvil/checks/witness.py): every run of a step body inserts one row (job_ref, step,
-- execution = the handler's ctx.execution) in a transaction of its own, committed before the
-- body returns. Steps judged: the at-most-once steps rows of jobs that have witness rows (a
-- ledger may hold other work whose bodies witness nothing).
--
-- The promise. An at-most-once step writes its intent (steps row in state 1, begun, and the
-- step-begun event, both under the run's lease) before its body runs. Re-entry that finds the
-- intent without an outcome marks the step interrupted (state 3) and raises instead of running
-- the body; a body that raised is never run again either. A run killed between its intent and
-- its outcome therefore costs the body, never a second one, and a run that lost its lease
-- cannot write the intent at all (the lease fence). So, for each such step:
--   * ran more than once: two or more witness rows, in any executions, by any processes;
--   * intent recorded more than once: two or more step-begun events (a second intent means a
--     second run was let through to the body);
--   * ran outside the execution that recorded its intent: the witness row's execution is not
--     the step-begun event's, so the body ran without an intent of its own run before it;
--   * completed without its body running: state 2 (completed) and no witness row;
--   * completed by another execution than its intent's: the outcome came from a run that did
--     not write the intent.
-- A begun or interrupted step with no witness row is fine: the kill came before the body's
-- witness committed (or before the body started). Needs the full audit level (the default),
-- where step-begun events are written. The first rule that applies names the row.
WITH amo AS (
    SELECT j.job_ref, st.job_id, st.name AS step, st.state, st.execution AS state_execution
    FROM {schema}.steps st
    JOIN {schema}.jobs j ON j.id = st.job_id
    WHERE st.at_most_once
      AND EXISTS (SELECT 1 FROM {schema}.witness w WHERE w.job_ref = j.job_ref)
),
judged AS (
    SELECT a.job_ref,
           a.step,
           a.state,
           a.state_execution,
           (SELECT count(*)
              FROM {schema}.witness w
             WHERE w.job_ref = a.job_ref AND w.step = a.step) AS bodies,
           (SELECT min(w.execution)
              FROM {schema}.witness w
             WHERE w.job_ref = a.job_ref AND w.step = a.step) AS body_execution,
           (SELECT count(*)
              FROM {schema}.events e
             WHERE e.job_id = a.job_id AND e.code = 40 AND e.message = a.step) AS intents,
           (SELECT min(e.execution)
              FROM {schema}.events e
             WHERE e.job_id = a.job_id AND e.code = 40 AND e.message = a.step) AS intent_execution
    FROM amo a
),
found AS (
    SELECT job_ref,
           step,
           CASE
               WHEN bodies > 1 THEN 'ran more than once'
               WHEN intents > 1 THEN 'intent recorded more than once'
               WHEN bodies = 1
                AND (intent_execution IS NULL OR body_execution <> intent_execution)
                   THEN 'ran outside the execution that recorded its intent'
               WHEN state = 2 AND bodies = 0 THEN 'completed without its body running'
               WHEN state = 2 AND state_execution <> COALESCE(intent_execution, -1)
                   THEN 'completed by another execution than its intent''s'
           END AS problem,
           state,
           bodies,
           body_execution,
           intents,
           intent_execution,
           state_execution
    FROM judged
)
SELECT job_ref, step, problem, state, bodies, body_execution, intents, intent_execution,
       state_execution
FROM found
WHERE problem IS NOT NULL
ORDER BY job_ref, step;
