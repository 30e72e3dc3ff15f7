-- Writes a retried verb must recognise after a lost COMMIT reply (acta.ledger.doubt): the id
-- an attempt wrote, and the reads that find it again.

-- name: insert_event_id
-- insert_event, answering the new event's id (what a retry of the verb looks for).
INSERT INTO {schema}.events
    (at, namespace_id, job_id, job_ref, worker_id, code, execution, epoch, outcome, reason,
     duration_ms, message, detail, actor)
SELECT :now, :namespace_id, :job_id, :job_ref, :worker_id, :code, :execution, :epoch,
       :outcome, :reason, :duration_ms, :message, :detail, :actor
RETURNING id;

-- name: event_written
SELECT e.id FROM {schema}.events e WHERE e.id = :id AND e.code = :code;

-- name: last_job_event
-- The newest event of a code on a job (by events_by_job): inside the transaction that wrote
-- it (SQLite runs one writer), the one it wrote.
SELECT max(e.id) AS id FROM {schema}.events e WHERE e.job_id = :job_id AND e.code = :code;

-- name: alert_written
SELECT a.id FROM {schema}.alerts a WHERE a.id = :alert_id AND a.job_id = :job_id;
