-- acta ledger, PostgreSQL, migration 12: namespaces and tenants.
--
-- A namespace answers who owns and runs the work; a tenant answers who the work is about. A
-- tenant is registered once under an opaque business key and resolved at enqueue: the job row
-- points at it (jobs.tenant_id), a child job inherits its parent's, and events reach it through
-- their job. A suspended tenant's new enqueues are refused; admitted jobs keep running. Tags
-- (sorted JSON arrays) reach namespaces, definitions, workers and tenants; namespaces and
-- tenants carry operator metadata (a JSON object) under a version for compare-and-set writes.
-- A tenant is a query and runtime dimension, not an isolation boundary.

CREATE TABLE {schema}.tenants (
    id             bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    -- The caller's opaque business key, compared byte for byte.
    tenant_key     text        NOT NULL UNIQUE CHECK (length(tenant_key) BETWEEN 1 AND 200),
    tags           jsonb       NOT NULL DEFAULT '[]',
    metadata       jsonb       NOT NULL DEFAULT '{}',
    suspended      boolean     NOT NULL DEFAULT false,
    suspended_at   timestamptz,
    suspended_by   text,
    suspend_reason text,
    version        integer     NOT NULL DEFAULT 1 CHECK (version >= 1),
    created_at     timestamptz NOT NULL,
    updated_at     timestamptz NOT NULL
);

-- The tenant a job is about (NULL: none). Set at enqueue, never changed.
ALTER TABLE {schema}.jobs ADD COLUMN tenant_id bigint REFERENCES {schema}.tenants (id);
CREATE INDEX jobs_by_tenant ON {schema}.jobs (tenant_id) WHERE tenant_id IS NOT NULL;

ALTER TABLE {schema}.namespaces ADD COLUMN tags jsonb NOT NULL DEFAULT '[]';
ALTER TABLE {schema}.namespaces ADD COLUMN metadata jsonb NOT NULL DEFAULT '{}';
-- Bumped by every operator change (metadata, tags, suspend, resume).
ALTER TABLE {schema}.namespaces ADD COLUMN version integer NOT NULL DEFAULT 1 CHECK (version >= 1);

ALTER TABLE {schema}.definitions ADD COLUMN tags jsonb NOT NULL DEFAULT '[]';
-- Whether an enqueue must name a tenant ('required'), must not ('forbidden'), or may (NULL).
ALTER TABLE {schema}.definitions ADD COLUMN tenant_scope text
    CHECK (tenant_scope IS NULL OR tenant_scope IN ('required', 'forbidden'));

ALTER TABLE {schema}.workers ADD COLUMN tags jsonb NOT NULL DEFAULT '[]';

DROP VIEW {schema}.jobs_view;

-- jobs_view again, with the tenant's key.
CREATE VIEW {schema}.jobs_view AS
SELECT
    j.job_ref,
    n.name                AS namespace,
    d.name                AS job_name,
    s.name                AS status,
    r.status              AS status_code,
    r.priority,
    r.attempts,
    COALESCE(r.max_attempts, d.max_attempts) AS max_attempts,
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
    tn.tenant_key         AS tenant,
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
LEFT JOIN {schema}.tenants tn ON tn.id = j.tenant_id
LEFT JOIN {schema}.events le ON le.id = (
    SELECT max(e.id) FROM {schema}.events e
    WHERE e.job_id = j.id
      AND (e.code IN (21, 30) OR (e.code = 11 AND e.outcome IN (2, 3))))
LEFT JOIN {schema}.codes lr  ON lr.family = 'reason' AND lr.code = le.reason;
DROP VIEW {schema}.events_view;

-- events_view again, with the tenant of the event's job.
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
    tn.tenant_key AS tenant,
    e.job_id
FROM {schema}.events e
LEFT JOIN {schema}.jobs j        ON j.id = e.job_id
LEFT JOIN {schema}.definitions d ON d.id = j.definition_id
LEFT JOIN {schema}.namespaces n  ON n.id = e.namespace_id
LEFT JOIN {schema}.workers w     ON w.id = e.worker_id
LEFT JOIN {schema}.tenants tn    ON tn.id = j.tenant_id
JOIN {schema}.codes c            ON c.family = 'event' AND c.code = e.code
LEFT JOIN {schema}.codes o       ON o.family = 'outcome' AND o.code = e.outcome
LEFT JOIN {schema}.codes r       ON r.family = 'reason' AND r.code = e.reason;

DROP VIEW {schema}.workers_view;

