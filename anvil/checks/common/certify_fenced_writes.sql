-- I4 fencing: no write by a worker that lost its lease changed a row. No event of a job
-- carries an older lease epoch than an event written before it, and the runtime row's epoch
-- is never behind its events'.
--
-- Returns one row per stale write (no rows: it holds); portable SQL. No parameters.
--
-- What it reads. Events only, plus runtime.lease_epoch. Each claim gives the runtime row a
-- new, higher lease epoch, and every worker write (start, settle, step, promotion) is a
-- compare-and-set on it, written in the same transaction as its events, which carry the
-- writer's epoch. So along a job's timeline (event ids follow commit order) epochs never go
-- down: a write under epoch 3 after one under epoch 4 is a write by the fenced holder of
-- epoch 3, which the fence should have refused. Two codes are left out: write-fenced (31) is
-- the record of exactly such a refusal, written on purpose under the refused epoch, and
-- lease-lost (30) names the lapsed epoch, always the latest at the time.
-- The epoch only moves on at the next claim, so a write slipped in between recovery and that
-- claim would pass the first rule. The second one catches it: after a lease-lost under epoch
-- e, no worker's event (a run's start, end, steps, settle) may carry e again. Recovery's own
-- events in that transaction (failed, an alert) and an operator's are not worker codes.
WITH stamped AS (
    SELECT e.id,
           e.job_id,
           e.job_ref,
           e.code,
           e.execution,
           e.epoch,
           max(e.epoch) OVER (
               PARTITION BY e.job_id ORDER BY e.id
               ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING
           ) AS newest_before
    FROM {schema}.events e
    WHERE e.job_id IS NOT NULL
      AND e.epoch IS NOT NULL
      AND e.code NOT IN (30, 31)
)
SELECT s.job_ref, s.id AS event_id, s.code, s.execution, s.epoch, s.newest_before,
       'written under an older epoch than an earlier event' AS problem
FROM stamped s
WHERE s.epoch < s.newest_before
UNION ALL
SELECT w.job_ref, w.id, w.code, w.execution, w.epoch, l.epoch,
       'written by the holder after recovery took its lease'
FROM {schema}.events l
JOIN {schema}.events w ON w.job_id = l.job_id AND w.epoch = l.epoch AND w.id > l.id
WHERE l.code = 30
  AND w.code IN (10, 11, 12, 13, 14, 15, 16, 17, 20, 24, 27, 40, 41, 42, 43, 44, 46)
UNION ALL
SELECT j.job_ref, NULL, NULL, NULL, r.lease_epoch, max(e.epoch),
       'runtime row behind the epochs of its events'
FROM {schema}.runtime r
JOIN {schema}.jobs j ON j.id = r.job_id
JOIN {schema}.events e ON e.job_id = r.job_id AND e.epoch IS NOT NULL
GROUP BY j.job_ref, r.lease_epoch
HAVING r.lease_epoch < max(e.epoch)
ORDER BY 1, 2
