-- acta ledger, PostgreSQL, migration 3: durable execution.
--
-- A handler is re-entered from the top after a crash, a retry or a wait; what it must not
-- redo lives in these rows, each owned by one job and written under that job's lease: steps
-- (run-once results), variables, a progress slot, waits (timers, signal and children waits),
-- signals, and the latches that hold a waiting parent until its children finish.

-- Lineage and deadline: facts fixed at enqueue. A child's name is unique under its parent, so
-- a parent re-entered after a crash finds the children it already spawned instead of spawning
-- them again. No foreign key on parent_id/root_id: lineage outlives a purged parent row.
ALTER TABLE {schema}.jobs ADD COLUMN parent_id bigint;
ALTER TABLE {schema}.jobs ADD COLUMN root_id bigint;
ALTER TABLE {schema}.jobs ADD COLUMN child_name text;
ALTER TABLE {schema}.jobs ADD COLUMN deadline_at timestamptz;
ALTER TABLE {schema}.jobs ADD COLUMN deadline_strict boolean NOT NULL DEFAULT false;
CREATE UNIQUE INDEX jobs_children
    ON {schema}.jobs (parent_id, child_name) WHERE parent_id IS NOT NULL;

-- How many of a job's children have not finished. Every child's terminal transition takes
-- one off in the same transaction; a parent waiting on its children is released at zero.
-- A counter on the parent's row (not a count of latch rows) so that two children finishing
-- at once serialise on that row and the last one always sees zero.
ALTER TABLE {schema}.runtime ADD COLUMN open_children integer NOT NULL DEFAULT 0;

-- A suspended job (status 30) is claimed when its timer is due, like a ready one: the claim
-- scan covers both. A wait with no timer keeps next_run_at far in the future.
DROP INDEX {schema}.runtime_claim;
CREATE INDEX runtime_claim
    ON {schema}.runtime (namespace_id, priority DESC, next_run_at, job_id)
    WHERE status IN (10, 30);

-- One latch per unfinished child; the child's terminal transition deletes it.
CREATE TABLE {schema}.latches (
    child_id  bigint PRIMARY KEY REFERENCES {schema}.jobs (id) ON DELETE CASCADE,
    parent_id bigint NOT NULL
);
CREATE INDEX latches_by_parent ON {schema}.latches (parent_id);

