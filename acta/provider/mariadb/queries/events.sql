-- The append-only event ledger. Every state change writes its events in its own transaction.

-- name: insert_event
INSERT INTO {schema}.events
    (at, namespace_id, job_id, job_ref, worker_id, code, execution, epoch, outcome, reason,
     duration_ms, message, detail, actor)
SELECT :now, :namespace_id, :job_id, :job_ref, :worker_id, :code, :execution, :epoch,
       :outcome, :reason, :duration_ms, :message, :detail, :actor
FROM DUAL;
