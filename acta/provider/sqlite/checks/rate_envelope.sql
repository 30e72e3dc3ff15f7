-- I7 rate envelope (SQLite): in any window of t seconds, a meter admitted at most
-- burst + rate x t starts.
--
-- Returns one row per window that broke the envelope (no rows: the invariant holds). The same
-- check as postgres/rate_envelope.sql; SQLite keeps instants as millisecond text, which is
-- also the precision its meters judge by, so the arithmetic below is in whole milliseconds.
--
-- Parameters, each may be NULL:
--   :meter      only this meter (NULL: every meter of the ledger);
--   :rate       starts per :period_ms, given together with :period_ms. NULL: the rate in force
--               on the meter row now (an operator override, else the declared rate);
--   :period_ms  the period of :rate, in milliseconds;
--   :burst      starts an idle meter may admit at once. NULL: what acta promises, one second's
--               worth at the rate and never less than one (acta.policy.gate.Rate.burst).
-- A rate changed by an operator during the run is not followed: pass the envelope to hold.
--
-- Starts. Admission writes an admitted event (15) whose detail names the meter it passed
-- ({"rate": name}), in the transaction that takes the meter's turn and starts the job; its
-- "at" is the instant the meter judged (the database clock the transaction read). Every
-- admission counts, also a second start of a job whose first run lost its lease.
--
-- The window arithmetic, exact and in one pass. Order a meter's starts by (at, id) and number
-- them n = 1, 2, ...; for an instant, first_n and last_n are the smallest and largest numbers
-- of the starts at that instant. The starts inside the closed window [at_i, at_j] number
-- last_n(j) - first_n(i) + 1, and the envelope allows burst + rate * (at_j - at_i) / period.
-- Multiplying by the period and moving terms around, window (i, j) is broken exactly when
--     reach(j) - base(i) > burst * period_t,  with
--     reach(j) = last_n(j) * period_t - rate * t(j),
--     base(i)  = (first_n(i) - 1) * period_t - rate * t(i),
-- where t is an instant in milliseconds since the meter's first start and period_t the
-- period in milliseconds (integers: exact, and small enough that rate * t cannot
-- overflow, even at 1000/s over years). So it is
-- enough to compare each j with the lowest base of all i up to it, a running minimum. For a
-- broken window the query then finds where it starts (the earliest i with that base) and
-- reports the starts counted and the starts allowed.
WITH params AS (
    SELECT CAST(:meter AS text) AS meter,
           CAST(:rate AS bigint) AS rate,
           CAST(:period_ms AS bigint) AS period_ms,
           CAST(:burst AS bigint) AS burst
),
envelopes AS (
    SELECT e.meter_id, e.namespace_id, e.name, e.rate, e.period_ms,
           COALESCE(e.burst, max(1, e.rate * 1000 / e.period_ms)) AS burst
    FROM (SELECT m.id AS meter_id,
                 m.namespace_id,
                 m.name,
                 COALESCE(p.rate, m.rate_override, m.rate) AS rate,
                 COALESCE(p.period_ms, m.period_override_ms, m.period_ms) AS period_ms,
                 p.burst
          FROM {schema}.meters m
          CROSS JOIN params p
          WHERE p.meter IS NULL OR m.name = p.meter) e
),
-- Admissions with the meter they passed, and their instant in whole milliseconds (strftime
-- reads the stored text exactly). MATERIALIZED: json_extract must only ever see the details
-- of admitted events, whatever order the planner evaluates conditions in.
admitted AS MATERIALIZED (
    SELECT a.id, a.at, a.job_ref, a.namespace_id, json_extract(a.detail, '$.rate') AS meter,
           CAST(strftime('%s', a.at) AS INTEGER) * 1000
               + CAST(substr(strftime('%f', a.at), 4, 3) AS INTEGER) AS epoch_ms
    FROM {schema}.events a
    WHERE a.code = 15
),
starts AS (
    SELECT v.meter_id, v.rate, v.period_ms AS period_t, v.burst, a.id, a.at, a.job_ref,
           a.epoch_ms - min(a.epoch_ms) OVER (PARTITION BY v.meter_id) AS t,
           row_number() OVER (PARTITION BY v.meter_id ORDER BY a.at, a.id) AS n
    FROM admitted a
    JOIN envelopes v ON v.namespace_id = a.namespace_id AND v.name = a.meter
),
grouped AS (
    SELECT s.*,
           min(s.n) OVER (PARTITION BY s.meter_id, s.at) AS first_n,
           max(s.n) OVER (PARTITION BY s.meter_id, s.at) AS last_n
    FROM starts s
),
scored AS (
    SELECT g.*,
           g.last_n * g.period_t - g.rate * g.t AS reach,
           (g.first_n - 1) * g.period_t - g.rate * g.t AS base
    FROM grouped g
),
judged AS (
    SELECT s.*,
           min(s.base) OVER (PARTITION BY s.meter_id ORDER BY s.n
                             ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS lowest_base
    FROM scored s
),
broken AS (
    SELECT j.*,
           (SELECT min(i.n) FROM scored i
             WHERE i.meter_id = j.meter_id AND i.n <= j.n AND i.base = j.lowest_base) AS from_n
    FROM judged j
    WHERE j.n = j.last_n
      AND j.reach - j.lowest_base > j.burst * j.period_t
)
SELECT v.name AS meter,
       v.rate,
       v.period_ms,
       v.burst,
       i.at AS window_start,
       b.at AS window_end,
       (b.t - i.t) / 1000.0 AS window_seconds,
       b.last_n - i.first_n + 1 AS starts,
       round(b.burst + b.rate * (b.t - i.t) * 1.0 / b.period_t, 3) AS allowed,
       i.job_ref AS first_ref,
       b.job_ref AS last_ref
FROM broken b
JOIN scored i ON i.meter_id = b.meter_id AND i.n = b.from_n
JOIN envelopes v ON v.meter_id = b.meter_id
ORDER BY v.name, b.at;
