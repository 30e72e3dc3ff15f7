-- System jobs: a worker whose executors are all busy still takes a due system job by its id.

-- name: claim_job
-- Lease one given job if it is ready and due (the recovery slot).
WITH t(now) AS (SELECT COALESCE(:now, strftime('%Y-%m-%d %H:%M:%f', 'now')))
UPDATE {schema}.runtime
SET status           = 20,
    lease_owner      = :worker_id,
    lease_epoch      = lease_epoch + 1,
    lease_expires_at = strftime('%Y-%m-%d %H:%M:%f', (SELECT now FROM t),
                                printf('%+.3f seconds', :lease_ms / 1000.0)),
    version          = version + 1,
    updated_at       = (SELECT now FROM t)
WHERE job_id = :job_id
  AND status = 10
  AND next_run_at <= (SELECT now FROM t)
  AND EXISTS (SELECT 1 FROM {schema}.workers w WHERE w.id = :worker_id AND w.status = 1)
RETURNING job_id, lease_epoch;
