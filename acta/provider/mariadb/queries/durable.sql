-- Durable execution: the rows a handler keeps under its job's lease (steps, variables,
-- progress, waits), signals sent to a job, and the latches that hold a waiting parent.
-- Every worker write here is fenced: it happens only while the run's lease is current.

-- name: lease_guard
-- The fence for a handler's durable write: the job is still executing under this worker's
-- lease at this epoch. SQLite runs one writer at a time, so nothing moves until commit.
SELECT r.status, r.open_children, r.namespace_id
FROM {schema}.runtime r
WHERE r.job_id = :job_id AND r.lease_epoch = :epoch AND r.lease_owner = :worker_id
  AND r.status = 21;

-- name: durable_steps
SELECT name, state, at_most_once, execution, codec, body, error
FROM {schema}.steps WHERE job_id = :job_id;

-- name: durable_variables
SELECT name, codec, body FROM {schema}.variables WHERE job_id = :job_id;

-- name: step_write.lock
-- A completed step is final: nothing overwrites it. A write of the state the step is already
-- in changes nothing either (a retry after a lost COMMIT reply): no row changed tells the verb
-- not to write the step's event again. The program reads the step's state first
-- (ON DUPLICATE KEY UPDATE has no WHERE, and counts an unchanged row as changed).
SELECT state FROM {schema}.steps WHERE job_id = :job_id AND name = :name FOR UPDATE;

-- name: step_write.insert
INSERT INTO {schema}.steps
    (job_id, name, state, at_most_once, execution, codec, body, error, started_at, completed_at)
VALUES (:job_id, :name, :state, :at_most_once, :execution, :codec, :body, :error, :now,
        CASE WHEN :state = 2 THEN :now END);

-- name: step_write.update
-- An interruption is recorded by a later execution; the step began in the earlier one.
UPDATE {schema}.steps
SET execution    = CASE WHEN :state = 3 THEN execution ELSE :execution END,
    codec        = :codec,
    body         = :body,
    error        = :error,
    completed_at = CASE WHEN :state = 2 THEN :now END,
    state        = :state
WHERE job_id = :job_id AND name = :name AND state <> 2 AND state <> :state;

-- name: variable_write
INSERT INTO {schema}.variables (job_id, name, codec, body, updated_at)
SELECT :job_id, :name, :codec, :body, :now FROM DUAL
ON DUPLICATE KEY UPDATE
    codec = VALUES(codec), body = VALUES(body), updated_at = VALUES(updated_at);

-- name: progress_write
INSERT INTO {schema}.progress (job_id, done, total, message, updated_at)
SELECT :job_id, :done, :total, :message, :now FROM DUAL
ON DUPLICATE KEY UPDATE
    done = VALUES(done), total = VALUES(total), message = VALUES(message),
    updated_at = VALUES(updated_at);

-- name: progress_of
SELECT p.done, p.total, p.message, p.updated_at
FROM {schema}.progress p WHERE p.job_id = :job_id;

-- name: wait_arm
-- on duplicate key: no row
-- Armed once: a wait that exists keeps its instant, however often the handler re-enters.
-- due_at is :until, or now plus :ms, or NULL (no timeout).
INSERT INTO {schema}.waits (job_id, kind, name, due_at, armed_at, execution)
SELECT :job_id, :kind, :name,
       CASE WHEN :until IS NOT NULL THEN :until
            WHEN :ms IS NOT NULL
            THEN TIMESTAMPADD(MICROSECOND, (:ms) * 1000, :now)
       END,
       :now, :execution
FROM DUAL;

