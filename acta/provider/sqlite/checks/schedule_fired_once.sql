-- Schedules (SQLite): no scheduled instant fired twice. Each instant of a recurring slot has
-- at most one fired event, whatever the number of workers, kills and recoveries.
--
-- Returns one row per (slot, instant) that broke the rule, and one per fired event whose
-- message cannot be read (no rows: it holds). No parameters. The PostgreSQL twin
-- (postgres/schedule_fired_once.sql) says what it reads and why the rule holds; this text
-- differs only in how it takes the instant out of the message (SQLite has no regular
-- expressions: the text between " fired for " and the next ": ") and how it compares
-- instants (milliseconds since the epoch, from julianday, so "+00:00" and fractions of a
-- second are read alike).
--
-- Left out: firings an operator triggered (they fire at the instant of the request, which
-- may repeat a scheduled one legitimately).
WITH fired AS (
    SELECT e.id,
           e.job_ref,
           e.execution,
           substr(e.message, instr(e.message, ' fired for ') + 11) AS rest
    FROM {schema}.events e
    WHERE e.code = 46
      AND instr(e.message, ' fired for ') > 0
      AND instr(e.message, ' (triggered by an operator)') = 0
),
parsed AS (
    SELECT f.id,
           f.job_ref,
           f.execution,
           CASE WHEN instr(f.rest, ': ') > 0
                THEN substr(f.rest, 1, instr(f.rest, ': ') - 1) END AS instant_text
    FROM fired f
),
readable AS (
    SELECT p.*,
           CAST(round((julianday(p.instant_text) - 2440587.5) * 86400000.0) AS INTEGER)
               AS instant_ms
    FROM parsed p
    WHERE julianday(p.instant_text) IS NOT NULL
),
unreadable AS (
    SELECT e.id, e.job_ref, e.execution
    FROM {schema}.events e
    WHERE e.code = 46
      AND instr(e.message, ' (triggered by an operator)') = 0
      AND e.id NOT IN (SELECT id FROM readable)
)
SELECT job_ref AS slot_ref,
       'fired more than once' AS problem,
       min(instant_text) AS instant,
       count(*) AS firings,
       group_concat(id, ',') AS event_ids,
       group_concat(COALESCE(execution, '-'), ',') AS executions
FROM (SELECT * FROM readable ORDER BY id)
GROUP BY job_ref, instant_ms
HAVING count(*) > 1
UNION ALL
SELECT job_ref, 'unreadable fired event', NULL, 1, CAST(id AS TEXT), CAST(execution AS TEXT)
FROM unreadable
ORDER BY slot_ref, instant;
