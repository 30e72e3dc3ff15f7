-- Reads for the embedded dashboard (acta.dashboard). Each one is bounded: a LIMIT, a time
-- window, or a group per definition, so a page costs the same on a ledger of any size.
-- ``:now`` is the test clock's instant, or NULL to let the database clock judge.

-- name: dash_now
SELECT COALESCE(:now::timestamptz, now()) AS now_at;

-- name: dash_status_counts
-- Jobs of the namespace by status; acta's own system jobs are left out.
SELECT r.status, count(*) AS jobs
FROM {schema}.runtime r
WHERE r.namespace_id = (SELECT n.id FROM {schema}.namespaces n WHERE n.name = :namespace)
  AND r.definition_id NOT IN (
      SELECT d.id FROM {schema}.definitions d
      WHERE d.namespace_id = r.namespace_id AND d.name LIKE 'sys.%')
GROUP BY r.status;

-- name: dash_backlog
-- Ready jobs per definition: how many, how many are due, and the oldest due one.
SELECT g.job_name, g.ready, g.due, g.oldest_due_at,
       (SELECT j.job_ref
        FROM {schema}.runtime o
        JOIN {schema}.jobs j ON j.id = o.job_id
        WHERE o.namespace_id = g.namespace_id AND o.definition_id = g.definition_id
          AND o.status = 10 AND o.next_run_at = g.oldest_due_at
        LIMIT 1) AS oldest_ref
FROM (
    SELECT r.namespace_id, r.definition_id, d.name AS job_name, count(*) AS ready,
           sum(CASE WHEN r.next_run_at <= :now_at::timestamptz THEN 1 ELSE 0 END) AS due,
           min(CASE WHEN r.next_run_at <= :now_at::timestamptz THEN r.next_run_at END)
               AS oldest_due_at
    FROM {schema}.runtime r
    JOIN {schema}.definitions d ON d.id = r.definition_id
    WHERE r.namespace_id = (SELECT n.id FROM {schema}.namespaces n WHERE n.name = :namespace)
      AND r.status = 10
      AND d.name NOT LIKE 'sys.%'
    GROUP BY r.namespace_id, r.definition_id, d.name
) g
ORDER BY g.oldest_due_at NULLS LAST, g.job_name
LIMIT 100;

-- name: dash_throughput
-- Finished runs per minute since :since: successes, and failures (a retry or a final failure).
SELECT floor(extract(epoch FROM (e.at - :since::timestamptz)) / 60)::int AS minute,
       sum(CASE WHEN e.code = 20 THEN 1 ELSE 0 END) AS succeeded,
       sum(CASE WHEN e.code IN (12, 21) THEN 1 ELSE 0 END) AS failed
FROM {schema}.events e
WHERE e.namespace_id = (SELECT n.id FROM {schema}.namespaces n WHERE n.name = :namespace)
  AND e.at >= :since::timestamptz AND e.at <= :now_at::timestamptz
  AND e.code IN (12, 20, 21)
GROUP BY 1;

-- name: dash_workers
-- Workers alive now, and those that stopped or died within the window.
SELECT w.incarnation, w.host, w.pid, w.status, w.executors, w.heartbeat_ms, w.started_at,
       w.heartbeat_at, w.stopped_at,
       (SELECT count(*) FROM {schema}.runtime r
        WHERE r.lease_owner = w.id AND r.status IN (20, 21)) AS jobs_held
FROM {schema}.workers w
WHERE w.namespace_id = (SELECT n.id FROM {schema}.namespaces n WHERE n.name = :namespace)
  AND (w.status = 1 OR w.heartbeat_at >= :since::timestamptz)
ORDER BY w.status, w.started_at DESC, w.id DESC
LIMIT :limit;

-- name: dash_jobs
-- One page of jobs, newest first, keyset-paginated on the job id (never OFFSET).
SELECT j.id AS job_id, j.job_ref, d.name AS job_name, r.status, r.attempts,
       COALESCE(r.max_attempts, d.max_attempts) AS max_attempts, j.created_at, r.next_run_at,
       r.updated_at, j.correlation_key,
       (SELECT string_agg(t.tag, chr(31) ORDER BY t.tag) FROM {schema}.job_tags t
        WHERE t.job_id = j.id) AS tags
FROM {schema}.jobs j
JOIN {schema}.runtime r ON r.job_id = j.id
JOIN {schema}.definitions d ON d.id = j.definition_id
WHERE j.namespace_id = (SELECT n.id FROM {schema}.namespaces n WHERE n.name = :namespace)
  AND (:status::smallint IS NULL OR r.status = :status::smallint)
  AND (:job_name::text IS NULL OR d.name = :job_name::text)
  AND (:tag::text IS NULL OR EXISTS (
      SELECT 1 FROM {schema}.job_tags t WHERE t.job_id = j.id AND t.tag = :tag::text))
  AND (:correlation_key::text IS NULL OR j.correlation_key = :correlation_key::text)
  AND (:created_from::timestamptz IS NULL OR j.created_at >= :created_from::timestamptz)
  AND (:created_to::timestamptz IS NULL OR j.created_at < :created_to::timestamptz)
  AND (:before_id::bigint IS NULL OR j.id < :before_id::bigint)
  AND (:include_system = 1 OR d.name NOT LIKE 'sys.%')
ORDER BY j.id DESC
LIMIT :limit;

-- name: dash_job_view
-- The job page's facts that the reader's JobInfo does not carry.
SELECT v.status, v.lease_worker, v.lease_host, v.last_error, v.last_error_reason,
       v.last_error_at, v.progress_done, v.progress_total, v.progress_message, v.progress_at,
       v.waiting_for, v.finished_at, v.open_children
FROM {schema}.jobs_view v
WHERE v.job_id = :job_id;

-- name: dash_job_steps
SELECT s.step, s.state, s.at_most_once, s.execution, s.started_at, s.completed_at, s.error
FROM {schema}.steps_view s
WHERE s.job_id = :job_id
ORDER BY s.started_at, s.step
LIMIT 200;

-- name: dash_job_variables
SELECT v.name, v.codec, v.body, v.updated_at
FROM {schema}.variables v
WHERE v.job_id = :job_id
ORDER BY v.name
LIMIT 200;

-- name: dash_definitions
-- The effective policy of every definition of the namespace, with its pause state.
SELECT p.job_name, p.max_attempts, p.backoff, p.timeout_ms, p.audit, p.retention_ms,
       p.alerts, p.priority, p.overrides, p.version, p.updated_at, p.updated_by, p.reason,
       d.paused, d.retired
FROM {schema}.effective_policy_view p
JOIN {schema}.namespaces n ON n.name = p.namespace
JOIN {schema}.definitions d ON d.namespace_id = n.id AND d.name = p.job_name
WHERE p.namespace = :namespace
ORDER BY p.job_name
LIMIT 500;

-- name: dash_namespaces
SELECT n.name, n.paused, n.created_at,
       (SELECT count(*) FROM {schema}.definitions d WHERE d.namespace_id = n.id) AS definitions,
       (SELECT count(*) FROM {schema}.workers w
        WHERE w.namespace_id = n.id AND w.status = 1) AS workers
FROM {schema}.namespaces n
ORDER BY n.name
LIMIT 500;
