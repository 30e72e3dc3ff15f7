-- System jobs: a worker whose executors are all busy still takes a due system job by its id.

-- name: claim_job
-- Lease one given job if it is ready and due (the recovery slot). A row another worker is
-- claiming right now is waited for, then re-checked: its status is no longer ready, so this
-- takes nothing.
UPDATE {schema}.runtime r
SET status           = 20,
    lease_owner      = :worker_id,
    lease_epoch      = r.lease_epoch + 1,
    lease_expires_at = COALESCE(:now::timestamptz, now())
                       + :lease_ms::bigint * interval '1 millisecond',
    version          = r.version + 1,
    updated_at       = COALESCE(:now::timestamptz, now())
WHERE r.job_id = :job_id
  AND r.status = 10
  AND r.next_run_at <= COALESCE(:now::timestamptz, now())
  AND EXISTS (SELECT 1 FROM {schema}.workers w WHERE w.id = :worker_id AND w.status = 1)
RETURNING r.job_id, r.lease_epoch;
