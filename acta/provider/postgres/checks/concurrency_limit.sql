-- I6 concurrency (PostgreSQL): a gate never had more runs open than the limit in force.
--
-- Returns one row per start that took a gate over its limit (no rows: the invariant holds).
-- No parameters. The SQLite twin (sqlite/concurrency_limit.sql) differs only in its JSON and
-- string functions.
--
-- Which jobs pass which gate. Every concurrency gate is a row of the gates table. A key gate
-- (kind 1) is passed by every job enqueued with that concurrency_key; a definition gate
-- (kind 2) by every job of the definition of that name enqueued without a key. The schema
-- does not keep a definition's declared concurrency_limit, so a definition gate is taken at
-- its word: once the row exists, all keyless jobs of that definition count against it.
--
-- Runs. As in lanes_overlap.sql, a run is open from its execution-started event (10) to the
-- first execution-finished (11) or lease-lost (30) event of the same job, epoch and
-- execution; event ids order them. A slot is held exactly that long: admission inserts the
-- hold in the transaction that writes the start, and whatever ends the lease deletes it in
-- the transaction that writes the end. A dead worker's run therefore keeps its slot until
-- recovery writes lease-lost, and must: that is what stops a second holder from starting.
--
-- The limit in force at a start, first match wins:
--   1. an operator's override: the latest gate-changed event (18) before the start that names
--      this gate (kind label and name in its detail) and sets a limit; an event with a null
--      limit cleared the override, and the declared limit is back;
--   2. the limit the admission itself recorded, when its admitted event (15, same job and
--      epoch) has a "limit" in its detail;
--   3. the declared limit on the gate row now (slot_limit): the limit of the latest job
--      admitted through it.
-- Step 3 is a guess the ledger forces: today admitted events do not record the limit, and a
-- key gate judges each arrival by the limit its own definition declares. A key shared by
-- definitions declaring different limits (or a limit changed by a redeploy mid-run) can
-- then show up here as a violation that admission did not see as one: read such rows with
-- the definitions of open_refs in hand.
--
-- The check is taken at each start, the only moment admission decides: count the runs of the
-- same gate open at that start (the new one included) and compare with the limit in force.
-- Lowering a limit while it is full does not stop the holders, so no row is reported for the
-- holders already running then, only for a start admitted above the new limit.
WITH gate_rows AS (
    SELECT g.id AS gate_id, g.namespace_id, g.kind, g.name, g.slot_limit, k.name AS kind_label
    FROM {schema}.gates g
    JOIN {schema}.codes k ON k.family = 'gate_kind' AND k.code = g.kind
),
-- Operator changes, parsed once. MATERIALIZED: the cast to jsonb must only ever see the
-- details of gate-changed events, whatever order the planner evaluates conditions in.
changes AS MATERIALIZED (
    SELECT c.id, c.namespace_id, c.detail::jsonb AS detail
    FROM {schema}.events c
    WHERE c.code = 18
),
-- Limits admissions recorded, parsed once (MATERIALIZED, as above).
admissions AS MATERIALIZED (
    SELECT a.job_id, a.epoch, CAST(a.detail::jsonb ->> 'limit' AS integer) AS slot_limit
    FROM {schema}.events a
    WHERE a.code = 15
),
members AS (
    SELECT j.id AS job_id, g.gate_id
    FROM {schema}.jobs j
    JOIN gate_rows g
      ON g.kind = 1 AND g.namespace_id = j.namespace_id AND g.name = j.concurrency_key
    UNION ALL
    SELECT j.id AS job_id, g.gate_id
    FROM {schema}.jobs j
    JOIN {schema}.definitions d ON d.id = j.definition_id
    JOIN gate_rows g
      ON g.kind = 2 AND g.namespace_id = j.namespace_id AND g.name = d.name
    WHERE j.concurrency_key IS NULL
),
runs AS (
    SELECT m.gate_id,
           s.job_id,
           s.job_ref,
           s.id AS started_id,
           s.at AS started_at,
           (SELECT max(x.slot_limit)
              FROM admissions x
             WHERE x.job_id = s.job_id AND x.epoch = s.epoch) AS admitted_limit,
           (SELECT min(e.id)
              FROM {schema}.events e
             WHERE e.job_id = s.job_id
               AND e.epoch = s.epoch
               AND e.execution = s.execution
               AND e.code IN (11, 30)
               AND e.id > s.id) AS ended_id
    FROM {schema}.events s
    JOIN members m ON m.job_id = s.job_id
    WHERE s.code = 10
),
at_start AS (
    SELECT b.gate_id,
           b.job_ref,
           b.started_id,
           b.started_at,
           b.admitted_limit,
           count(*) AS open_runs,
           string_agg(a.job_ref, ' ' ORDER BY a.started_id) AS open_refs
    FROM runs b
    JOIN runs a
      ON a.gate_id = b.gate_id
     AND a.started_id <= b.started_id
     AND COALESCE(a.ended_id, 9223372036854775807) > b.started_id
    GROUP BY b.gate_id, b.job_ref, b.started_id, b.started_at, b.admitted_limit
),
judged AS (
    SELECT s.*,
           g.kind_label,
           g.name,
           g.slot_limit,
           COALESCE(
               (SELECT CAST(c.detail ->> 'limit' AS integer)
                  FROM changes c
                 WHERE c.namespace_id = g.namespace_id
                   AND c.detail ->> 'gate' = g.kind_label
                   AND c.detail ->> 'name' = g.name
                   AND c.id < s.started_id
                 ORDER BY c.id DESC
                 LIMIT 1),
               s.admitted_limit,
               g.slot_limit) AS limit_in_force
    FROM at_start s
    JOIN gate_rows g ON g.gate_id = s.gate_id
)
SELECT kind_label AS gate_kind,
       name AS gate,
       limit_in_force,
       open_runs,
       job_ref AS started_ref,
       started_id AS started_event,
       started_at,
       open_refs
FROM judged
WHERE open_runs > limit_in_force
ORDER BY gate_kind, gate, started_event;
