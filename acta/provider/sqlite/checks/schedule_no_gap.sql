-- Schedules (SQLite): an interval schedule skips no instant silently. Consecutive firings
-- of a slot whose one schedule is an interval are one interval apart, or the later firing's
-- missed count accounts for every instant between them, exactly as its misfire policy says;
-- and every firing is on the schedule's grid.
--
-- Returns one row per firing that broke the rule (no rows: it holds). No parameters. The
-- PostgreSQL twin (postgres/schedule_no_gap.sql) says what it reads, the rule and what is
-- judged; this text differs only in how it parses the message (instr and substr: no regular
-- expressions here) and reads instants (milliseconds since the epoch, from julianday). The
-- instants it reports are the text of the fired events' messages.
WITH fired AS (
    SELECT e.id,
           e.job_id,
           e.job_ref,
           substr(e.message, instr(e.message, ' fired for ') + 11) AS rest,
           CASE WHEN instr(e.message, '; ') > 0
                THEN CAST(substr(e.message, instr(e.message, '; ') + 2) AS INTEGER)
                ELSE 0 END AS missed
    FROM {schema}.events e
    WHERE e.code = 46
      AND instr(e.message, ' fired for ') > 0
      AND instr(e.message, ' (triggered by an operator)') = 0
),
parsed AS (
    SELECT f.id, f.job_id, f.job_ref, f.missed,
           substr(f.rest, 1, instr(f.rest, ': ') - 1) AS fired_at
    FROM fired f
    WHERE instr(f.rest, ': ') > 0
),
intervals AS (
    SELECT s.slot_id, max(s.every_ms) AS every_ms, max(s.misfire) AS misfire
    FROM {schema}.schedules s
    GROUP BY s.slot_id
    HAVING count(*) = 1 AND max(s.every_ms) IS NOT NULL
),
timed AS (
    SELECT p.id,
           p.job_id,
           p.job_ref,
           p.fired_at,
           p.missed,
           i.every_ms,
           i.misfire,
           CAST(round((julianday(p.fired_at) - 2440587.5) * 86400000.0) AS INTEGER) AS at_ms
    FROM parsed p
    JOIN intervals i ON i.slot_id = p.job_id
    WHERE julianday(p.fired_at) IS NOT NULL
),
pairs AS (
    SELECT t.*,
           lag(t.id) OVER w AS prev_id,
           lag(t.fired_at) OVER w AS prev_at,
           lag(t.at_ms) OVER w AS prev_ms,
           lag(t.missed) OVER w AS prev_missed
    FROM timed t
    WINDOW w AS (PARTITION BY t.job_id ORDER BY t.id)
),
spans AS (
    SELECT p.*,
           -- The last instant the previous firing covered.
           p.prev_ms + CASE WHEN p.misfire = 1 THEN p.prev_missed * p.every_ms ELSE 0 END
               AS covered_ms,
           EXISTS (SELECT 1
                     FROM {schema}.events c
                    WHERE c.job_id = p.job_id AND c.code = 47
                      AND c.id > p.prev_id AND c.id < p.id) AS changed
    FROM pairs p
),
found AS (
    SELECT s.*,
           CASE
               WHEN s.at_ms % s.every_ms <> 0 THEN 'not on the interval grid'
               WHEN s.prev_id IS NULL OR s.changed THEN NULL
               WHEN s.at_ms <= s.covered_ms THEN 'not after what the previous firing covered'
               WHEN s.misfire = 1 AND s.prev_missed >= 1000 THEN NULL  -- capped: at least
               WHEN s.misfire = 1 AND s.at_ms - s.covered_ms <> s.every_ms
                   THEN 'catch-up firing does not start one interval after the last one covered'
               WHEN s.misfire = 0 AND s.missed >= 1000
                AND s.at_ms - s.prev_ms >= (s.missed + 1) * s.every_ms THEN NULL
               WHEN s.misfire = 0 AND s.at_ms - s.prev_ms <> (s.missed + 1) * s.every_ms
                   THEN 'gap not covered by the missed count'
           END AS problem
    FROM spans s
)
SELECT job_ref AS slot_ref,
       problem,
       prev_at AS previous_at,
       fired_at AS at,
       missed,
       every_ms,
       CASE WHEN prev_ms IS NULL THEN NULL ELSE (at_ms - prev_ms) / every_ms END AS intervals_apart,
       prev_id AS previous_event_id,
       id AS event_id
FROM found
WHERE problem IS NOT NULL
ORDER BY job_ref, id;
