-- Schedules (PostgreSQL): an interval schedule skips no instant silently. Consecutive
-- firings of a slot whose one schedule is an interval are one interval apart, or the later
-- firing's missed count accounts for every instant between them, exactly as its misfire
-- policy says; and every firing is on the schedule's grid.
--
-- Returns one row per firing that broke the rule (no rows: it holds). No parameters. The
-- SQLite twin (sqlite/schedule_no_gap.sql) is the same check.
--
-- What it reads. The slot's fired events (code 46; see schedule_fired_once.sql for their
-- message, from which the instant and the missed count are parsed), its schedule-changed
-- events (code 47), and the schedules table for the interval (every_ms) and the misfire
-- policy (0 skip, 1 catch_up) in force now.
--
-- The promise (docs/guide/schedules.md, "When the schedule is late"; the policy in
-- acta.policy.schedule.due). An interval fires on a grid anchored at the Unix epoch, so a
-- firing's instant is a whole number of intervals since the epoch. A late schedule fires
-- once: with skip, for the latest due instant, dropping the older ones and counting them in
-- missed; with catch_up, for the oldest due instant, covering missed more instants up to the
-- latest. The cursor moves past what the firing covered, and the next firing starts after
-- it. So, for two consecutive firings A then B (fired-event order) of one slot:
--   * skip:     B.at - A.at = (B.missed + 1) intervals;
--   * catch_up: B.at - (A.at + A.missed intervals) = 1 interval;
--   * and B.at is later than what A covered, whatever the policy.
-- A missed count of 1000 means "at least 1000" (the count is capped), so then the gap may be
-- wider. A skip firing with a missed count therefore never hides a silently lost instant: an
-- instant that neither fired nor was counted shows up as a gap the count does not cover.
--
-- Judged: slots with exactly one schedule, an interval (coalesced firings of several
-- schedules name the earliest instant and sum their missed counts, which this rule cannot
-- split). Not judged: firings an operator triggered; a pair of firings with a
-- schedule-changed event of the slot between them (a pause, resume, trigger or override
-- legitimately moves the cursor or the grid); the first firing (it follows the instant the
-- schedule was armed, which no event records). The interval and the policy are those in force
-- now: a redeclaration by a deploy during the run, which writes no event, is not followed.
-- The instants it reports are the text of the fired events' messages.
WITH fired AS (
    SELECT e.id,
           e.job_id,
           e.job_ref,
           substring(e.message FROM
                     ' fired for ([0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+[+-][0-9]{2}:[0-9]{2}): ')
               AS fired_at,
           COALESCE(CAST(substring(e.message FROM '; ([0-9]+) more due instant') AS bigint), 0)
               AS missed
    FROM {schema}.events e
    WHERE e.code = 46
      AND strpos(e.message, ' (triggered by an operator)') = 0
),
intervals AS (
    SELECT s.slot_id, max(s.every_ms) AS every_ms, max(s.misfire) AS misfire
    FROM {schema}.schedules s
    GROUP BY s.slot_id
    HAVING count(*) = 1 AND max(s.every_ms) IS NOT NULL
),
timed AS (
    SELECT f.id,
           f.job_id,
           f.job_ref,
           f.fired_at,
           f.missed,
           i.every_ms,
           i.misfire,
           CAST(round(extract(epoch FROM CAST(f.fired_at AS timestamptz)) * 1000) AS bigint)
               AS at_ms
    FROM fired f
    JOIN intervals i ON i.slot_id = f.job_id
    WHERE f.fired_at IS NOT NULL
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
           -- The last instant the previous firing covered, and the gap after it in intervals.
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
               WHEN mod(s.at_ms, s.every_ms) <> 0 THEN 'not on the interval grid'
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
