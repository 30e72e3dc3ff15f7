-- Worker incarnations: register, heartbeat (which renews the leases the worker still holds),
-- and clean stop.

-- name: register_definition
-- A worker registration states the policy its build declares; the latest build wins.
INSERT INTO {schema}.definitions
    (namespace_id, name, max_attempts, backoff, timeout_ms, priority, audit_level, registered_at,
     concurrency_limit, meter, retention_ms, tenant_scope, tags)
SELECT n.id, :name::text, :max_attempts::smallint, :backoff::text, :timeout_ms::bigint,
       :priority::smallint, :audit_level::smallint, COALESCE(:now::timestamptz, now()),
       :concurrency_limit::integer, :meter::text, :retention_ms::bigint, :tenant_scope::text,
       :tags::jsonb
FROM {schema}.namespaces n
WHERE n.name = :namespace
ON CONFLICT (namespace_id, name) DO UPDATE SET
    max_attempts  = excluded.max_attempts,
    backoff       = excluded.backoff,
    timeout_ms    = excluded.timeout_ms,
    priority      = excluded.priority,
    audit_level   = excluded.audit_level,
    registered_at = excluded.registered_at,
    concurrency_limit = excluded.concurrency_limit,
    meter         = excluded.meter,
    retention_ms  = excluded.retention_ms,
    tenant_scope  = excluded.tenant_scope,
    tags          = excluded.tags;

-- name: insert_worker
-- No row back: this incarnation is already registered (an earlier try committed but its reply
-- was lost); worker_by_incarnation finds it.
INSERT INTO {schema}.workers
    (namespace_id, incarnation, host, pid, status, executors, heartbeat_ms, started_at,
     heartbeat_at, tags)
VALUES (:namespace_id, :incarnation, :host, :pid, 1, :executors, :heartbeat_ms,
        COALESCE(:now::timestamptz, now()), COALESCE(:now::timestamptz, now()), :tags::jsonb)
ON CONFLICT (incarnation) DO NOTHING
RETURNING id AS worker_id;

-- name: worker_by_incarnation
SELECT id AS worker_id FROM {schema}.workers WHERE incarnation = :incarnation;

-- name: beat
-- Zero rows means recovery declared this incarnation dead: it must not write again.
UPDATE {schema}.workers
SET heartbeat_at = COALESCE(:now::timestamptz, now())
WHERE id = :worker_id AND status = 1;

-- name: renew_leases
-- Renew only the (job, epoch) pairs this worker still holds (:held is a JSON array of
-- [job_id, epoch] pairs); a pair missing from the result was taken away (recovered, cancelled,
-- re-claimed) and its handler must stop writing.
UPDATE {schema}.runtime
SET lease_expires_at = COALESCE(:now::timestamptz, now())
                       + :lease_ms::bigint * interval '1 millisecond'
WHERE lease_owner = :worker_id
  AND status IN (20, 21)
  AND (job_id, lease_epoch) IN (
      SELECT (h.pair ->> 0)::bigint, (h.pair ->> 1)::bigint
      FROM jsonb_array_elements(:held::jsonb) AS h(pair))
RETURNING job_id, lease_epoch, control;

-- name: stop_worker
UPDATE {schema}.workers
SET status = 2, stopped_at = COALESCE(:now::timestamptz, now())
WHERE id = :worker_id AND status = 1;

-- name: mark_dead_workers
-- A worker silent for seven of its own heartbeat intervals is dead, judged by the database clock.
UPDATE {schema}.workers
SET status = 3, stopped_at = COALESCE(:now::timestamptz, now())
WHERE namespace_id = :namespace_id
  AND status = 1
  AND heartbeat_at < COALESCE(:now::timestamptz, now())
                     - heartbeat_ms * 7 * interval '1 millisecond'
RETURNING id AS worker_id, incarnation;
