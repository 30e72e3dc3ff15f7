-- Reads for the embedded dashboard (acta.dashboard). Each one is bounded: a LIMIT, a time
-- window, or a group per definition, so a page costs the same on a ledger of any size.
-- ``:now`` is the test clock's instant, or NULL to let the database clock judge.

-- name: dash_now
SELECT COALESCE(:now, strftime('%Y-%m-%d %H:%M:%f', 'now')) AS now_at;

-- name: dash_job_groups
-- Jobs of the namespace per status and definition, in one pass over runtime: the overview's
-- counts by status and its backlog (ready jobs per definition, how many are due, since when
-- the oldest due one waits) both come from these groups. No index makes a count of every row
-- cheaper than one pass; the definitions join is a handful of rows. acta's own system jobs
-- are left out. One group per status and definition: bounded by the catalog, not the jobs.
SELECT g.status, d.name AS job_name, g.jobs, g.due, g.oldest_due_at
FROM (
    -- Grouped on the ids first: the per-row work is the count alone.
    SELECT r.status, r.definition_id, count(*) AS jobs,
           sum(CASE WHEN r.status = 10 AND r.next_run_at <= :now_at THEN 1 ELSE 0 END)
               AS due,
           min(CASE WHEN r.status = 10 AND r.next_run_at <= :now_at THEN r.next_run_at END)
               AS oldest_due_at
    FROM {schema}.runtime r
    WHERE r.namespace_id = (SELECT n.id FROM {schema}.namespaces n WHERE n.name = :namespace)
    GROUP BY r.status, r.definition_id
) g
JOIN {schema}.definitions d ON d.id = g.definition_id
WHERE d.name NOT LIKE 'sys.%';

-- name: dash_throughput
-- Jobs that finished since :since, per minute and final status. It reads the runtime rows of
-- finished jobs through their (namespace_id, updated_at) index, so the events table needs no
-- index by time and every audit level counts the same. Grouped on ids first, like
-- dash_job_groups, so system jobs are left out per group rather than per row.
SELECT g.minute, sum(g.succeeded) AS succeeded, sum(g.failed) AS failed,
       sum(g.cancelled) AS cancelled
FROM (
    SELECT CAST((julianday(r.updated_at) - julianday(:since)) * 1440 AS INTEGER) AS minute,
           r.definition_id,
           sum(CASE WHEN r.status = 100 THEN 1 ELSE 0 END) AS succeeded,
           sum(CASE WHEN r.status = 101 THEN 1 ELSE 0 END) AS failed,
           sum(CASE WHEN r.status = 102 THEN 1 ELSE 0 END) AS cancelled
    FROM {schema}.runtime r
    WHERE r.namespace_id = (SELECT n.id FROM {schema}.namespaces n WHERE n.name = :namespace)
      AND r.status >= 100
      AND r.updated_at >= :since AND r.updated_at <= :now_at
    GROUP BY 1, r.definition_id
) g
JOIN {schema}.definitions d ON d.id = g.definition_id
WHERE d.name NOT LIKE 'sys.%'
GROUP BY g.minute;

-- name: dash_workers
-- Workers alive now, and those that stopped or died within the window.
SELECT w.incarnation, w.host, w.pid, w.status, w.executors, w.heartbeat_ms, w.started_at,
       w.heartbeat_at, w.stopped_at,
       (SELECT count(*) FROM {schema}.runtime r
        WHERE r.lease_owner = w.id AND r.status IN (20, 21)) AS jobs_held
FROM {schema}.workers w
WHERE w.namespace_id = (SELECT n.id FROM {schema}.namespaces n WHERE n.name = :namespace)
  AND (w.status = 1 OR w.heartbeat_at >= :since)
ORDER BY w.status, w.started_at DESC, w.id DESC
LIMIT :limit;

-- name: dash_jobs
-- One page of jobs, newest first, keyset-paginated on the job id (never OFFSET).
SELECT j.id AS job_id, j.job_ref, d.name AS job_name, r.status, r.attempts,
       COALESCE(r.max_attempts, d.max_attempts) AS max_attempts, j.created_at, r.next_run_at,
       r.updated_at, j.correlation_key,
       (SELECT tn.tenant_key FROM {schema}.tenants tn WHERE tn.id = j.tenant_id) AS tenant,
       (SELECT group_concat(t.tag, char(31)) FROM {schema}.job_tags t
        WHERE t.job_id = j.id) AS tags
FROM {schema}.jobs j
JOIN {schema}.runtime r ON r.job_id = j.id
JOIN {schema}.definitions d ON d.id = j.definition_id
WHERE j.namespace_id = (SELECT n.id FROM {schema}.namespaces n WHERE n.name = :namespace)
  AND (:status IS NULL OR r.status = :status)
  AND (:job_name IS NULL OR d.name = :job_name)
  AND (:tag IS NULL OR EXISTS (
      SELECT 1 FROM {schema}.job_tags t WHERE t.job_id = j.id AND t.tag = :tag))
  AND (:correlation_key IS NULL OR j.correlation_key = :correlation_key)
  AND (:tenant IS NULL OR j.tenant_id = (
      SELECT tn.id FROM {schema}.tenants tn WHERE tn.tenant_key = :tenant))
  AND (:created_from IS NULL OR j.created_at >= :created_from)
  AND (:created_to IS NULL OR j.created_at < :created_to)
  AND (:before_id IS NULL OR j.id < :before_id)
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

-- name: dash_tenants
-- One page of tenants by key, keyset-paginated on the key (never OFFSET): a ledger may hold
-- one tenant per customer. open_jobs is tenants_view's count, written so that it walks the
-- tenant's jobs through jobs_by_tenant and looks each one's status up by runtime's key (the
-- view's join lets the planner scan the whole runtime table instead).
SELECT t.tenant_key AS tenant, t.suspended, t.suspended_at, t.suspended_by, t.suspend_reason,
       t.tags, t.metadata, t.version, t.created_at, t.updated_at,
       (SELECT count(*) FROM {schema}.jobs j
        WHERE j.tenant_id = t.id
          AND (SELECT r.status FROM {schema}.runtime r WHERE r.job_id = j.id) < 100)
           AS open_jobs
FROM {schema}.tenants t
WHERE (:after IS NULL OR t.tenant_key > :after)
ORDER BY t.tenant_key
LIMIT :limit;
