-- Retention (sys.retention): purge finished jobs past their definition's retention, leaving a
-- tombstone per job so its ref still resolves, and drop events past the event retention.
-- Every statement works on one small batch; the caller commits each batch on its own.

-- name: retention_slot_held
-- The fence: the sys.retention slot is still this run's (same worker, same execution, still
-- running). Recovery that took the lease back makes this empty, and the batch writes nothing.
SELECT j.id AS job_id
FROM {schema}.jobs j
JOIN {schema}.runtime r ON r.job_id = j.id
WHERE j.job_ref = :slot_ref
  AND r.lease_owner = :worker_id
  AND r.executions = :execution
  AND r.status IN (20, 21);

-- name: purgeable_jobs
-- Finished jobs of this namespace whose finish is at least their definition's retention ago,
-- oldest finish first. Never a system slot or a schedule's slot, never a job with an open
-- child, never a child whose parent is still open (it may yet read the child's result).
-- SQLite gives a new row the highest id plus one, so deleting the newest job row of the
-- ledger would let the next job take its id, and the events, alerts and children that still
-- name that id would point at a stranger: the newest job row waits for a younger one.
SELECT j.id AS job_id, d.name
FROM {schema}.runtime r
JOIN {schema}.jobs j        ON j.id = r.job_id
JOIN {schema}.definitions d ON d.id = r.definition_id
-- The retention in force (effective_policy_view: an operator's override, where a JSON
-- null means kept forever, else the declaration).
JOIN {schema}.effective_policy_view ep ON ep.definition_id = d.id
WHERE r.namespace_id = :namespace_id
  AND r.status >= 100
  AND ep.retention_ms IS NOT NULL
  AND r.updated_at <= TIMESTAMPADD(MICROSECOND, (-ep.retention_ms) * 1000, :now)
  AND d.name NOT LIKE 'sys.%'
  AND j.id < (SELECT max(x.id) FROM {schema}.jobs x)
  AND NOT EXISTS (SELECT 1 FROM {schema}.schedules s WHERE s.slot_id = j.id)
  AND NOT EXISTS (SELECT 1 FROM {schema}.jobs c
                  JOIN {schema}.runtime cr ON cr.job_id = c.id
                  WHERE c.parent_id = j.id AND cr.status < 100)
  AND (j.parent_id IS NULL OR NOT EXISTS (SELECT 1 FROM {schema}.runtime pr
                                          WHERE pr.job_id = j.parent_id AND pr.status < 100))
ORDER BY r.updated_at, r.job_id
LIMIT :batch;

-- name: insert_tombstones
-- on duplicate key: no row
-- One tombstone per job about to be purged (:job_ids, a JSON array): ref, id, definition,
-- final status and finish instant.
INSERT INTO {schema}.purged_jobs
    (job_ref, job_id, namespace_id, definition_id, status, finished_at, purged_at)
SELECT j.job_ref, j.id, j.namespace_id, j.definition_id, r.status, r.updated_at, :now
FROM {schema}.jobs j
JOIN {schema}.runtime r ON r.job_id = j.id
WHERE j.id IN (SELECT value FROM JSON_TABLE(:job_ids, '$[*]' COLUMNS (value BIGINT PATH '$')) AS je)
  AND r.status >= 100;

-- name: purge_jobs
-- The job rows themselves; runtime, tags, result, steps, variables, progress, waits, signals,
-- latches and gate holds go with them (ON DELETE CASCADE). Events stay.
DELETE FROM {schema}.jobs
WHERE id IN (SELECT value FROM JSON_TABLE(:job_ids, '$[*]' COLUMNS (value BIGINT PATH '$')) AS je)
  AND EXISTS (SELECT 1 FROM {schema}.runtime r WHERE r.job_id = {schema}.jobs.id AND r.status >= 100);

-- name: purge_events
-- The oldest events of the namespace, by id (the order they were written, so close to the
-- order of their instants): of the first :batch, those older than the event retention.
DELETE FROM {schema}.events
WHERE id IN (
    SELECT x.id
    FROM (SELECT e.id, e.at FROM {schema}.events e
          WHERE e.namespace_id = :namespace_id
          ORDER BY e.id
          LIMIT :batch) x
    WHERE x.at < TIMESTAMPADD(MICROSECOND, (-:retention_ms) * 1000, :now));

-- name: purge_tombstones
-- Tombstones purged longer ago than the event retention: their timelines are gone too, so
-- their refs become unknown.
DELETE FROM {schema}.purged_jobs
WHERE namespace_id = :namespace_id
  AND purged_at < TIMESTAMPADD(MICROSECOND, -:retention_ms * 1000, :now)
ORDER BY purged_at
LIMIT :batch;

-- name: purged_job_by_ref
SELECT p.job_ref, p.job_id, n.name AS namespace, d.name, p.status, p.finished_at, p.purged_at
FROM {schema}.purged_jobs p
JOIN {schema}.namespaces n  ON n.id = p.namespace_id
JOIN {schema}.definitions d ON d.id = p.definition_id
WHERE p.job_ref = :job_ref
  AND (:namespace IS NULL OR n.name = :namespace);