-- Named steps. state 1: begun (an at-most-once step's intent, written before its body runs);
-- 2: completed (codec/body hold the result, NULL body for None); 3: interrupted (begun and
-- never completed: the body is not run again).
CREATE TABLE {schema}.steps (
    job_id       bigint      NOT NULL REFERENCES {schema}.jobs (id) ON DELETE CASCADE,
    name         text        NOT NULL,
    state        smallint    NOT NULL,
    at_most_once boolean     NOT NULL DEFAULT false,
    execution    bigint      NOT NULL,
    codec        smallint,
    body         bytea,
    error        text,
    started_at   timestamptz NOT NULL,
    completed_at timestamptz,
    PRIMARY KEY (job_id, name)
);

-- Durable variables: one value per (job, name), overwritten by each set.
CREATE TABLE {schema}.variables (
    job_id     bigint      NOT NULL REFERENCES {schema}.jobs (id) ON DELETE CASCADE,
    name       text        NOT NULL,
    codec      smallint    NOT NULL,
    body       bytea       NOT NULL,
    updated_at timestamptz NOT NULL,
    PRIMARY KEY (job_id, name)
);

-- The job's one progress slot.
CREATE TABLE {schema}.progress (
    job_id     bigint           PRIMARY KEY REFERENCES {schema}.jobs (id) ON DELETE CASCADE,
    done       double precision NOT NULL,
    total      double precision,
    message    text,
    updated_at timestamptz      NOT NULL
);

-- Durable waits, armed once: kind 1 sleep, 2 signal, 3 children. due_at is the absolute
-- instant the wait ends or expires (NULL: no timeout), fixed when first armed and never moved
-- by re-entry. parked_in is the execution that last suspended on it (the newest parked wait of
-- a suspended job is what it waits for); released_at, when a signal or the last child released
-- it.
CREATE TABLE {schema}.waits (
    job_id      bigint      NOT NULL REFERENCES {schema}.jobs (id) ON DELETE CASCADE,
    kind        smallint    NOT NULL,
    name        text        NOT NULL,
    due_at      timestamptz,
    armed_at    timestamptz NOT NULL,
    execution   bigint      NOT NULL,
    released_at timestamptz,
    parked_in   bigint,
    PRIMARY KEY (job_id, kind, name)
);

-- Signals sent to a job, kept until its wait takes them (a signal may come before the wait).
CREATE TABLE {schema}.signals (
    job_id  bigint      NOT NULL REFERENCES {schema}.jobs (id) ON DELETE CASCADE,
    name    text        NOT NULL,
    codec   smallint    NOT NULL,
    body    bytea       NOT NULL,
    sent_at timestamptz NOT NULL,
    PRIMARY KEY (job_id, name)
);

-- Alerts opened by handlers (ctx.alert); failure alerts and routing come with operations.
CREATE TABLE {schema}.alerts (
    id           bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    namespace_id bigint      NOT NULL REFERENCES {schema}.namespaces (id),
    job_id       bigint,
    job_ref      text,
    kind         smallint    NOT NULL,
    severity     smallint    NOT NULL,
    title        text        NOT NULL,
    detail       text,
    opened_at    timestamptz NOT NULL,
    resolved_at  timestamptz
);
CREATE INDEX alerts_open
    ON {schema}.alerts (namespace_id, opened_at) WHERE resolved_at IS NULL;

DROP VIEW {schema}.jobs_view;

-- jobs_view again, now with lineage, the deadline, the progress slot and the open wait.
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
    (SELECT json_agg(t.tag ORDER BY t.tag)::text FROM {schema}.job_tags t WHERE t.job_id = j.id)
                          AS tags,
    le.message            AS last_error,
    lr.name               AS last_error_reason,
    le.at                 AS last_error_at,
    pj.job_ref            AS parent_ref,
    rj.job_ref            AS root_ref,
    j.child_name,
    r.open_children,
    j.deadline_at,
    CASE WHEN j.deadline_at IS NULL THEN NULL
         WHEN j.deadline_strict THEN 'strict' ELSE 'advisory' END AS deadline_policy,
    p.done                AS progress_done,
    p.total               AS progress_total,
    p.message             AS progress_message,
    p.updated_at          AS progress_at,
    -- What a suspended job waits for, as kind:name (sleep:nap, signal:approved, children:all).
    (SELECT wk.name || ':' || wt.name
       FROM {schema}.waits wt
       JOIN {schema}.codes wk ON wk.family = 'wait_kind' AND wk.code = wt.kind
      WHERE wt.job_id = j.id AND wt.parked_in IS NOT NULL AND r.status = 30
      ORDER BY wt.parked_in DESC LIMIT 1) AS waiting_for,
    j.id                  AS job_id
FROM {schema}.jobs j
JOIN {schema}.runtime r      ON r.job_id = j.id
JOIN {schema}.namespaces n   ON n.id = j.namespace_id
JOIN {schema}.definitions d  ON d.id = j.definition_id
JOIN {schema}.codes s        ON s.family = 'job_status' AND s.code = r.status
LEFT JOIN {schema}.workers w ON w.id = r.lease_owner
LEFT JOIN {schema}.lanes l   ON l.id = r.lane_id
LEFT JOIN {schema}.jobs pj   ON pj.id = j.parent_id
LEFT JOIN {schema}.jobs rj   ON rj.id = j.root_id
LEFT JOIN {schema}.progress p ON p.job_id = j.id
LEFT JOIN {schema}.events le ON le.id = (
    SELECT max(e.id) FROM {schema}.events e
    WHERE e.job_id = j.id
      AND (e.code IN (21, 30) OR (e.code = 11 AND e.outcome IN (2, 3))))
LEFT JOIN {schema}.codes lr  ON lr.family = 'reason' AND lr.code = le.reason;

-- Each job's steps, with their state and when they began and completed.
CREATE VIEW {schema}.steps_view AS
SELECT
    j.job_ref,
    st.name          AS step,
    c.name           AS state,
    st.at_most_once,
    st.execution,
    st.started_at,
    st.completed_at,
    st.error,
    st.job_id
FROM {schema}.steps st
JOIN {schema}.jobs j  ON j.id = st.job_id
JOIN {schema}.codes c ON c.family = 'step_state' AND c.code = st.state;

-- Each durable wait: what it is, until when, and whether something released it.
CREATE VIEW {schema}.waits_view AS
SELECT
    j.job_ref,
    k.name           AS kind,
    wt.name,
    wt.due_at,
    wt.armed_at,
    wt.execution,
    wt.released_at,
    EXISTS (SELECT 1 FROM {schema}.signals sg
             WHERE wt.kind = 2 AND sg.job_id = wt.job_id AND sg.name = wt.name) AS signalled,
    wt.job_id
FROM {schema}.waits wt
JOIN {schema}.jobs j  ON j.id = wt.job_id
JOIN {schema}.codes k ON k.family = 'wait_kind' AND k.code = wt.kind;

-- Alerts with their job and names.
CREATE VIEW {schema}.alerts_view AS
SELECT
    a.id             AS alert_id,
    n.name           AS namespace,
    a.job_ref,
    d.name           AS job_name,
    k.name           AS kind,
    sv.name          AS severity,
    a.title,
    a.detail,
    a.opened_at,
    a.resolved_at
FROM {schema}.alerts a
JOIN {schema}.namespaces n   ON n.id = a.namespace_id
LEFT JOIN {schema}.jobs j    ON j.id = a.job_id
LEFT JOIN {schema}.definitions d ON d.id = j.definition_id
JOIN {schema}.codes k        ON k.family = 'alert_kind' AND k.code = a.kind
JOIN {schema}.codes sv       ON sv.family = 'alert_severity' AND sv.code = a.severity;

-- The new codes: events, outcomes and reasons of durable execution, and its code families.
INSERT INTO {schema}.codes (family, code, name, description) VALUES
    ('event', 24, 'suspended', 'The job left its worker to wait (sleep, signal, children); message says why.'),
    ('event', 25, 'signalled', 'A signal was sent to the job; message names it.'),
    ('event', 26, 'released', 'A signal or the last child released the job''s wait: it is ready again.'),
    ('event', 27, 'rescheduled', 'The handler asked to run again at next_run_at (no attempt spent).'),
    ('event', 28, 'paused', 'The job was paused and waits for an operator to resume it.'),
    ('event', 29, 'resumed', 'An operator resumed a paused job.'),
    ('event', 40, 'step-begun', 'An at-most-once step recorded its intent; its body runs next, at most once.'),
    ('event', 41, 'step-completed', 'A durable step''s result was recorded; re-entry returns it.'),
    ('event', 42, 'step-interrupted', 'An at-most-once step was found begun without an outcome.'),
    ('event', 43, 'children-spawned', 'The job enqueued child jobs; message says how many.'),
    ('event', 44, 'note', 'A note the handler wrote to its timeline.'),
    ('event', 45, 'alert-opened', 'The handler opened an alert.'),
    ('outcome', 7, 'suspended', 'The run parked the job on a durable wait.'),
    ('outcome', 8, 'rescheduled', 'The handler asked to run again later.'),
    ('outcome', 9, 'paused', 'The handler paused the job for an operator.'),
    ('reason', 12, 'deadline', 'The job''s strict deadline passed.'),
    ('reason', 13, 'wait-timed-out', 'A signal or children wait expired before it was released.'),
    ('reason', 14, 'step-interrupted', 'An at-most-once step began and never recorded an outcome.'),
    ('reason', 15, 'handler-decided', 'The handler ended its run on purpose (fail, cancel, pause, reschedule).'),
    ('reason', 16, 'parent-gave-up', 'The parent''s bounded wait expired before this child finished.'),
    ('wait_kind', 1, 'sleep', 'A durable sleep: due at its armed instant.'),
    ('wait_kind', 2, 'signal', 'A wait for a named signal, with an optional timeout.'),
    ('wait_kind', 3, 'children', 'A wait for the job''s unfinished children, with an optional timeout.'),
    ('step_state', 1, 'begun', 'An at-most-once step''s intent is recorded; no outcome yet.'),
    ('step_state', 2, 'completed', 'The step''s result is stored; re-entry returns it without running the body.'),
    ('step_state', 3, 'interrupted', 'Begun and never completed (or its at-most-once body raised): not run again.'),
    ('control', 2, 'parent-gave-up', 'Cancel the job when its current run ends: its parent stopped waiting.'),
    ('alert_kind', 1, 'manual', 'Opened by a handler with ctx.alert.'),
    ('alert_severity', 1, 'info', 'For the record.'),
    ('alert_severity', 2, 'warning', 'Someone should look.'),
    ('alert_severity', 3, 'critical', 'Someone should act now.');
