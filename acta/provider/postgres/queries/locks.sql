-- Locks a running handler takes (ctx.lock): see migration 0021 and acta/ledger/locks.py.
-- Every statement runs after the lease fence (lease_guard) in the same transaction; lock
-- order: the job's runtime row (FOR SHARE, by the fence), then the lock row.

-- name: lock_of
-- The lock row of a key, locked, and whether its holder still holds it (its job is running at
-- the epoch the row names). A holder's epoch only moves forward, so a holder read as gone
-- never comes back; one read as holding may be let go a moment later, and the waiter looks
-- again at its next poll.
-- The holder's rows are read by subqueries, not joined: a reader that waited for the row lock
-- while another taker changed the holder re-checks the new row version against the rows it
-- had already joined (READ COMMITTED's re-check), so a LEFT JOIN matched nothing and showed
-- the new, live holder as gone (and its lock as free to take). A subquery runs on the row
-- version the lock was granted for.
SELECT k.holder_job_id, k.holder_epoch,
       (SELECT j.job_ref FROM {schema}.jobs j WHERE j.id = k.holder_job_id) AS holder_ref,
       COALESCE((SELECT r.lease_epoch = k.holder_epoch AND r.status = 21
                 FROM {schema}.runtime r WHERE r.job_id = k.holder_job_id), false) AS held
FROM {schema}.locks k
WHERE k.namespace_id = :namespace_id AND k.name = :name
FOR UPDATE;

-- name: lock_take
-- Take a free lock: a new row, or the row of a holder that no longer holds it. Two takers of a
-- new key race on the unique key: the second waits for the first to commit, and then finds the
-- row held; DO NOTHING leaves it, and the caller reads the row again (lock_of) to learn who won.
INSERT INTO {schema}.locks (namespace_id, name, holder_job_id, holder_epoch, since)
VALUES (:namespace_id, :name, :job_id, :epoch, COALESCE(:now::timestamptz, now()))
ON CONFLICT (namespace_id, name) DO UPDATE
SET holder_job_id = excluded.holder_job_id, holder_epoch = excluded.holder_epoch,
    since = excluded.since
WHERE {schema}.locks.holder_job_id = :prev_job_id AND {schema}.locks.holder_epoch = :prev_epoch;

-- name: lock_release
-- Release a lock this run holds: matched on holder and epoch, so a run whose lease was taken
-- back cannot release a lock another job took since.
DELETE FROM {schema}.locks
WHERE namespace_id = :namespace_id AND name = :name
  AND holder_job_id = :job_id AND holder_epoch = :epoch;
