-- Repair verbs (acta.ledger.repair, acta.ledger.repair_bulk): an operator's restart, amend,
-- pause, resume, retire and purge. Status changes go through transition_guard/transition;
-- these are the rest, each guarded so that a row that moved since it was read is left alone.

-- name: repair_drop_result
-- A restarted job's old result goes: the next run writes its own.
DELETE FROM {schema}.results WHERE job_id = :job_id;

-- name: repair_job_limits
-- The job's own attempt limit (NULL: its definition's), for amend's guard.
SELECT r.max_attempts FROM {schema}.runtime r WHERE r.job_id = :job_id;

-- name: repair_amend
-- Guarded by the values amend read: a concurrent amend, or the job finishing, changes nothing.
UPDATE {schema}.runtime
SET priority     = :priority,
    max_attempts = :max_attempts,
    version      = version + 1,
    updated_at   = :now
WHERE job_id = :job_id
  AND status < 100
  AND priority = :old_priority
  AND max_attempts <=> :old_max_attempts;

-- name: repair_clear_tags
DELETE FROM {schema}.job_tags WHERE job_id = :job_id;

-- name: repair_definition
SELECT d.id, d.namespace_id, d.paused, d.retired
FROM {schema}.definitions d
JOIN {schema}.namespaces n ON n.id = d.namespace_id
WHERE n.name = :namespace AND d.name = :name;

-- name: repair_pause_definition
-- Zero rows: already so (a retired definition never changes here).
UPDATE {schema}.definitions
SET paused = :paused
WHERE id = :definition_id AND paused <> :paused AND retired = 0;

-- name: repair_retire_definition
UPDATE {schema}.definitions
SET paused = 1, retired = 1
WHERE id = :definition_id AND retired = 0;

-- name: repair_namespace
SELECT n.id, n.paused FROM {schema}.namespaces n WHERE n.name = :namespace;

-- name: repair_pause_namespace
UPDATE {schema}.namespaces
SET paused = :paused, version = version + 1
WHERE id = :namespace_id AND paused <> :paused;

-- name: repair_queued_of
-- A retired definition's waiting jobs, in id order after :after_id; running ones finish, and
-- recurring slots stay (paused with their definition, they never run).
SELECT r.job_id, j.job_ref
FROM {schema}.runtime r
JOIN {schema}.jobs j ON j.id = r.job_id
WHERE r.definition_id = :definition_id
  AND r.status IN (10, 11, 30, 31)
  AND r.job_id > :after_id
  AND NOT EXISTS (SELECT 1 FROM {schema}.schedules s WHERE s.slot_id = r.job_id)
ORDER BY r.job_id
LIMIT :limit;

-- name: repair_select
-- One batch of a bulk verb: the jobs of a namespace matching a filter, in id order after
-- :after_id. :statuses is a JSON array of status codes; every other criterion is optional.
-- acta's own jobs and recurring slots never match.
SELECT j.id AS job_id, j.job_ref
FROM {schema}.jobs j
JOIN {schema}.runtime r     ON r.job_id = j.id
JOIN {schema}.namespaces n  ON n.id = j.namespace_id
JOIN {schema}.definitions d ON d.id = j.definition_id
WHERE n.name = :namespace
  AND j.id > :after_id
  AND r.status IN (SELECT value FROM JSON_TABLE(:statuses, '$[*]' COLUMNS (value BIGINT PATH '$')) AS je)
  AND (:name IS NULL OR d.name = :name)
  AND (:tag IS NULL OR EXISTS (SELECT 1 FROM {schema}.job_tags t
                               WHERE t.job_id = j.id AND t.tag = :tag))
  AND (:correlation_key IS NULL OR j.correlation_key = :correlation_key)
  AND (:tenant IS NULL OR j.tenant_id = (SELECT tn.id FROM {schema}.tenants tn
                                            WHERE tn.tenant_key = :tenant))
  AND (:created_after IS NULL OR j.created_at >= :created_after)
  AND (:created_before IS NULL OR j.created_at < :created_before)
  AND (:finished_before IS NULL OR (r.status >= 100 AND r.updated_at < :finished_before))
  AND d.name NOT LIKE 'sys.%'
  AND NOT EXISTS (SELECT 1 FROM {schema}.schedules s WHERE s.slot_id = j.id)
ORDER BY j.id
LIMIT :limit;

-- name: repair_count
-- A bulk verb's dry run: how many jobs repair_select would walk through.
SELECT count(*) AS matched
FROM {schema}.jobs j
JOIN {schema}.runtime r     ON r.job_id = j.id
JOIN {schema}.namespaces n  ON n.id = j.namespace_id
JOIN {schema}.definitions d ON d.id = j.definition_id
WHERE n.name = :namespace
  AND r.status IN (SELECT value FROM JSON_TABLE(:statuses, '$[*]' COLUMNS (value BIGINT PATH '$')) AS je)
  AND (:name IS NULL OR d.name = :name)
  AND (:tag IS NULL OR EXISTS (SELECT 1 FROM {schema}.job_tags t
                               WHERE t.job_id = j.id AND t.tag = :tag))
  AND (:correlation_key IS NULL OR j.correlation_key = :correlation_key)
  AND (:tenant IS NULL OR j.tenant_id = (SELECT tn.id FROM {schema}.tenants tn
                                            WHERE tn.tenant_key = :tenant))
  AND (:created_after IS NULL OR j.created_at >= :created_after)
  AND (:created_before IS NULL OR j.created_at < :created_before)
  AND (:finished_before IS NULL OR (r.status >= 100 AND r.updated_at < :finished_before))
  AND d.name NOT LIKE 'sys.%'
  AND NOT EXISTS (SELECT 1 FROM {schema}.schedules s WHERE s.slot_id = j.id);

-- name: purgeable_before
-- Of the jobs :job_ids (a JSON array), those an operator's purge may delete: finished before
-- :before, never a schedule's slot, never a job with an open child, never a child whose
-- parent is still open (it may yet read the child's result). The delete itself, and the
-- tombstones that keep the refs resolving, are retention's statements (retention.sql).
SELECT j.id AS job_id, j.job_ref, j.namespace_id
FROM {schema}.jobs j
JOIN {schema}.runtime r ON r.job_id = j.id
WHERE j.id IN (SELECT value FROM JSON_TABLE(:job_ids, '$[*]' COLUMNS (value BIGINT PATH '$')) AS je)
  AND r.status >= 100
  AND r.updated_at < COALESCE(:before, CAST(UTC_TIMESTAMP(3) AS DATETIME(3)))
  -- SQLite gives a new row the highest id plus one: the newest job row waits for a younger
  -- one, or the next job would take the id its events still carry (see retention.sql).
  AND j.id < (SELECT max(x.id) FROM {schema}.jobs x)
  AND NOT EXISTS (SELECT 1 FROM {schema}.schedules s WHERE s.slot_id = j.id)
  AND NOT EXISTS (SELECT 1 FROM {schema}.jobs c
                  JOIN {schema}.runtime cr ON cr.job_id = c.id
                  WHERE c.parent_id = j.id AND cr.status < 100)
  AND (j.parent_id IS NULL OR NOT EXISTS (SELECT 1 FROM {schema}.runtime pr
                                          WHERE pr.job_id = j.parent_id AND pr.status < 100));