-- name: wait_of
-- The wait, and whether it has expired by the clock that armed it (the database's, or :now).
SELECT w.due_at, w.armed_at, w.due_at IS NOT NULL AND w.due_at <= :now AS expired
FROM {schema}.waits w
WHERE w.job_id = :job_id AND w.kind = :kind AND w.name = :name;

-- name: wait_rearm
-- A children wait used again after an earlier release: open it again, keeping its instant.
UPDATE {schema}.waits SET released_at = NULL
WHERE job_id = :job_id AND kind = :kind AND name = :name;

-- name: signal_of
SELECT s.codec, s.body, s.sent_at FROM {schema}.signals s
WHERE s.job_id = :job_id AND s.name = :name;

-- name: signal_target
-- The job a signal is for. SQLite's single writer keeps it still until commit.
SELECT j.id AS job_id, j.job_ref, j.namespace_id, r.status, d.name
FROM {schema}.jobs j
JOIN {schema}.runtime r     ON r.job_id = j.id
JOIN {schema}.namespaces n  ON n.id = j.namespace_id
JOIN {schema}.definitions d ON d.id = j.definition_id
WHERE j.job_ref = :job_ref AND n.name = :namespace;

-- name: signal_insert
-- on duplicate key: no row
-- The first signal of a name is kept; a second one of the same name inserts nothing.
INSERT INTO {schema}.signals (job_id, name, codec, body, sent_at)
SELECT :job_id, :name, :codec, :body, :now FROM DUAL
RETURNING sent_at;

-- name: wait_release.update
-- Release an open wait that has not expired (a late signal never revives an expired one).
UPDATE {schema}.waits
SET released_at = :now
WHERE job_id = :job_id AND kind = :kind AND name = :name AND released_at IS NULL
  AND (due_at IS NULL OR due_at > :now);

-- name: wait_release.select
SELECT name FROM {schema}.waits WHERE job_id = :job_id AND kind = :kind AND name = :name;

-- name: children_wait_release.lock
-- The last open child finished: release the parent's open children wait (if not expired).
-- The wait's name stands for its row among the job's children waits.
SELECT name AS id FROM {schema}.waits
WHERE job_id = :job_id AND kind = 3 AND released_at IS NULL
  AND (due_at IS NULL OR due_at > :now)
FOR UPDATE;

-- name: children_wait_release.update
UPDATE {schema}.waits SET released_at = :now
WHERE job_id = :job_id AND kind = 3 AND name IN (
    SELECT value FROM JSON_TABLE(:_ids, '$[*]' COLUMNS (value VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin PATH '$')) AS ids);

-- name: children_wait_release.select
SELECT name FROM {schema}.waits
WHERE job_id = :job_id AND kind = 3 AND name IN (
    SELECT value FROM JSON_TABLE(:_ids, '$[*]' COLUMNS (value VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin PATH '$')) AS ids);

-- name: wait_park
-- The suspension that parks a job on this wait (in the suspension's transaction).
UPDATE {schema}.waits SET parked_in = :execution
WHERE job_id = :job_id AND kind = :kind AND name = :name;

-- name: wake
-- A suspended job whose wait was released is ready now.
UPDATE {schema}.runtime
SET status = 10, next_run_at = :now, version = version + 1,
    updated_at = :now
WHERE job_id = :job_id AND status = 30;

-- name: latch_release
-- Children reached a terminal status (:child_ids, a JSON array): their latches go, and each
-- parent has as many fewer open children as latches it lost.
DELETE FROM {schema}.latches
WHERE child_id IN (SELECT value FROM JSON_TABLE(:child_ids, '$[*]' COLUMNS (value BIGINT PATH '$')) AS je)
RETURNING parent_id;

-- name: child_finished.update
UPDATE {schema}.runtime
SET open_children = open_children - :count, version = version + 1, updated_at = :now
WHERE job_id = :parent_id;

-- name: child_finished.select
SELECT r.open_children, r.status, r.namespace_id, j.job_ref
FROM {schema}.runtime r JOIN {schema}.jobs j ON j.id = r.job_id
WHERE r.job_id = :parent_id;

-- name: children_spawned
-- Under the parent's lease (the verb checked it in this transaction).
UPDATE {schema}.runtime SET open_children = open_children + :count
WHERE job_id = :job_id;

-- name: children_named
-- The children a parent already spawned under these names (a re-entry spawning them again).
SELECT j.id AS job_id, j.job_ref, j.child_name
FROM {schema}.jobs j
WHERE j.parent_id = :parent_id
  AND j.child_name IN (SELECT value FROM JSON_TABLE(:names, '$[*]' COLUMNS (value VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin PATH '$')) AS je);

-- name: latch_insert
INSERT INTO {schema}.latches (child_id, parent_id) VALUES (:child_id, :parent_id);

-- name: children_of
-- A parent's children in spawn order, with their outcome and stored result.
SELECT j.id AS job_id, j.job_ref, j.child_name, d.name, r.status, res.codec, res.body
FROM {schema}.jobs j
JOIN {schema}.runtime r     ON r.job_id = j.id
JOIN {schema}.definitions d ON d.id = j.definition_id
LEFT JOIN {schema}.results res ON res.job_id = j.id
WHERE j.parent_id = :parent_id
ORDER BY j.id;

-- name: alert_insert
INSERT INTO {schema}.alerts
    (namespace_id, job_id, job_ref, kind, severity, title, detail, opened_at)
SELECT :namespace_id, :job_id, :job_ref, :kind, :severity, :title, :detail, :now
RETURNING id AS alert_id;
