-- Reads for the embedded dashboard (acta.dashboard). Each one is bounded: a LIMIT, a time
-- window, or a group per definition, so a page costs the same on a ledger of any size.
-- ``:now`` is the test clock's instant, or NULL to let the database clock judge.

-- name: dash_now
SELECT :now AS now_at;

-- name: dash_job_counts
-- Open jobs of the namespace per status, acta's own system jobs left out. Each count is one
-- range of an index whose leading keys are (namespace_id, status): runtime_by_status for ready,
-- blocked, suspended and paused jobs, runtime_leases for leased ones. Each reads at most :cap
-- entries, so a count equal to :cap means "at least that many" (the page says so). Each is
-- ordered by its index's next keys, so only a walk of that index stops at the cap: a pass
-- over the table would read and sort every match, and the planner no longer prefers one
-- where most rows match (a LIMIT alone lets it, and on a heap ordered by age that pass
-- crosses the whole history before it meets the backlog). Finished
-- jobs are not counted here: the overview counts those finished within its window
-- (dash_throughput), so no read walks the history.
-- SQLite uses a partial index only where the WHERE clause repeats its predicate as
-- written, hence the IN list beside each status.
WITH ns AS (
    SELECT n.id FROM {schema}.namespaces n WHERE n.name = :namespace
), sys AS (
    SELECT d.id FROM {schema}.definitions d
    WHERE d.namespace_id = (SELECT ns.id FROM ns) AND d.name LIKE 'sys.%'
)
SELECT
    (SELECT count(*) FROM (
        SELECT 1 FROM {schema}.runtime r
        WHERE r.namespace_id = (SELECT ns.id FROM ns)
          AND r.status IN (10, 11, 30, 31, 101, 102) AND r.status = 10
          AND r.definition_id NOT IN (SELECT sys.id FROM sys)
        ORDER BY r.definition_id, r.next_run_at
        LIMIT :cap) c) AS ready,
    (SELECT count(*) FROM (
        SELECT 1 FROM {schema}.runtime r
        WHERE r.namespace_id = (SELECT ns.id FROM ns)
          AND r.status IN (10, 11, 30, 31, 101, 102) AND r.status = 11
          AND r.definition_id NOT IN (SELECT sys.id FROM sys)
        ORDER BY r.definition_id, r.next_run_at
        LIMIT :cap) c) AS blocked,
    (SELECT count(*) FROM (
        SELECT 1 FROM {schema}.runtime r
        WHERE r.namespace_id = (SELECT ns.id FROM ns)
          AND r.status IN (20, 21) AND r.status = 20
          AND r.definition_id NOT IN (SELECT sys.id FROM sys)
        ORDER BY r.lease_expires_at
        LIMIT :cap) c) AS dispatched,
    (SELECT count(*) FROM (
        SELECT 1 FROM {schema}.runtime r
        WHERE r.namespace_id = (SELECT ns.id FROM ns)
          AND r.status IN (20, 21) AND r.status = 21
          AND r.definition_id NOT IN (SELECT sys.id FROM sys)
        ORDER BY r.lease_expires_at
        LIMIT :cap) c) AS executing,
    (SELECT count(*) FROM (
        SELECT 1 FROM {schema}.runtime r
        WHERE r.namespace_id = (SELECT ns.id FROM ns)
          AND r.status IN (10, 11, 30, 31, 101, 102) AND r.status = 30
          AND r.definition_id NOT IN (SELECT sys.id FROM sys)
        ORDER BY r.definition_id, r.next_run_at
        LIMIT :cap) c) AS suspended,
    (SELECT count(*) FROM (
        SELECT 1 FROM {schema}.runtime r
        WHERE r.namespace_id = (SELECT ns.id FROM ns)
          AND r.status IN (10, 11, 30, 31, 101, 102) AND r.status = 31
          AND r.definition_id NOT IN (SELECT sys.id FROM sys)
        ORDER BY r.definition_id, r.next_run_at
        LIMIT :cap) c) AS paused;

