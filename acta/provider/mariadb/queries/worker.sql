-- Worker incarnations: register, heartbeat (which renews the leases the worker still holds),
-- and clean stop.

-- name: register_definition
-- A worker registration states the policy its build declares; the latest build wins.
INSERT INTO {schema}.definitions
    (namespace_id, name, max_attempts, backoff, timeout_ms, priority, audit_level, registered_at,
     concurrency_limit, meter, retention_ms, tenant_scope, tags)
SELECT n.id, :name, :max_attempts, :backoff, :timeout_ms, :priority, :audit_level, :now,
       :concurrency_limit, :meter, :retention_ms, :tenant_scope, :tags
FROM {schema}.namespaces n
WHERE n.name = :namespace
ON DUPLICATE KEY UPDATE
    max_attempts  = VALUES(max_attempts),
    backoff       = VALUES(backoff),
    timeout_ms    = VALUES(timeout_ms),
    priority      = VALUES(priority),
    audit_level   = VALUES(audit_level),
    registered_at = VALUES(registered_at),
    concurrency_limit = VALUES(concurrency_limit),
    meter         = VALUES(meter),
    retention_ms  = VALUES(retention_ms),
    tenant_scope  = VALUES(tenant_scope),
    tags          = VALUES(tags);

-- name: insert_worker
-- on duplicate key: no row
-- No row back: this incarnation is already registered (an earlier try committed but its reply
-- was lost); worker_by_incarnation finds it.
INSERT INTO {schema}.workers
    (namespace_id, incarnation, host, pid, status, executors, heartbeat_ms, started_at,
     heartbeat_at, tags)
SELECT :namespace_id, :incarnation, :host, :pid, 1, :executors, :heartbeat_ms, :now, :now, :tags
FROM DUAL
RETURNING id AS worker_id;

-- name: worker_by_incarnation
SELECT id AS worker_id FROM {schema}.workers WHERE incarnation = :incarnation;

-- name: beat
-- Zero rows means recovery declared this incarnation dead: it must not write again.
UPDATE {schema}.workers
SET heartbeat_at = :now
WHERE id = :worker_id AND status = 1;

-- name: renew_leases.lock
-- Renew only the (job, epoch) pairs this worker still holds (:held, a JSON array of
-- [job_id, epoch]); a pair missing from the result was taken away (recovered, cancelled,
-- re-claimed) and its handler must stop writing.
SELECT r.job_id AS id FROM {schema}.runtime r
JOIN JSON_TABLE(:held, '$[*]' COLUMNS (job_id BIGINT PATH '$[0]', epoch BIGINT PATH '$[1]')) AS h
  ON h.job_id = r.job_id AND h.epoch = r.lease_epoch
WHERE r.lease_owner = :worker_id AND r.status IN (20, 21)
FOR UPDATE;

-- name: renew_leases.update
UPDATE {schema}.runtime
SET lease_expires_at = TIMESTAMPADD(MICROSECOND, :lease_ms * 1000, :now)
WHERE job_id IN (SELECT value FROM JSON_TABLE(:_ids, '$[*]' COLUMNS (value BIGINT PATH '$')) AS ids);

-- name: renew_leases.select
SELECT job_id, lease_epoch, control FROM {schema}.runtime
WHERE job_id IN (SELECT value FROM JSON_TABLE(:_ids, '$[*]' COLUMNS (value BIGINT PATH '$')) AS ids) ORDER BY job_id;

-- name: stop_worker
UPDATE {schema}.workers
SET status = 2, stopped_at = :now
WHERE id = :worker_id AND status = 1;

-- name: mark_dead_workers.lock
-- A worker silent for seven of its own heartbeat intervals is dead, judged by the database clock.
SELECT id FROM {schema}.workers
WHERE namespace_id = :namespace_id
  AND status = 1
  AND heartbeat_at < TIMESTAMPADD(MICROSECOND, -heartbeat_ms * 7 * 1000, :now)
FOR UPDATE;

-- name: mark_dead_workers.update
UPDATE {schema}.workers SET status = 3, stopped_at = :now
WHERE id IN (SELECT value FROM JSON_TABLE(:_ids, '$[*]' COLUMNS (value BIGINT PATH '$')) AS ids) AND status = 1;

-- name: mark_dead_workers.select
SELECT id AS worker_id, incarnation FROM {schema}.workers
WHERE id IN (SELECT value FROM JSON_TABLE(:_ids, '$[*]' COLUMNS (value BIGINT PATH '$')) AS ids) AND status = 3 ORDER BY id;

