-- acta ledger, PostgreSQL, migration 1: the durable core.
--
-- Tables live in their own schema ("acta" by default); the provider creates it and the
-- migrations table before applying this file in one transaction. Instants are timestamptz,
-- payloads bytea, ids bigint identities. Integer widths follow one ladder: codes, flags and
-- priorities are smallint; bounded counts are integer; ids, counters that grow forever on a
-- recurring job (executions, lease epochs, versions) and millisecond durations are bigint.
-- Codes are small integers named in the codes table (docs/reference/codes.md).
-- Index names are not schema-qualified: PostgreSQL puts an index in its table's schema.

-- Names for every small-integer code stored below; the views join it.
CREATE TABLE {schema}.codes (
    family      text     NOT NULL,
    code        smallint NOT NULL,
    name        text     NOT NULL,
    description text     NOT NULL,
    PRIMARY KEY (family, code)
);

-- A namespace is the unit of ownership: its workers claim only its jobs.
CREATE TABLE {schema}.namespaces (
    id         bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name       text        NOT NULL UNIQUE,
    created_at timestamptz NOT NULL
);

-- One row per job name per namespace, with the policy the latest registration declared.
CREATE TABLE {schema}.definitions (
    id            bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    namespace_id  bigint      NOT NULL REFERENCES {schema}.namespaces (id),
    name          text        NOT NULL,
    max_attempts  smallint    NOT NULL CHECK (max_attempts >= 1),
    backoff       text        NOT NULL,
    timeout_ms    bigint      CHECK (timeout_ms IS NULL OR timeout_ms > 0),
    priority      smallint    NOT NULL,
    audit_level   smallint    NOT NULL,
    registered_at timestamptz NOT NULL,
    UNIQUE (namespace_id, name),
    -- What jobs reference: a job's definition and namespace must belong together.
    UNIQUE (id, namespace_id)
);

-- Identity and input of a job: written once at enqueue, never updated on the hot path.
CREATE TABLE {schema}.jobs (
    id              bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job_ref         text        NOT NULL UNIQUE,
    namespace_id    bigint      NOT NULL,
    definition_id   bigint      NOT NULL,
    dedup_key       text,
    correlation_key text,
    input_codec     smallint    NOT NULL,
    input           bytea       NOT NULL,
    created_at      timestamptz NOT NULL,
    -- One check per enqueued row covers both ids (the namespace follows from the definition).
    FOREIGN KEY (definition_id, namespace_id) REFERENCES {schema}.definitions (id, namespace_id)
);

-- Deduplication keys are unique per namespace; jobs without one take no room here.
CREATE UNIQUE INDEX jobs_dedup
    ON {schema}.jobs (namespace_id, dedup_key) WHERE dedup_key IS NOT NULL;

CREATE INDEX jobs_by_correlation
    ON {schema}.jobs (namespace_id, correlation_key) WHERE correlation_key IS NOT NULL;

CREATE TABLE {schema}.job_tags (
    job_id bigint NOT NULL REFERENCES {schema}.jobs (id) ON DELETE CASCADE,
    tag    text   NOT NULL,
    PRIMARY KEY (job_id, tag)
);

CREATE INDEX job_tags_by_tag ON {schema}.job_tags (tag, job_id);

-- Worker incarnations: one row per process start, never reused.
CREATE TABLE {schema}.workers (
    id           bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    namespace_id bigint      NOT NULL REFERENCES {schema}.namespaces (id),
    incarnation  text        NOT NULL UNIQUE,
    host         text        NOT NULL,
    pid          integer     NOT NULL,
    status       smallint    NOT NULL,
    executors    integer     NOT NULL,
    heartbeat_ms integer     NOT NULL CHECK (heartbeat_ms > 0),
    started_at   timestamptz NOT NULL,
    heartbeat_at timestamptz NOT NULL,
    stopped_at   timestamptz
);

CREATE INDEX workers_active
    ON {schema}.workers (namespace_id, heartbeat_at) WHERE status = 1;

-- The narrow, hot runtime row: one per job, everything that changes while it runs.
CREATE TABLE {schema}.runtime (
    job_id           bigint      PRIMARY KEY REFERENCES {schema}.jobs (id) ON DELETE CASCADE,
    namespace_id     bigint      NOT NULL,
    definition_id    bigint      NOT NULL,
    status           smallint    NOT NULL,
    priority         smallint    NOT NULL,
    next_run_at      timestamptz NOT NULL,
    attempts         integer     NOT NULL DEFAULT 0,
    executions       bigint      NOT NULL DEFAULT 0,
    lease_owner      bigint      REFERENCES {schema}.workers (id),
    lease_expires_at timestamptz,
    lease_epoch      bigint      NOT NULL DEFAULT 0,
    control          smallint    NOT NULL DEFAULT 0,
    version          bigint      NOT NULL DEFAULT 0,
    updated_at       timestamptz NOT NULL
);

