-- Signals, received once: each job of the signalled definition was signalled once, its
-- effect (the step it runs past the wait) saw the payload the producer sent it, and it did
-- not succeed without being signalled or without its effect.
--
-- Returns one row per violation (no rows: it holds); portable SQL. Parameters: :signal_job,
-- the definition whose jobs wait; :signal_name, the signal they wait for; :signal_step, the
-- step whose body records what the wait returned (all set by the certification's signalled
-- workload, anvil/certify/workloads/signalled.py). The "problem" column says which rule broke.
--
-- What it reads. The signalled events (25, message: the signal's name), written in the
-- transaction that keeps the signal (a second send of one name is refused and writes none);
-- runtime for the job's status; and the witness table {schema}.witness kept beside the ledger
-- (anvil/checks/witness.py), where the effect's body leaves one row per run whose token is
-- the payload the handler's wait returned. The producer sends each job the payload
-- 'for <job ref>', so a row with any other token is a payload from elsewhere (another job's
-- signal, a stale one). That the effect ran once, unless a lost run explains another, is
-- durable_steps_once's to judge over the same rows.
--   * signalled more than once: two signalled events of :signal_name for one job;
--   * succeeded without being signalled: a succeeded job with no signalled event;
--   * its effect saw another payload: a witness row of :signal_step whose token is not the
--     payload sent to that job;
--   * succeeded without its effect: a succeeded job with no witness row of :signal_step.
WITH waiting AS (
    SELECT j.id AS job_id, j.job_ref, r.status
    FROM {schema}.jobs j
    JOIN {schema}.definitions d ON d.id = j.definition_id
    JOIN {schema}.runtime r ON r.job_id = j.id
    WHERE d.name = :signal_job
),
sent AS (
    SELECT e.job_id, count(*) AS signals
    FROM {schema}.events e
    WHERE e.code = 25 AND e.message = :signal_name
    GROUP BY e.job_id
)
SELECT w.job_ref, s.signals, CAST(NULL AS text) AS token, 'signalled more than once' AS problem
FROM waiting w
JOIN sent s ON s.job_id = w.job_id
WHERE s.signals > 1
UNION ALL
SELECT w.job_ref, 0, NULL, 'succeeded without being signalled'
FROM waiting w
WHERE w.status = 100
  AND NOT EXISTS (SELECT 1 FROM sent s WHERE s.job_id = w.job_id)
UNION ALL
SELECT w.job_ref, NULL, x.token, 'its effect saw another payload'
FROM waiting w
JOIN {schema}.witness x ON x.job_ref = w.job_ref AND x.step = :signal_step
WHERE x.token <> 'for ' || w.job_ref
UNION ALL
SELECT w.job_ref, NULL, NULL, 'succeeded without its effect'
FROM waiting w
WHERE w.status = 100
  AND NOT EXISTS (SELECT 1 FROM {schema}.witness x
                  WHERE x.job_ref = w.job_ref AND x.step = :signal_step)
ORDER BY 1, 4
