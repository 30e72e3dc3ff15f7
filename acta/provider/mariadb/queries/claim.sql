-- Claiming: take due ready rows in claim order under a fresh lease epoch, then start them.

-- name: claim.lock
-- Claim order: priority (high first), then due time, then id. Only an active worker claims.
-- A suspended job (30) whose timer is due is claimed like a ready one: its handler re-enters.
-- Definitions listed in :skip (no handler in this worker) are left for other workers.
-- :only_job_id, when given, narrows the claim to that one job (a busy worker taking the
-- recovery slot). SKIP LOCKED passes over rows another claimer is taking right now; the
-- subqueries lock nothing (a locking read locks only the rows of its own FROM).
SELECT r.job_id AS id
FROM {schema}.runtime r
WHERE r.namespace_id = :namespace_id
  AND r.status IN (10, 30)
  AND r.next_run_at <= :now
  AND r.definition_id NOT IN (
      SELECT value FROM JSON_TABLE(:skip, '$[*]' COLUMNS (value BIGINT PATH '$')) AS s)
  -- An operator's pause stops claims from the next claim on (runs already taken finish).
  AND r.definition_id NOT IN (SELECT d.id FROM {schema}.definitions d
                              WHERE d.namespace_id = :namespace_id AND d.paused = 1)
  -- A paused namespace still runs acta's own sys.* jobs: recovery keeps leases honest.
  AND (NOT EXISTS (SELECT 1 FROM {schema}.namespaces n
                   WHERE n.id = :namespace_id AND n.paused = 1)
       OR r.definition_id IN (SELECT d.id FROM {schema}.definitions d
                              WHERE d.namespace_id = :namespace_id AND d.name LIKE 'sys.%'))
  AND (:only_job_id IS NULL OR r.job_id = :only_job_id)
  AND EXISTS (SELECT 1 FROM {schema}.workers w WHERE w.id = :worker_id AND w.status = 1)
ORDER BY r.priority DESC, r.next_run_at, r.job_id
LIMIT :limit
FOR UPDATE SKIP LOCKED;

-- name: claim.update
UPDATE {schema}.runtime
SET status           = 20,
    lease_owner      = :worker_id,
    lease_epoch      = lease_epoch + 1,
    lease_expires_at = TIMESTAMPADD(MICROSECOND, :lease_ms * 1000, :now),
    version          = version + 1,
    updated_at       = :now
WHERE job_id IN (SELECT value FROM JSON_TABLE(:_ids, '$[*]' COLUMNS (value BIGINT PATH '$')) AS ids)
  AND status IN (10, 30);

-- name: claim.select
SELECT job_id, lease_epoch FROM {schema}.runtime
WHERE job_id IN (SELECT value FROM JSON_TABLE(:_ids, '$[*]' COLUMNS (value BIGINT PATH '$')) AS ids) AND lease_owner = :worker_id AND status = 20
ORDER BY priority DESC, next_run_at, job_id;

-- name: claimed_jobs
SELECT j.id AS job_id, j.job_ref, d.name, j.definition_id, j.namespace_id, r.lease_epoch,
       r.attempts, r.executions, r.priority, j.input_codec, j.input, j.correlation_key,
       j.created_at, r.lane_id, j.concurrency_key, r.ticket_at,
       j.parent_id, j.root_id, j.deadline_at, j.deadline_strict, r.max_attempts,
       pj.job_ref AS parent_ref, rj.job_ref AS root_ref, j.trace_context
FROM {schema}.runtime r
JOIN {schema}.jobs j        ON j.id = r.job_id
JOIN {schema}.definitions d ON d.id = j.definition_id
LEFT JOIN {schema}.jobs pj  ON pj.id = j.parent_id
LEFT JOIN {schema}.jobs rj  ON rj.id = j.root_id
WHERE r.job_id IN (SELECT value FROM JSON_TABLE(:job_ids, '$[*]' COLUMNS (value BIGINT PATH '$')) AS je)
ORDER BY r.priority DESC, r.next_run_at, r.job_id;

-- name: start.update
-- dispatched -> executing, fenced by (job, epoch, status, owner). Zero rows: the lease is gone.
UPDATE {schema}.runtime
SET status     = 21,
    executions = executions + 1,
    version    = version + 1,
    updated_at = :now
WHERE job_id = :job_id AND lease_epoch = :epoch AND status = 20 AND lease_owner = :worker_id;

-- name: start.select
SELECT executions, control FROM {schema}.runtime
WHERE job_id = :job_id AND lease_epoch = :epoch AND status = 21 AND lease_owner = :worker_id;

-- name: claim_in_doubt
-- The probe for a claim whose commit is in doubt (its reply was lost): the rows leased to this
-- worker that it does not know it holds (:held, a JSON array of job ids) are what that claim
-- took. Same shape as fused_claim's result: executions is the count before the claim, started
-- says whether the claim started the run.
SELECT r.job_id, j.job_ref, d.name, j.definition_id, j.namespace_id, r.lease_epoch,
       r.attempts, r.executions - CASE WHEN r.status = 21 THEN 1 ELSE 0 END AS executions,
       r.executions AS execution, r.control, r.status = 21 AS started,
       r.priority, j.input_codec, j.input, j.correlation_key, j.created_at, r.lane_id,
       j.concurrency_key, r.ticket_at,
       j.parent_id, j.root_id, j.deadline_at, j.deadline_strict, r.max_attempts,
       pj.job_ref AS parent_ref, rj.job_ref AS root_ref, j.trace_context
FROM {schema}.runtime r
JOIN {schema}.jobs j        ON j.id = r.job_id
JOIN {schema}.definitions d ON d.id = j.definition_id
LEFT JOIN {schema}.jobs pj  ON pj.id = j.parent_id
LEFT JOIN {schema}.jobs rj  ON rj.id = j.root_id
WHERE r.lease_owner = :worker_id
  AND r.status IN (20, 21)
  AND r.job_id NOT IN (SELECT value FROM JSON_TABLE(:held, '$[*]' COLUMNS (value BIGINT PATH '$')) AS je)
ORDER BY r.priority DESC, r.next_run_at, r.job_id;
