-- Locks a running handler takes (ctx.lock): see migration 0018 and acta/ledger/locks.py.
-- Every statement runs after the lease fence (lease_guard) in the same transaction.

-- name: lock_of
-- The lock row of a key, locked, and whether its holder still holds it (its job is running at
-- the epoch the row names). The holder's rows are read in subqueries, which a locking read
-- does not lock: only the lock row is.
SELECT k.holder_job_id, k.holder_epoch,
       (SELECT j.job_ref FROM {schema}.jobs j WHERE j.id = k.holder_job_id) AS holder_ref,
       COALESCE((SELECT r.lease_epoch = k.holder_epoch AND r.status = 21
                 FROM {schema}.runtime r WHERE r.job_id = k.holder_job_id), 0) AS held
FROM {schema}.locks k
WHERE k.namespace_id = :namespace_id AND k.name = :name
FOR UPDATE;

-- name: lock_take.insert
-- on duplicate key: no row
-- Take a new key. Two takers of a new key race on the unique key: the second waits for the
-- first to commit and then inserts nothing; the caller reads the row again (lock_of).
INSERT INTO {schema}.locks (namespace_id, name, holder_job_id, holder_epoch, since)
VALUES (:namespace_id, :name, :job_id, :epoch, :now);

-- name: lock_take.update
-- Take over the row of a holder that no longer holds it (the one lock_of read, still locked).
UPDATE {schema}.locks
SET holder_job_id = :job_id, holder_epoch = :epoch, since = :now
WHERE namespace_id = :namespace_id AND name = :name
  AND holder_job_id = :prev_job_id AND holder_epoch = :prev_epoch;

-- name: lock_release
-- Release a lock this run holds: matched on holder and epoch, so a run whose lease was taken
-- back cannot release a lock another job took since.
DELETE FROM {schema}.locks
WHERE namespace_id = :namespace_id AND name = :name
  AND holder_job_id = :job_id AND holder_epoch = :epoch;
