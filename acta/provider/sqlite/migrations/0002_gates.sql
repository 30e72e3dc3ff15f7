-- acta ledger, SQLite, migration 2: the gates (lanes, concurrency slots, rate meters).
--
-- Every gate is a row that the transaction passing it locks (reliability rule 4): a lane row
-- for enqueue and promotion, a gate row for admission to concurrency slots, a meter row for
-- admission at a rate. Locks are always taken in one order: job, lane, gate, meter.

-- A lane: an ordered line of jobs in one namespace. Its members carry (lane_id, lane_seq);
-- only the head is ready, the rest are blocked (status 11) and outside the claim scan.
CREATE TABLE {schema}.lanes (
    id           INTEGER  PRIMARY KEY,
    namespace_id INTEGER  NOT NULL REFERENCES {schema}.namespaces (id),
    name         TEXT     NOT NULL,
    -- The position the latest enqueue took; the next member takes last_seq + 1.
    last_seq     INTEGER  NOT NULL CHECK (last_seq >= 1),
    -- The member at the front (ready or running), NULL while the lane has nobody unfinished.
    head_job_id  INTEGER,
    created_at   TEXT     NOT NULL,
    UNIQUE (namespace_id, name)
);

-- A concurrency gate: a key named by enqueues (kind 1), or a definition with a limit (kind 2).
-- Holders are rows in gate_holds; the gate row is what admission locks before counting them.
CREATE TABLE {schema}.gates (
    id             INTEGER PRIMARY KEY,
    namespace_id   INTEGER NOT NULL REFERENCES {schema}.namespaces (id),
    kind           INTEGER NOT NULL,
    name           TEXT    NOT NULL,
    -- The limit the latest admission declared (the definition's concurrency_limit, or 1).
    slot_limit     INTEGER NOT NULL CHECK (slot_limit >= 1),
    -- An operator's limit, in force over every declared one while set.
    limit_override INTEGER CHECK (limit_override IS NULL OR limit_override >= 1),
    version        INTEGER NOT NULL DEFAULT 0,
    updated_at     TEXT    NOT NULL,
    UNIQUE (namespace_id, kind, name)
);

-- Who holds a slot: one row per admitted job, deleted by the transition that ends its lease
-- (settle, hand-back, recovery), so a failing or lost job releases its slot.
CREATE TABLE {schema}.gate_holds (
    job_id  INTEGER PRIMARY KEY REFERENCES {schema}.jobs (id) ON DELETE CASCADE,
    gate_id INTEGER NOT NULL REFERENCES {schema}.gates (id),
    epoch   INTEGER NOT NULL,
    since   TEXT    NOT NULL
);

CREATE INDEX {schema}.gate_holds_by_gate ON {schema}.gate_holds (gate_id);

-- A rate meter: rate starts per period_ms, shared by the definitions naming it. Two horizons
-- (see acta/policy/gate.py): booked_until hands out turns in arrival order, admitted_until
-- spreads the starts that really happen. NULL until first used.
CREATE TABLE {schema}.meters (
    id                 INTEGER PRIMARY KEY,
    namespace_id       INTEGER NOT NULL REFERENCES {schema}.namespaces (id),
    name               TEXT    NOT NULL,
    rate               INTEGER NOT NULL CHECK (rate >= 1),
    period_ms          INTEGER NOT NULL CHECK (period_ms > 0),
    -- An operator's rate, in force over the declared one while set (both or neither).
    rate_override      INTEGER CHECK (rate_override IS NULL OR rate_override >= 1),
    period_override_ms INTEGER CHECK (period_override_ms IS NULL OR period_override_ms > 0),
    booked_until       TEXT,
    admitted_until     TEXT,
    version            INTEGER NOT NULL DEFAULT 0,
    updated_at         TEXT    NOT NULL,
    UNIQUE (namespace_id, name),
    CHECK ((rate_override IS NULL) = (period_override_ms IS NULL))
);

-- The gates a definition declares, as its latest registration stated them: the limit its own
-- gate has (NULL: none) and the meter its rate feeds (NULL: no rate). Operator overrides are
-- refused for a gate or meter no definition declares, since no admission would consult them.
ALTER TABLE {schema}.definitions ADD COLUMN concurrency_limit INTEGER
    CHECK (concurrency_limit IS NULL OR concurrency_limit >= 1);
ALTER TABLE {schema}.definitions ADD COLUMN meter TEXT;

-- The concurrency key a job was enqueued with: part of its identity, never changed.
ALTER TABLE {schema}.jobs ADD COLUMN concurrency_key TEXT;

-- Lane membership, and what admission needs on the hot row: gated says the claim must leave
-- the job dispatched for admission (its enqueue named a key); ticket_at is the meter turn the
-- job booked and comes back for.
ALTER TABLE {schema}.runtime ADD COLUMN lane_id INTEGER REFERENCES {schema}.lanes (id);
ALTER TABLE {schema}.runtime ADD COLUMN lane_seq INTEGER;
ALTER TABLE {schema}.runtime ADD COLUMN gated INTEGER NOT NULL DEFAULT 0;
ALTER TABLE {schema}.runtime ADD COLUMN ticket_at TEXT;

-- Promotion finds the next member in lane order; blocked rows are never in the claim scan.
CREATE INDEX {schema}.runtime_lane_line
    ON {schema}.runtime (lane_id, lane_seq) WHERE status = 11;

DROP VIEW {schema}.jobs_view;

-- jobs_view again, now with each job's lane, its place in it and its concurrency key.
CREATE VIEW {schema}.jobs_view AS
SELECT
    j.job_ref,
    n.name                AS namespace,
    d.name                AS job_name,
    s.name                AS status,
    r.status              AS status_code,
    r.priority,
    r.attempts,
    d.max_attempts,
    r.executions,
    j.created_at,
    r.next_run_at,
    r.updated_at,
    CASE WHEN r.status >= 100 THEN r.updated_at END AS finished_at,
    w.incarnation         AS lease_worker,
    w.host                AS lease_host,
    r.lease_expires_at,
    r.lease_epoch,
    j.dedup_key,
    j.correlation_key,
    l.name                AS lane,
    r.lane_seq,
    j.concurrency_key,
    -- A sorted JSON array (NULL without tags), so a tag containing a comma stays unambiguous.
    (SELECT NULLIF(json_group_array(t.tag), '[]')
       FROM (SELECT tag FROM {schema}.job_tags WHERE job_id = j.id ORDER BY tag) t) AS tags,
    le.message            AS last_error,
    lr.name               AS last_error_reason,
    le.at                 AS last_error_at,
    j.id                  AS job_id
FROM {schema}.jobs j
JOIN {schema}.runtime r      ON r.job_id = j.id
JOIN {schema}.namespaces n   ON n.id = j.namespace_id
JOIN {schema}.definitions d  ON d.id = j.definition_id
JOIN {schema}.codes s        ON s.family = 'job_status' AND s.code = r.status
LEFT JOIN {schema}.workers w ON w.id = r.lease_owner
LEFT JOIN {schema}.lanes l   ON l.id = r.lane_id
LEFT JOIN {schema}.events le ON le.id = (
    SELECT max(e.id) FROM {schema}.events e
    WHERE e.job_id = j.id
      AND (e.code IN (21, 30) OR (e.code = 11 AND e.outcome IN (2, 3))))
LEFT JOIN {schema}.codes lr  ON lr.family = 'reason' AND lr.code = le.reason;

-- Each lane with its head and how many unfinished members it holds.
CREATE VIEW {schema}.lanes_view AS
SELECT
    l.name          AS lane,
    n.name          AS namespace,
    h.job_ref       AS head_job_ref,
    hs.name         AS head_status,
    (SELECT count(*) FROM {schema}.runtime r
      WHERE r.lane_id = l.id AND r.status < 100) AS depth,
    l.last_seq,
    l.created_at,
    l.id            AS lane_id
FROM {schema}.lanes l
JOIN {schema}.namespaces n    ON n.id = l.namespace_id
LEFT JOIN {schema}.jobs h     ON h.id = l.head_job_id
LEFT JOIN {schema}.runtime hr ON hr.job_id = l.head_job_id
LEFT JOIN {schema}.codes hs   ON hs.family = 'job_status' AND hs.code = hr.status;

-- Each concurrency gate: its limit in force and who holds its slots now.
CREATE VIEW {schema}.gates_view AS
SELECT
    g.name,
    n.name                                AS namespace,
    k.name                                AS kind,
    COALESCE(g.limit_override, g.slot_limit) AS limit_in_force,
    g.slot_limit                          AS declared_limit,
    g.limit_override,
    (SELECT count(*) FROM {schema}.gate_holds h WHERE h.gate_id = g.id) AS held,
    -- The holders' refs as a sorted JSON array (NULL when nobody holds a slot).
    (SELECT NULLIF(json_group_array(x.job_ref), '[]')
       FROM (SELECT j.job_ref FROM {schema}.gate_holds h JOIN {schema}.jobs j ON j.id = h.job_id
              WHERE h.gate_id = g.id ORDER BY j.job_ref) x)             AS holders,
    g.version,
    g.updated_at,
    g.id                                  AS gate_id
FROM {schema}.gates g
JOIN {schema}.namespaces n ON n.id = g.namespace_id
JOIN {schema}.codes k      ON k.family = 'gate_kind' AND k.code = g.kind;

-- Each rate meter: the rate in force and the earliest instant a new arrival gets a turn (in
-- the past when the meter has room now): one burst's tolerance before the later horizon. The burst and spacing follow acta/policy/gate.py:
-- one second's worth at once (at least one), then one start per period / rate, in whole ms.
CREATE VIEW {schema}.meters_view AS
SELECT
    m.name,
    n.name                 AS namespace,
    m.rate_now             AS rate,
    m.period_now           AS period_ms,
    m.rate                 AS declared_rate,
    m.period_ms            AS declared_period_ms,
    m.rate_override,
    m.period_override_ms,
    strftime('%Y-%m-%d %H:%M:%f',
             max(m.booked_until, coalesce(m.admitted_until, m.booked_until)),
             printf('%+.3f seconds', -(max(1, m.rate_now * 1000 / m.period_now) - 1)
                                     * ((m.period_now + m.rate_now - 1) / m.rate_now) / 1000.0))
                           AS next_free_at,
    m.booked_until,
    m.admitted_until,
    m.version,
    m.updated_at,
    m.id                   AS meter_id
FROM (SELECT x.*, COALESCE(x.rate_override, x.rate) AS rate_now,
             COALESCE(x.period_override_ms, x.period_ms) AS period_now
      FROM {schema}.meters x) m
JOIN {schema}.namespaces n ON n.id = m.namespace_id;

INSERT INTO {schema}.codes (family, code, name, description) VALUES
    ('event', 15, 'admitted', 'The job passed its concurrency and rate gates and may start.'),
    ('event', 16, 'bounced', 'A gate turned the job away for now; it comes back at next_run_at.'),
    ('event', 17, 'promoted', 'The job became the head of its lane and may be claimed.'),
    ('event', 18, 'gate-changed', 'An operator changed a concurrency limit or a rate.'),
    ('gate_kind', 1, 'key', 'Named by the concurrency_key of an enqueue.'),
    ('gate_kind', 2, 'job', 'Named by a definition with a concurrency_limit.');