-- The claim scan: ready rows of one namespace in claim order.
CREATE INDEX runtime_claim
    ON {schema}.runtime (namespace_id, priority DESC, next_run_at, job_id) WHERE status = 10;

-- Recovery scans leases by expiry; heartbeats find a worker's held rows.
CREATE INDEX runtime_leases
    ON {schema}.runtime (namespace_id, lease_expires_at) WHERE status IN (20, 21);

CREATE INDEX runtime_by_owner
    ON {schema}.runtime (lease_owner) WHERE lease_owner IS NOT NULL;

-- The append-only ledger. No foreign key to jobs: events outlive a purged job.
CREATE TABLE {schema}.events (
    id           bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at           timestamptz NOT NULL,
    namespace_id bigint,
    job_id       bigint,
    job_ref      text,
    worker_id    bigint,
    code         smallint    NOT NULL,
    execution    bigint,
    epoch        bigint,
    outcome      smallint,
    reason       smallint,
    duration_ms  bigint,
    message      text,
    detail       text
);

CREATE INDEX events_by_job ON {schema}.events (job_id, id);

-- A handler's return value, encoded with the codec named by its code.
CREATE TABLE {schema}.results (
    job_id     bigint      PRIMARY KEY REFERENCES {schema}.jobs (id) ON DELETE CASCADE,
    codec      smallint    NOT NULL,
    body       bytea       NOT NULL,
    created_at timestamptz NOT NULL
);

-- Jobs as an operator reads them: names instead of codes, the lease holder, the last error.
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
    -- A sorted JSON array (NULL without tags), so a tag containing a comma stays unambiguous.
    (SELECT json_agg(t.tag ORDER BY t.tag)::text FROM {schema}.job_tags t WHERE t.job_id = j.id)
                          AS tags,
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
LEFT JOIN {schema}.events le ON le.id = (
    SELECT max(e.id) FROM {schema}.events e
    WHERE e.job_id = j.id
      AND (e.code IN (21, 30) OR (e.code = 11 AND e.outcome IN (2, 3))))
LEFT JOIN {schema}.codes lr  ON lr.family = 'reason' AND lr.code = le.reason;

-- Worker incarnations with their derived lease and death windows.
CREATE VIEW {schema}.workers_view AS
SELECT
    w.incarnation,
    n.name                      AS namespace,
    w.host,
    w.pid,
    s.name                      AS status,
    w.status                    AS status_code,
    w.executors,
    w.heartbeat_ms / 1000.0     AS heartbeat_seconds,
    w.heartbeat_ms * 4 / 1000.0 AS lease_seconds,
    w.heartbeat_ms * 7 / 1000.0 AS dead_after_seconds,
    w.started_at,
    w.heartbeat_at,
    w.stopped_at,
    (SELECT count(*) FROM {schema}.runtime r WHERE r.lease_owner = w.id AND r.status IN (20, 21))
                                AS jobs_held,
    w.id                        AS worker_id
FROM {schema}.workers w
JOIN {schema}.namespaces n ON n.id = w.namespace_id
JOIN {schema}.codes s      ON s.family = 'worker_status' AND s.code = w.status;

-- The ledger with names: what happened to which job, when, on which worker, and why.
CREATE VIEW {schema}.events_view AS
SELECT
    e.id          AS event_id,
    e.at,
    e.job_ref,
    d.name        AS job_name,
    n.name        AS namespace,
    c.name        AS event,
    e.execution,
    e.epoch,
    o.name        AS outcome,
    r.name        AS reason,
    e.duration_ms,
    e.message,
    e.detail,
    w.incarnation AS worker,
    e.job_id
FROM {schema}.events e
LEFT JOIN {schema}.jobs j        ON j.id = e.job_id
LEFT JOIN {schema}.definitions d ON d.id = j.definition_id
LEFT JOIN {schema}.namespaces n  ON n.id = e.namespace_id
LEFT JOIN {schema}.workers w     ON w.id = e.worker_id
JOIN {schema}.codes c            ON c.family = 'event' AND c.code = e.code
LEFT JOIN {schema}.codes o       ON o.family = 'outcome' AND o.code = e.outcome
LEFT JOIN {schema}.codes r       ON r.family = 'reason' AND r.code = e.reason;

