-- Reads for the Python API and the CLI. They read base tables with codes; names come from the
-- enums in Python, and operators get the same facts with names from the *_view views.
-- A job's attempt limit in force is its own (an amend), else its definition's in
-- effective_policy_view: the one place that says which policy is in force. It is read by a
-- scalar subquery, not joined: joined, its four relations made PostgreSQL plan eight at once
-- (about 5 ms of planning per unprepared read, three times the read itself).

-- name: job_by_ref
SELECT j.id AS job_id, j.job_ref, n.name AS namespace, d.name, r.status, r.priority,
       r.attempts, COALESCE(r.max_attempts,
                (SELECT ep.max_attempts FROM {schema}.effective_policy_view ep
                 WHERE ep.definition_id = d.id)) AS max_attempts, r.executions, r.next_run_at, r.lease_epoch, r.lease_owner,
       r.lease_expires_at, r.control, j.dedup_key, j.correlation_key, j.created_at,
       r.updated_at, j.input_codec, j.input, j.namespace_id,
       (SELECT l.name FROM {schema}.lanes l WHERE l.id = r.lane_id) AS lane, r.lane_seq,
       j.concurrency_key, j.child_name, j.deadline_at, j.deadline_strict,
       (SELECT p.job_ref FROM {schema}.jobs p WHERE p.id = j.parent_id) AS parent_ref,
       (SELECT p.job_ref FROM {schema}.jobs p WHERE p.id = j.root_id) AS root_ref,
       (SELECT GROUP_CONCAT(t.tag ORDER BY t.tag SEPARATOR X'1F') FROM {schema}.job_tags t WHERE t.job_id = j.id)
           AS tags,
       (SELECT tn.tenant_key FROM {schema}.tenants tn WHERE tn.id = j.tenant_id)
           AS tenant
FROM {schema}.jobs j
JOIN {schema}.runtime r     ON r.job_id = j.id
JOIN {schema}.namespaces n  ON n.id = j.namespace_id
JOIN {schema}.definitions d ON d.id = j.definition_id
WHERE j.job_ref = :job_ref
  AND (:namespace IS NULL OR n.name = :namespace);

-- name: list_jobs
-- Newest first, keyset-paginated on id.
SELECT j.id AS job_id, j.job_ref, n.name AS namespace, d.name, r.status, r.priority,
       r.attempts, COALESCE(r.max_attempts,
                (SELECT ep.max_attempts FROM {schema}.effective_policy_view ep
                 WHERE ep.definition_id = d.id)) AS max_attempts, r.executions, r.next_run_at, r.lease_epoch, r.lease_owner,
       r.lease_expires_at, r.control, j.dedup_key, j.correlation_key, j.created_at,
       r.updated_at, j.input_codec, NULL AS input, j.namespace_id,
       (SELECT l.name FROM {schema}.lanes l WHERE l.id = r.lane_id) AS lane, r.lane_seq,
       j.concurrency_key, j.child_name, j.deadline_at, j.deadline_strict,
       (SELECT p.job_ref FROM {schema}.jobs p WHERE p.id = j.parent_id) AS parent_ref,
       (SELECT p.job_ref FROM {schema}.jobs p WHERE p.id = j.root_id) AS root_ref,
       (SELECT GROUP_CONCAT(t.tag ORDER BY t.tag SEPARATOR X'1F') FROM {schema}.job_tags t WHERE t.job_id = j.id)
           AS tags,
       (SELECT tn.tenant_key FROM {schema}.tenants tn WHERE tn.id = j.tenant_id)
           AS tenant
FROM {schema}.jobs j
JOIN {schema}.runtime r     ON r.job_id = j.id
JOIN {schema}.namespaces n  ON n.id = j.namespace_id
JOIN {schema}.definitions d ON d.id = j.definition_id
WHERE (:namespace IS NULL OR n.name = :namespace)
  AND (:status IS NULL OR r.status = :status)
  AND (:name IS NULL OR d.name = :name)
  AND (:tenant IS NULL OR j.tenant_id = (SELECT tn.id FROM {schema}.tenants tn
                                            WHERE tn.tenant_key = :tenant))
  AND (:before_id IS NULL OR j.id < :before_id)
  AND (:include_system = 1 OR d.name NOT LIKE 'sys.%')
ORDER BY j.id DESC
LIMIT :limit;

-- name: job_events
SELECT e.id AS event_id, e.at, e.code, e.execution, e.epoch, e.outcome, e.reason,
       e.duration_ms, e.message, e.detail, e.actor, w.incarnation AS worker
FROM {schema}.events e
LEFT JOIN {schema}.workers w ON w.id = e.worker_id
WHERE e.job_id = :job_id
ORDER BY e.id;

-- name: job_result
SELECT codec, body FROM {schema}.results WHERE job_id = :job_id;

-- name: list_workers
SELECT w.id AS worker_id, w.incarnation, n.name AS namespace, w.host, w.pid, w.status,
       w.executors, w.heartbeat_ms, w.started_at, w.heartbeat_at, w.stopped_at
FROM {schema}.workers w
JOIN {schema}.namespaces n ON n.id = w.namespace_id
WHERE (:namespace IS NULL OR n.name = :namespace)
ORDER BY w.id;

-- name: pending_work
-- What run_until_idle needs: user jobs not yet finished, and the earliest due instant.
SELECT
    count(*) AS unfinished,
    -- A suspended job's timer is due work too; a wait with no timer (far future) is not.
    min(CASE WHEN r.status = 10 OR (r.status = 30 AND r.next_run_at < '9000-01-01')
             THEN r.next_run_at END) AS next_due_at,
    min(CASE WHEN r.status IN (20, 21) THEN r.lease_expires_at END) AS next_lease_expiry_at
FROM {schema}.runtime r
JOIN {schema}.definitions d ON d.id = r.definition_id
WHERE r.namespace_id = :namespace_id
  AND r.status < 100
  AND d.name NOT LIKE 'sys.%'
  -- Schedule slots never finish: they are not pending work.
  AND NOT EXISTS (SELECT 1 FROM {schema}.schedules s WHERE s.slot_id = r.job_id)
  -- Waiting jobs of a paused definition or namespace wait for an operator, not for time.
  AND (r.status IN (20, 21) OR NOT (d.paused = 1 OR EXISTS (
      SELECT 1 FROM {schema}.namespaces n WHERE n.id = r.namespace_id AND n.paused = 1)));

-- name: next_due_any
SELECT min(r.next_run_at) AS next_due_at
FROM {schema}.runtime r
WHERE r.namespace_id = :namespace_id
  AND (r.status = 10 OR (r.status = 30 AND r.next_run_at < '9000-01-01'));
