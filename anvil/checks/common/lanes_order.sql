-- I5 lanes, order: each lane ran its members in enqueue order, one after another.
--
-- Returns one row per problem found (no rows: the invariant holds); portable SQL, the same
-- text on every dialect. No parameters. The "problem" column says which rule broke.
--
-- What it reads, per laned job (runtime.lane_id / lane_seq): the id of its enqueued event
-- (code 1), of its first promoted event (17, written when it becomes the lane's head), of its
-- first execution-started event (10), and of its first terminal event: succeeded (20),
-- failed (21) or cancelled (22). Event ids order the ledger exactly (see lanes_overlap.sql:
-- ids are handed out at insert time by an uncached sequence, and a later transaction only
-- sees an earlier one's rows after its commit).
--
-- Rules, for two members A and B of one lane with A's position (lane_seq) before B's:
--   * enqueued out of order: B's enqueued event comes before A's. Positions are booked under
--     the lane row's lock, so enqueue order, commit order and positions must agree;
--   * started before an earlier member started: B's first start precedes A's (the literal
--     "first starts follow lane order");
--   * started before an earlier member ended: B started while A had no terminal event yet.
--     This is the stronger rule behind the first: a retry, a delay or a lost lease keeps A at
--     the head, so B may only start once A succeeded, failed for good or was cancelled;
--   * promoted before an earlier member ended: B became head while A was unfinished;
-- and for one member B on its own:
--   * started before it was promoted: a blocked member was claimed;
--   * promoted more than once: the lane handed it the head twice;
--   * shares a position: two members hold the same lane_seq, so their order is undefined.
-- A member that never started (cancelled while waiting) breaks nothing by itself; its
-- terminal event is what lets the members behind it go. Needs the full audit level on laned
-- definitions (the default), where every one of these events is written.
WITH members AS (
    SELECT r.lane_id,
           r.lane_seq,
           r.job_id,
           j.job_ref,
           min(CASE WHEN e.code = 1 THEN e.id END)              AS enqueued_id,
           min(CASE WHEN e.code = 17 THEN e.id END)             AS promoted_id,
           sum(CASE WHEN e.code = 17 THEN 1 ELSE 0 END)         AS promotions,
           min(CASE WHEN e.code = 10 THEN e.id END)             AS started_id,
           min(CASE WHEN e.code IN (20, 21, 22) THEN e.id END)  AS ended_id
    FROM {schema}.runtime r
    JOIN {schema}.jobs j ON j.id = r.job_id
    LEFT JOIN {schema}.events e
      ON e.job_id = r.job_id AND e.code IN (1, 10, 17, 20, 21, 22)
    WHERE r.lane_id IS NOT NULL
    GROUP BY r.lane_id, r.lane_seq, r.job_id, j.job_ref
),
pairs AS (
    SELECT a.lane_id,
           CASE
               WHEN b.lane_seq = a.lane_seq THEN 'shares a position'
               WHEN b.enqueued_id < a.enqueued_id THEN 'enqueued out of order'
               WHEN b.started_id < a.started_id THEN 'started before an earlier member started'
               WHEN b.started_id < COALESCE(a.ended_id, 9223372036854775807)
                   THEN 'started before an earlier member ended'
               ELSE 'promoted before an earlier member ended'
           END AS problem,
           a.job_ref AS earlier_ref,
           a.lane_seq AS earlier_seq,
           a.started_id AS earlier_started_event,
           a.ended_id AS earlier_ended_event,
           b.job_ref AS later_ref,
           b.lane_seq AS later_seq,
           b.promoted_id AS later_promoted_event,
           b.started_id AS later_started_event
    FROM members a
    JOIN members b
      ON b.lane_id = a.lane_id
     AND (b.lane_seq > a.lane_seq OR (b.lane_seq = a.lane_seq AND b.job_id > a.job_id))
    WHERE b.lane_seq = a.lane_seq
       OR b.enqueued_id < a.enqueued_id
       OR b.started_id < COALESCE(a.ended_id, 9223372036854775807)
       OR b.promoted_id < COALESCE(a.ended_id, 9223372036854775807)
),
singles AS (
    SELECT b.lane_id,
           CASE
               WHEN b.started_id < COALESCE(b.promoted_id, 9223372036854775807)
                   THEN 'started before it was promoted'
               ELSE 'promoted more than once'
           END AS problem,
           CAST(NULL AS text) AS earlier_ref,
           CAST(NULL AS bigint) AS earlier_seq,
           CAST(NULL AS bigint) AS earlier_started_event,
           CAST(NULL AS bigint) AS earlier_ended_event,
           b.job_ref AS later_ref,
           b.lane_seq AS later_seq,
           b.promoted_id AS later_promoted_event,
           b.started_id AS later_started_event
    FROM members b
    WHERE b.started_id < COALESCE(b.promoted_id, 9223372036854775807)
       OR b.promotions > 1
)
SELECT l.name AS lane, x.problem, x.earlier_ref, x.earlier_seq, x.earlier_started_event,
       x.earlier_ended_event, x.later_ref, x.later_seq, x.later_promoted_event,
       x.later_started_event
FROM (SELECT * FROM pairs UNION ALL SELECT * FROM singles) x
JOIN {schema}.lanes l ON l.id = x.lane_id
ORDER BY l.name, x.later_seq, CASE WHEN x.earlier_seq IS NULL THEN 1 ELSE 0 END, x.earlier_seq;
