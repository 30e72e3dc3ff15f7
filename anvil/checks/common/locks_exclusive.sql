-- Locks (ctx.lock): no two runs were ever inside one lock's critical section at once, unless
-- the earlier one had lost its lease (the lock rides the lease: from the moment recovery takes
-- a holder's lease back, its lock is free, whatever the stalled process still does).
--
-- Returns one row per run that entered a lock's section while another run was inside it (no
-- rows: it holds); portable SQL, the same text on every dialect. No parameters.
--
-- What it reads. The witness table {schema}.witness the workload keeps next to the ledger
-- (anvil/checks/witness.py): right after `with ctx.lock(key)` is entered, the handler inserts a
-- row with step 'lock-enter:<key>', and in a `finally` just before the block exits, a row with
-- step 'lock-exit:<key>', each committed on a connection of its own, with the handler's
-- ctx.execution. Witness ids order the rows as they were committed. And the ledger's events:
-- lease-lost (code 30) of a job and execution says that run's lease was taken back.
--
-- A run's section is open from its enter row to the first exit row of the same job, execution
-- and key after it; a run that never wrote its exit (its process died inside) stays open. A
-- later enter of the same key by another run while a section is open is a violation, unless
-- the open section's run lost its lease (then the lock was free again for the later run).
WITH witnessed AS (
    SELECT w.id, w.job_ref, w.execution,
           CASE WHEN w.step LIKE 'lock-enter:%' THEN substr(w.step, 12)
                ELSE substr(w.step, 11) END AS lock_key,
           w.step LIKE 'lock-enter:%' AS entering
    FROM {schema}.witness w
    WHERE w.step LIKE 'lock-enter:%' OR w.step LIKE 'lock-exit:%'
),
sections AS (
    SELECT e.lock_key, e.job_ref, e.execution, e.id AS entered_id,
           (SELECT min(x.id) FROM witnessed x
             WHERE NOT x.entering AND x.lock_key = e.lock_key AND x.job_ref = e.job_ref
               AND x.execution = e.execution AND x.id > e.id) AS exited_id,
           EXISTS (SELECT 1 FROM {schema}.events l
                     JOIN {schema}.jobs j ON j.id = l.job_id
                    WHERE j.job_ref = e.job_ref AND l.code = 30
                      AND l.execution = e.execution) AS lease_lost
    FROM witnessed e
    WHERE e.entering
)
SELECT b.lock_key,
       a.job_ref AS earlier_ref,
       a.execution AS earlier_execution,
       b.job_ref AS later_ref,
       b.execution AS later_execution,
       CASE WHEN a.exited_id IS NULL THEN 'entered while a live holder never left'
            ELSE 'entered before the holder left' END AS problem
FROM sections a
JOIN sections b
  ON b.lock_key = a.lock_key
 AND b.entered_id > a.entered_id
 AND (a.exited_id IS NULL OR b.entered_id < a.exited_id)
 AND NOT (b.job_ref = a.job_ref AND b.execution = a.execution)
WHERE NOT a.lease_lost
ORDER BY b.entered_id, a.entered_id;
