-- Schedules (PostgreSQL): no scheduled instant fired twice. Each instant of a recurring slot
-- has at most one fired event, whatever the number of workers, kills and recoveries.
--
-- Returns one row per (slot, instant) that broke the rule, and one per fired event whose
-- message cannot be read (no rows: it holds). No parameters. The SQLite twin
-- (sqlite/schedule_fired_once.sql) is the same check.
--
-- What it reads. Only the events table: fired events (code 46), written on the slot's
-- timeline by the settle that closes a firing (acta.ledger.schedule.close_firing), in that
-- settle's transaction. They carry no structured detail; the message is the record, in the
-- form "<schedules> fired for <instant>: <outcome>[ (triggered by an operator)][; <n> more due
-- instant(s) covered by this run]", <instant> being the ISO 8601 text of the firing's
-- scheduled instant (ctx.firing.at). The instant is parsed out of it.
--
-- The promise (docs/guide/schedules.md, "What is guaranteed"). The slot's claim is the
-- election, the firing is recorded as pending before its handler runs, and its cursor moves
-- past the instant in the settle that writes the fired event; nothing at or before a cursor
-- fires again. So an instant of a slot is closed once: a second fired event for it means two
-- peers fired one tick, a crashed firing was fired again after it was closed, or a clock step
-- back refired. The schedules of one slot that are due together coalesce into one firing,
-- named by its earliest instant, so the rule is per slot, not per schedule name.
--
-- Left out: firings an operator triggered (they fire at the instant of the request, which
-- may repeat a scheduled one legitimately).
WITH fired AS (
    SELECT e.id,
           e.job_ref,
           e.execution,
           e.message,
           substring(e.message FROM
                     ' fired for ([0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+[+-][0-9]{2}:[0-9]{2}): ')
               AS instant_text
    FROM {schema}.events e
    WHERE e.code = 46
      AND strpos(e.message, ' (triggered by an operator)') = 0
),
readable AS (
    SELECT f.*, CAST(f.instant_text AS timestamptz) AS fired_at
    FROM fired f
    WHERE f.instant_text IS NOT NULL
)
SELECT job_ref AS slot_ref,
       'fired more than once' AS problem,
       min(instant_text) AS instant,
       count(*) AS firings,
       string_agg(CAST(id AS text), ',' ORDER BY id) AS event_ids,
       string_agg(COALESCE(CAST(execution AS text), '-'), ',' ORDER BY id) AS executions
FROM readable
GROUP BY job_ref, fired_at
HAVING count(*) > 1
UNION ALL
SELECT job_ref, 'unreadable fired event', NULL, 1, CAST(id AS text), CAST(execution AS text)
FROM fired
WHERE instant_text IS NULL
ORDER BY slot_ref, instant;
