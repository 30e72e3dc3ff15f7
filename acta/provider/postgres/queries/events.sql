-- The append-only event ledger. Every state change writes its events in its own transaction.

-- name: insert_event
INSERT INTO {schema}.events
    (at, namespace_id, job_id, job_ref, worker_id, code, execution, epoch, outcome, reason,
     duration_ms, message, detail, actor)
VALUES (COALESCE(:now::timestamptz, now()), :namespace_id, :job_id, :job_ref, :worker_id, :code,
        :execution, :epoch, :outcome, :reason, :duration_ms, :message, :detail, :actor);

-- name: ring
-- The database bell for writes that do not ring it themselves (a laned enqueue): NOTIFY is
-- delivered on commit, so a rolled-back enqueue wakes nobody.
SELECT pg_notify(:channel, :namespace);
