-- acta ledger, PostgreSQL, migration 4: recurring schedules.
--
-- A definition's schedules share one recurring slot: an ordinary job row of that definition,
-- claimed like any other (the claim is the election: one peer fires an instant), which never
-- ends. Each schedule keeps a cursor here: the latest scheduled instant already fired. There is
-- no job row per firing; each firing is one fired event on the slot's timeline.

CREATE TABLE {schema}.schedules (
    id             bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    namespace_id   bigint      NOT NULL REFERENCES {schema}.namespaces (id),
    definition_id  bigint      NOT NULL,
    -- The schedule's name within its definition ('default' for a single schedule=).
    name           text        NOT NULL,
    -- The recurring slot every schedule of this definition fires through.
    slot_id        bigint      NOT NULL REFERENCES {schema}.jobs (id),
    -- Exactly one of every_ms (an interval on a grid from the Unix epoch) and cron (five
    -- fields, read in zone).
    every_ms       bigint      CHECK (every_ms IS NULL OR every_ms >= 1000),
    cron           text,
    zone           text        NOT NULL DEFAULT 'UTC',
    misfire        smallint    NOT NULL DEFAULT 0,
    -- What the code declares (JSON); differs from the columns above while overridden.
    declared       text        NOT NULL,
    overridden     boolean     NOT NULL DEFAULT false,
    -- The latest instant fired; for a schedule never fired, the instant it was armed. An
    -- instant at or before the cursor never fires again (a clock stepped back included).
    cursor_at      timestamptz NOT NULL,
    -- The firing in progress: the instant its handler receives, the cursor it moves to when
    -- the firing ends, and how many due instants it covers without firing for them. Kept
    -- across a crash, so a restarted firing is the same firing.
    pending_at     timestamptz,
    pending_cursor timestamptz,
    pending_missed integer     NOT NULL DEFAULT 0,
    -- An operator asked for a firing now (trigger), at this instant.
    triggered_at   timestamptz,
    -- Paused: fires nothing; with resume_at, until that instant.
    paused         boolean     NOT NULL DEFAULT false,
    resume_at      timestamptz,
    -- Bumped by every operator change: the expected-version check of override and friends.
    version        integer     NOT NULL DEFAULT 1,
    created_at     timestamptz NOT NULL,
    updated_at     timestamptz NOT NULL,
    CHECK ((every_ms IS NULL) <> (cron IS NULL)),
    CHECK ((pending_at IS NULL) = (pending_cursor IS NULL)),
    UNIQUE (namespace_id, definition_id, name),
    FOREIGN KEY (definition_id, namespace_id) REFERENCES {schema}.definitions (id, namespace_id)
);
CREATE INDEX schedules_by_slot ON {schema}.schedules (slot_id);

-- One row per schedule: what it is, where its cursor stands, and when its slot wakes next.
CREATE VIEW {schema}.schedules_view AS
SELECT
    n.name          AS namespace,
    d.name          AS job_name,
    s.name          AS schedule,
    CASE WHEN s.cron IS NULL THEN 'every' ELSE 'cron' END AS kind,
    s.every_ms,
    s.cron,
    s.zone,
    m.name          AS misfire,
    s.overridden,
    s.cursor_at     AS last_fired_at,
    s.pending_at    AS firing_at,
    s.triggered_at,
    s.paused,
    s.resume_at,
    r.next_run_at   AS slot_wakes_at,
    j.job_ref       AS slot_ref,
    s.version,
    s.updated_at
FROM {schema}.schedules s
JOIN {schema}.namespaces n  ON n.id = s.namespace_id
JOIN {schema}.definitions d ON d.id = s.definition_id
JOIN {schema}.jobs j        ON j.id = s.slot_id
LEFT JOIN {schema}.runtime r ON r.job_id = s.slot_id
JOIN {schema}.codes m       ON m.family = 'misfire' AND m.code = s.misfire;

-- The new codes: schedules, the outbox relay and retention.
INSERT INTO {schema}.codes (family, code, name, description) VALUES
    ('event', 32, 'purged', 'Retention removed terminal job rows past their retention; message says which.'),
    ('event', 46, 'fired', 'A recurring slot fired; message names the schedules and the scheduled instant.'),
    ('event', 47, 'schedule-changed', 'An operator paused, resumed, triggered or overrode a schedule.'),
    ('event', 48, 'delivered', 'The outbox relay delivered this job from a staged row; message names it.'),
    ('event', 49, 'quarantined', 'The outbox relay could not admit a staged row and quarantined it.'),
    ('event', 60, 'quarantine-decided', 'An operator requeued or discarded a quarantined outbox row.'),
    ('reason', 17, 'misfire-skipped', 'A schedule was late and dropped its older due instants (skip).'),
    ('misfire', 0, 'skip', 'A late schedule fires once, for its latest due instant; older ones are dropped.'),
    ('misfire', 1, 'catch-up', 'A late schedule fires once, for its oldest due instant, covering the rest.');
