-- Worker incarnations: register, heartbeat (which renews the leases the worker still holds),
-- and clean stop.

-- name: register_definition
-- A worker registration states the policy its build declares; the latest build wins.
WITH t(now) AS (SELECT COALESCE(:now, strftime('%Y-%m-%d %H:%M:%f', 'now')))
INSERT INTO {schema}.definitions
    (namespace_id, name, max_attempts, backoff, timeout_ms, priority, audit_level, registered_at,
     concurrency_limit, meter, retention_ms, tenant_scope, tags)
SELECT n.id, :name, :max_attempts, :backoff, :timeout_ms, :priority, :audit_level, t.now,
       :concurrency_limit, :meter, :retention_ms, :tenant_scope, :tags
FROM {schema}.namespaces n, t
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
WITH t(now) AS (SELECT COALESCE(:now, strftime('%Y-%m-%d %H:%M:%f', 'now')))
INSERT INTO {schema}.workers
    (namespace_id, incarnation, host, pid, status, executors, heartbeat_ms, started_at,
     heartbeat_at, tags)
SELECT :namespace_id, :incarnation, :host, :pid, 1, :executors, :heartbeat_ms, t.now, t.now, :tags
FROM t
WHERE true  -- lets SQLite parse the ON CONFLICT clause after a SELECT
ON CONFLICT (incarnation) DO NOTHING
RETURNING id AS worker_id;

-- name: worker_by_incarnation
SELECT id AS worker_id FROM {schema}.workers WHERE incarnation = :incarnation;

-- name: beat
-- Zero rows means recovery declared this incarnation dead: it must not write again.
WITH t(now) AS (SELECT COALESCE(:now, strftime('%Y-%m-%d %H:%M:%f', 'now')))
UPDATE {schema}.workers
SET heartbeat_at = (SELECT now FROM t)
WHERE id = :worker_id AND status = 1;

-- name: renew_leases
-- Renew only the (job, epoch) pairs this worker still holds; a pair missing from the result
-- was taken away (recovered, cancelled, re-claimed) and its handler must stop writing.
WITH t(now) AS (SELECT COALESCE(:now, strftime('%Y-%m-%d %H:%M:%f', 'now')))
UPDATE {schema}.runtime
SET lease_expires_at = strftime('%Y-%m-%d %H:%M:%f', (SELECT now FROM t),
                                printf('%+.3f seconds', :lease_ms / 1000.0))
WHERE lease_owner = :worker_id
  AND status IN (20, 21)
  AND (job_id, lease_epoch) IN (
      SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]') FROM json_each(:held))
RETURNING job_id, lease_epoch, control;

-- name: stop_worker
WITH t(now) AS (SELECT COALESCE(:now, strftime('%Y-%m-%d %H:%M:%f', 'now')))
UPDATE {schema}.workers
SET status = 2, stopped_at = (SELECT now FROM t)
WHERE id = :worker_id AND status = 1;

-- name: mark_dead_workers
-- A worker silent for seven of its own heartbeat intervals is dead, judged by the database clock.
WITH t(now) AS (SELECT COALESCE(:now, strftime('%Y-%m-%d %H:%M:%f', 'now')))
UPDATE {schema}.workers
SET status = 3, stopped_at = (SELECT now FROM t)
WHERE namespace_id = :namespace_id
  AND status = 1
  AND heartbeat_at < strftime('%Y-%m-%d %H:%M:%f', (SELECT now FROM t),
                              printf('-%.3f seconds', heartbeat_ms * 7 / 1000.0))
RETURNING id AS worker_id, incarnation;