-- name: dash_backlog
-- Ready jobs per definition: how many, how many are due, and the oldest one's due time. One
-- row per definition of the catalog (system jobs left out), each read from runtime_by_status:
-- the counts as ranges capped at :cap entries, the oldest as the first entry of the
-- definition's range (the index is in next_run_at order within it); ordered like the index,
-- so only an index walk stops at the cap. A schedule's recurring slot is not backlog (it
-- waits for its next firing). Definitions with no ready job are dropped; the longest waiting
-- come first.
SELECT b.job_name, b.jobs, b.due,
       CASE WHEN b.oldest_at <= :now_at THEN b.oldest_at END AS oldest_due_at
FROM (
    SELECT d.name AS job_name,
           -- MariaDB cannot see d from a derived table inside a subquery: the counts are
           -- capped after counting.
           LEAST(:cap, (SELECT count(*) FROM {schema}.runtime r
               WHERE r.namespace_id = d.namespace_id AND r.status = 10
                 AND r.definition_id = d.id
                 AND NOT EXISTS (SELECT 1 FROM {schema}.schedules s
                                 WHERE s.slot_id = r.job_id))) AS jobs,
           LEAST(:cap, (SELECT count(*) FROM {schema}.runtime r
               WHERE r.namespace_id = d.namespace_id AND r.status = 10
                 AND r.definition_id = d.id AND r.next_run_at <= :now_at
                 AND NOT EXISTS (SELECT 1 FROM {schema}.schedules s
                                 WHERE s.slot_id = r.job_id))) AS due,
           (SELECT r.next_run_at FROM {schema}.runtime r
            WHERE r.namespace_id = d.namespace_id AND r.status = 10
              AND r.definition_id = d.id
              AND NOT EXISTS (SELECT 1 FROM {schema}.schedules s WHERE s.slot_id = r.job_id)
            ORDER BY r.next_run_at
            LIMIT 1) AS oldest_at
    FROM {schema}.definitions d
    WHERE d.namespace_id = (SELECT n.id FROM {schema}.namespaces n WHERE n.name = :namespace)
      AND d.name NOT LIKE 'sys.%'
) b
WHERE b.jobs > 0
ORDER BY b.oldest_at, b.job_name
LIMIT :limit;

-- name: dash_throughput
-- Jobs that finished since :since, per minute and final status. It reads the runtime rows of
-- finished jobs through their (namespace_id, updated_at) index, so the events table needs no
-- index by time and every audit level counts the same. Grouped on ids first, so system
-- jobs are left out per group rather than per row.
SELECT g.minute, sum(g.succeeded) AS succeeded, sum(g.failed) AS failed,
       sum(g.cancelled) AS cancelled