-- workers_view again, with the tags the worker declared.
CREATE VIEW {schema}.workers_view AS
SELECT
    w.incarnation,
    n.name                     AS namespace,
    w.host,
    w.pid,
    s.name                     AS status,
    w.status                   AS status_code,
    w.executors,
    w.heartbeat_ms / 1000.0    AS heartbeat_seconds,
    w.heartbeat_ms * 4 / 1000.0 AS lease_seconds,
    w.heartbeat_ms * 7 / 1000.0 AS dead_after_seconds,
    w.started_at,
    w.heartbeat_at,
    w.stopped_at,
    (SELECT count(*) FROM {schema}.runtime r WHERE r.lease_owner = w.id AND r.status IN (20, 21))
                               AS jobs_held,
    w.tags::text               AS tags,
    w.id                       AS worker_id
FROM {schema}.workers w
JOIN {schema}.namespaces n ON n.id = w.namespace_id
JOIN {schema}.codes s      ON s.family = 'worker_status' AND s.code = w.status;

DROP VIEW {schema}.effective_policy_view;

-- effective_policy_view again, with the definition's tags and tenant scope.
CREATE VIEW {schema}.effective_policy_view AS
SELECT
    n.name  AS namespace,
    d.name  AS job_name,
    CASE WHEN o.policy ? 'max_attempts' THEN (o.policy ->> 'max_attempts')::integer
         ELSE d.max_attempts END AS max_attempts,
    CASE WHEN o.policy ? 'backoff' THEN o.policy ->> 'backoff' ELSE d.backoff END AS backoff,
    CASE WHEN o.policy ? 'timeout_ms' THEN (o.policy ->> 'timeout_ms')::bigint
         ELSE d.timeout_ms END AS timeout_ms,
    a.name  AS audit,
    CASE WHEN o.policy ? 'retention_ms' THEN (o.policy ->> 'retention_ms')::bigint
         ELSE d.retention_ms END AS retention_ms,
    o.policy ->> 'alerts' AS alerts,
    d.priority,
    o.policy::text AS overrides,
    COALESCE(o.version, 0) AS version,
    o.updated_at,
    o.updated_by,
    o.reason,
    d.tags::text AS tags,
    d.tenant_scope
FROM {schema}.definitions d
JOIN {schema}.namespaces n ON n.id = d.namespace_id
LEFT JOIN {schema}.policy_overrides o ON o.definition_id = d.id
JOIN {schema}.codes a ON a.family = 'audit_level'
    AND a.code = CASE WHEN o.policy ? 'audit' THEN (o.policy ->> 'audit')::smallint
                      ELSE d.audit_level END;

-- Tenants as an operator reads them, with how many of their jobs are not finished yet.
CREATE VIEW {schema}.tenants_view AS
SELECT
    t.tenant_key  AS tenant,
    t.suspended,
    t.suspended_at,
    t.suspended_by,
    t.suspend_reason,
    t.tags::text     AS tags,
    t.metadata::text AS metadata,
    t.version,
    t.created_at,
    t.updated_at,
    (SELECT count(*) FROM {schema}.jobs j JOIN {schema}.runtime r ON r.job_id = j.id
      WHERE j.tenant_id = t.id AND r.status < 100) AS open_jobs,
    t.id          AS tenant_id
FROM {schema}.tenants t;

-- Namespaces with their lifecycle, metadata and what runs in them.
CREATE VIEW {schema}.namespaces_view AS
SELECT
    n.name        AS namespace,
    n.paused      AS suspended,
    n.tags::text  AS tags,
    n.metadata::text AS metadata,
    n.version,
    n.created_at,
    (SELECT count(*) FROM {schema}.definitions d WHERE d.namespace_id = n.id) AS definitions,
    (SELECT count(*) FROM {schema}.workers w WHERE w.namespace_id = n.id AND w.status = 1)
                  AS workers_running,
    (SELECT count(*) FROM {schema}.runtime r WHERE r.namespace_id = n.id AND r.status < 100)
                  AS open_jobs,
    n.id          AS namespace_id
FROM {schema}.namespaces n;

INSERT INTO {schema}.codes (family, code, name, description) VALUES
    ('event', 64, 'tenant-registered', 'An operator registered a tenant; detail: its key, tags and metadata.'),
    ('event', 65, 'tenant-suspended', 'An operator suspended a tenant: its new enqueues are refused; detail names it.'),
    ('event', 66, 'tenant-resumed', 'An operator resumed a suspended tenant; detail names it.'),
    ('event', 67, 'tenant-updated', 'An operator changed a tenant''s tags or metadata; detail: old and new values.'),
    ('event', 68, 'namespace-updated', 'An operator changed a namespace''s tags or metadata; detail: old and new values.');
