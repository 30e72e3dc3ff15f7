-- Guarded transitions: every settle, hand-back, recovery and operator change goes through
-- transition_guard then transition, in one transaction, with its events.

-- name: transition_guard
-- The compare-and-set read: the row must still be at this epoch, in an expected status and,
-- for worker writes, leased by this worker; for recovery, the lease must have lapsed.
SELECT r.control, r.status, r.executions, r.attempts, r.lane_id, r.open_children,
       EXISTS (SELECT 1 FROM {schema}.gate_holds h WHERE h.job_id = r.job_id) AS held,
       (SELECT j.parent_id FROM {schema}.jobs j WHERE j.id = r.job_id) AS parent_id,
       -- A recurring slot never ends: its terminal outcomes close a firing and re-arm it.
       EXISTS (SELECT 1 FROM {schema}.schedules s WHERE s.slot_id = r.job_id) AS slot
FROM {schema}.runtime r
WHERE r.job_id = :job_id
  AND r.lease_epoch = :epoch
  AND r.status IN (SELECT value FROM JSON_TABLE(:expect, '$[*]' COLUMNS (value BIGINT PATH '$')) AS je)
  AND (:owner IS NULL OR r.lease_owner = :owner)
  AND (:lapsed = 0 OR r.lease_expires_at < :now);

-- name: transition
-- :run_at, when given, is the new next_run_at (a durable wait's instant); otherwise :delay_ms
-- NULL keeps next_run_at and a number sets it to now plus the delay.
UPDATE {schema}.runtime
SET status           = :status,
    next_run_at      = CASE WHEN :run_at IS NOT NULL THEN :run_at
                            WHEN :delay_ms IS NULL THEN next_run_at
                            ELSE TIMESTAMPADD(MICROSECOND, (:delay_ms) * 1000, :now) END,
    attempts         = attempts + :charge,
    lease_owner      = NULL,
    lease_expires_at = NULL,
    control          = CASE WHEN :status >= 100 THEN 0 ELSE control END,
    version          = version + 1,
    updated_at       = :now
WHERE job_id = :job_id AND lease_epoch = :epoch;

-- name: request_cancel
-- A running job is cancelled when its run ends: the worker learns it from its heartbeat.
UPDATE {schema}.runtime
SET control = :control, version = version + 1, updated_at = :now
WHERE job_id = :job_id AND lease_epoch = :epoch AND status IN (20, 21) AND control = 0;

-- name: upsert_result
INSERT INTO {schema}.results (job_id, codec, body, created_at)
SELECT :job_id, :codec, :body, :now FROM DUAL
ON DUPLICATE KEY UPDATE
    codec = VALUES(codec), body = VALUES(body), created_at = VALUES(created_at);

-- name: lapsed_leases
-- Leases past their expiry by the database clock, oldest first, with the policy recovery needs.
SELECT r.job_id, j.job_ref, r.namespace_id, r.status, r.executions, r.attempts, r.lease_epoch,
       r.lease_owner,
       -- The job's own limit, else the definition's in force (effective_policy_view: an
       -- operator's override, else the declaration); the audit level in force likewise.
       COALESCE(r.max_attempts, ep.max_attempts) AS max_attempts,
       ep.audit_code AS audit_level, d.name
FROM {schema}.runtime r
JOIN {schema}.jobs j        ON j.id = r.job_id
JOIN {schema}.definitions d ON d.id = r.definition_id
JOIN {schema}.effective_policy_view ep ON ep.definition_id = d.id
WHERE r.namespace_id = :namespace_id
  AND r.status IN (20, 21)
  AND r.lease_expires_at < :now
  AND (:only_job_id IS NULL OR r.job_id = :only_job_id)
ORDER BY r.lease_expires_at
LIMIT :limit;

-- name: lease_taken
-- After a worker write's guard failed: was the lease at :epoch taken from the worker? Whoever
-- releases a lease other than its holder (recovery) writes lease-lost for that (job, epoch) in
-- the same transaction, so without one the spent guard is the worker's own earlier write,
-- committed with its reply lost. The row comes too, to answer as that write did.
SELECT r.lease_epoch, r.status, r.lease_owner, r.executions, r.control,
       EXISTS (SELECT 1 FROM {schema}.events e
               WHERE e.job_id = :job_id AND e.epoch = :epoch AND e.code = 30) AS taken
FROM {schema}.runtime r
WHERE r.job_id = :job_id;