FROM (
    SELECT TIMESTAMPDIFF(MINUTE, :since, r.updated_at) AS minute,
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
       COALESCE(r.max_attempts, ep.max_attempts) AS max_attempts, j.created_at, r.next_run_at,
       r.updated_at, j.correlation_key,
       CASE WHEN r.status >= 100 THEN r.updated_at END AS finished_at,
       EXISTS (SELECT 1 FROM {schema}.schedules s WHERE s.slot_id = j.id) AS is_slot,
       (SELECT l.name FROM {schema}.lanes l WHERE l.id = r.lane_id) AS lane,
       -- The last failure's message, as jobs_view reads it (failed or retried executions).
       (SELECT le.message FROM {schema}.events le WHERE le.id = (
           SELECT max(e.id) FROM {schema}.events e
           WHERE e.job_id = j.id AND (e.code IN (21, 30) OR (e.code = 11 AND e.outcome IN (2, 3)))
       )) AS last_error,
       (SELECT tn.tenant_key FROM {schema}.tenants tn WHERE tn.id = j.tenant_id) AS tenant,
       (SELECT GROUP_CONCAT(t.tag ORDER BY t.tag SEPARATOR X'1F') FROM {schema}.job_tags t
        WHERE t.job_id = j.id) AS tags
FROM {schema}.jobs j
JOIN {schema}.runtime r ON r.job_id = j.id
JOIN {schema}.definitions d ON d.id = j.definition_id
JOIN {schema}.effective_policy_view ep ON ep.definition_id = d.id
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
  AND (:lane IS NULL OR r.lane_id = (
      SELECT l.id FROM {schema}.lanes l WHERE l.name = :lane
        AND l.namespace_id = j.namespace_id))
  -- Error text: a substring of any failure message of the job, in any case (PostgreSQL's
  -- ILIKE): messages are utf8mb4_bin here, so both sides are lowered (walked newest first,
  -- bounded by the page's LIMIT like every other filter here). A scalar subquery with
  -- LIMIT 1, as on the other dialects: each job's events are looked up by the job index.
  AND (:error IS NULL OR (
      SELECT 1 FROM {schema}.events e
      WHERE e.job_id = j.id AND (e.code IN (21, 30) OR (e.code = 11 AND e.outcome IN (2, 3)))
        AND LOWER(e.message) LIKE CONCAT('%', LOWER(:error), '%')
      LIMIT 1) IS NOT NULL)
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

-- name: dash_schedule_firings
-- When each schedule of the namespace really fired last: its slot's latest fired event (46),
-- one lookup per schedule through the events' job index. NULL for a schedule that has not
-- fired yet (its cursor then holds the instant it was armed, not a firing).
SELECT d.name AS job_name, s.name,
       (SELECT max(e.at) FROM {schema}.events e
        WHERE e.job_id = s.slot_id AND e.code = 46) AS fired_at
FROM {schema}.schedules s
JOIN {schema}.definitions d ON d.id = s.definition_id
WHERE s.namespace_id = (SELECT n.id FROM {schema}.namespaces n WHERE n.name = :namespace)
ORDER BY d.name, s.name
LIMIT 500;

-- name: dash_lanes
-- Lanes of the namespace with their head job and how many jobs wait blocked behind it
-- (status 11), shown up to 10,001 as on the other dialects; the most blocked first. MariaDB
-- refuses an outer column inside a derived table, so the count is a plain scalar subquery:
-- a range of the runtime_lane_line index (lane_id, status), read without the table.
SELECT l.name AS lane, h.job_ref AS head_job_ref, hs.name AS head_status,
       LEAST((SELECT count(*) FROM {schema}.runtime r
              WHERE r.lane_id = l.id AND r.status = 11), 10001) AS blocked,
       l.last_seq
FROM {schema}.lanes l
JOIN {schema}.namespaces n ON n.id = l.namespace_id
LEFT JOIN {schema}.jobs h ON h.id = l.head_job_id
LEFT JOIN {schema}.runtime hr ON hr.job_id = l.head_job_id
LEFT JOIN {schema}.codes hs ON hs.family = 'job_status' AND hs.code = hr.status
WHERE n.name = :namespace
ORDER BY blocked DESC, l.name
LIMIT 200;

-- name: dash_gates
-- Concurrency gates of the namespace: the limit in force, how many slots are held, by whom
-- (holders is gates_view's JSON array of refs, JSON_ARRAYAGG here).
SELECT v.name, v.kind, v.limit_in_force, v.declared_limit, v.held, v.holders
FROM {schema}.gates_view v
WHERE v.namespace = :namespace
ORDER BY v.held DESC, v.name
LIMIT 200;

-- name: dash_meters
-- Rate meters of the namespace: the rate in force per period, and when the next admission is
-- free (in the past: a job would be admitted now); admitted_until is the last admission's slot.
SELECT v.name, v.rate, v.period_ms, v.declared_rate, v.declared_period_ms, v.next_free_at,
       v.admitted_until
FROM {schema}.meters_view v
WHERE v.namespace = :namespace
ORDER BY v.name
LIMIT 200;