INSERT INTO {schema}.codes (family, code, name, description) VALUES
    ('job_status', 10, 'ready', 'Waiting to be claimed; due at next_run_at (possibly in the future).'),
    ('job_status', 11, 'blocked', 'Behind the head of its lane; not a claim candidate.'),
    ('job_status', 20, 'dispatched', 'Claimed under a lease; the handler has not started.'),
    ('job_status', 21, 'executing', 'The handler is running under the lease.'),
    ('job_status', 30, 'suspended', 'Parked on a durable wait (sleep, signal, children).'),
    ('job_status', 31, 'paused', 'Held until an operator resumes it.'),
    ('job_status', 100, 'succeeded', 'Terminal: the handler returned.'),
    ('job_status', 101, 'failed', 'Terminal: attempts exhausted or a failure that cannot be retried.'),
    ('job_status', 102, 'cancelled', 'Terminal: cancelled by an operator or by the handler.'),
    ('event', 1, 'enqueued', 'The job was written to the ledger.'),
    ('event', 10, 'execution-started', 'A handler run began (pairs with execution-finished or lease-lost).'),
    ('event', 11, 'execution-finished', 'A handler run ended; outcome and reason say how.'),
    ('event', 12, 'retry-scheduled', 'A failed run will be retried at next_run_at.'),
    ('event', 13, 'handed-back', 'A worker returned a claimed job without spending an attempt.'),
    ('event', 14, 'rearmed', 'A recurring job was set to run again at next_run_at.'),
    ('event', 20, 'succeeded', 'The job reached succeeded.'),
    ('event', 21, 'failed', 'The job reached failed.'),
    ('event', 22, 'cancelled', 'The job reached cancelled.'),
    ('event', 23, 'cancel-requested', 'Cancellation was asked for while the job was running.'),
    ('event', 30, 'lease-lost', 'A lease lapsed; recovery took the job back from its worker.'),
    ('event', 31, 'write-fenced', 'A worker write was refused because the lease epoch moved on.'),
    ('event', 50, 'worker-started', 'A worker incarnation registered.'),
    ('event', 51, 'worker-stopped', 'A worker shut down cleanly.'),
    ('event', 52, 'worker-died', 'A silent worker was declared dead by recovery.'),
    ('outcome', 1, 'succeeded', 'The handler returned normally.'),
    ('outcome', 2, 'failed', 'The handler raised, or its input could not be decoded.'),
    ('outcome', 3, 'timed-out', 'The run exceeded the definition''s execution timeout.'),
    ('outcome', 4, 'cancelled', 'The run stopped because the job was cancelled.'),
    ('outcome', 5, 'interrupted', 'The worker stopped the run (shutdown) and handed the job back.'),
    ('outcome', 6, 'rearmed', 'A recurring run finished and re-armed its job.'),
    ('reason', 0, 'none', 'No reason recorded.'),
    ('reason', 1, 'handler-error', 'The handler raised an exception.'),
    ('reason', 2, 'timeout', 'The execution timeout elapsed.'),
    ('reason', 3, 'input-undecodable', 'The stored input no longer decodes into the handler''s input type.'),
    ('reason', 4, 'attempts-exhausted', 'The last allowed attempt failed.'),
    ('reason', 5, 'lease-expired', 'The worker stopped renewing its lease.'),
    ('reason', 6, 'shutdown', 'The worker was shutting down.'),
    ('reason', 7, 'no-handler', 'This worker has no handler for the job''s name.'),
    ('reason', 8, 'operator', 'An operator asked for it.'),
    ('reason', 9, 'worker-silent', 'The worker missed seven heartbeats.'),
    ('reason', 10, 'result-unencodable', 'The handler''s return value could not be encoded.'),
    ('reason', 11, 'clean-exit', 'The worker exited normally.'),
    ('worker_status', 1, 'active', 'Registered and heartbeating.'),
    ('worker_status', 2, 'stopped', 'Shut down cleanly.'),
    ('worker_status', 3, 'dead', 'Declared dead after missing seven heartbeats; never revived.'),
    ('audit_level', 0, 'off', 'Write no per-job events except lease safety events.'),
    ('audit_level', 1, 'failures', 'Write only events about failures, retries and lease safety.'),
    ('audit_level', 2, 'full', 'Write the full timeline (default).'),
    ('control', 0, 'none', 'No pending request.'),
    ('control', 1, 'cancel', 'Cancel the job when its current run ends.');
