-- I5 lanes, exclusion: two members of one lane never have executions open at the same time.
--
-- Returns one row per offending pair (no rows: the invariant holds); portable SQL, the same
-- text on every dialect. No parameters.
--
-- What it reads. Every run of a handler leaves an execution-started event (code 10) carrying
-- the job, its execution number and the lease epoch it ran under. The run is over, as far as
-- the ledger is concerned, at the first later event of the same job, epoch and execution that
-- is either execution-finished (11) or lease-lost (30). A run with neither is still open: the
-- job is running now, or its worker died and recovery has not taken the lease back yet. That
-- is deliberate. A worker killed with SIGKILL keeps its run open in the ledger until recovery
-- writes lease-lost, and the lane must not move on before that write (I4 allows the handler
-- to keep going physically after its lease was lost; it does not allow the ledger to record
-- two members running at once). Lane membership comes from runtime.lane_id / lane_seq.
--
-- Why event ids and not timestamps. On PostgreSQL an event's "at" is its transaction's start
-- time, so a transaction that began before another committed can carry an earlier "at" even
-- though it ran later. Event ids come from an identity sequence without a cache, handed out at
-- insert time: the run that promoted a member wrote its closing event before committing, and
-- the member's start was inserted after that commit was visible, so "closed before the next
-- start" is exactly "smaller id". On SQLite writers are serialized and ids follow commits.
--
-- The check: pair every run A of a laned job with every run B of another member of the same
-- lane that started after A (by id) while A was still open. Any such pair is a violation.
-- It needs the full audit level on laned definitions (the default), where every start is
-- recorded; lease-lost is written at every level.
WITH runs AS (
    SELECT r.lane_id,
           r.lane_seq,
           s.job_id,
           s.job_ref,
           s.execution,
           s.epoch,
           s.worker_id,
           s.id AS started_id,
           s.at AS started_at,
           (SELECT min(e.id)
              FROM {schema}.events e
             WHERE e.job_id = s.job_id
               AND e.epoch = s.epoch
               AND e.execution = s.execution
               AND e.code IN (11, 30)
               AND e.id > s.id) AS ended_id
    FROM {schema}.events s
    JOIN {schema}.runtime r ON r.job_id = s.job_id
    WHERE s.code = 10
      AND r.lane_id IS NOT NULL
)
SELECT l.name          AS lane,
       a.job_ref       AS open_ref,
       a.lane_seq      AS open_seq,
       a.execution     AS open_execution,
       wa.incarnation  AS open_worker,
       a.started_id    AS open_started_event,
       a.started_at    AS open_started_at,
       a.ended_id      AS open_ended_event,
       b.job_ref       AS started_ref,
       b.lane_seq      AS started_seq,
       b.execution     AS started_execution,
       wb.incarnation  AS started_worker,
       b.started_id    AS started_event,
       b.started_at    AS started_at
FROM runs a
JOIN runs b
  ON b.lane_id = a.lane_id
 AND b.job_id <> a.job_id
 AND b.started_id > a.started_id
 AND b.started_id < COALESCE(a.ended_id, 9223372036854775807)
JOIN {schema}.lanes l        ON l.id = a.lane_id
LEFT JOIN {schema}.workers wa ON wa.id = a.worker_id
LEFT JOIN {schema}.workers wb ON wb.id = b.worker_id
ORDER BY l.name, b.started_id, a.started_id;
