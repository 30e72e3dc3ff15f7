-- Recurring schedules: the cursors of a definition's schedules, read and moved by the runs of
-- its recurring slot, and changed by registration and operators. What is due is computed in
-- Python (acta.policy.schedule) from the rows read here, inside the same transaction.

-- name: schedule_now
-- The instant a schedule verb reasons with: the test clock's, or the database's.
SELECT :now AS now_at;

-- name: schedule_rows
-- Every schedule of one slot (one definition in one namespace), in name order.
SELECT s.id, s.name, s.every_ms, s.cron, s.zone, s.misfire, s.declared, s.overridden,
       s.cursor_at, s.pending_at, s.pending_cursor AS pending_cursor_at, s.pending_missed,
       s.triggered_at, s.paused, s.resume_at, s.version
FROM {schema}.schedules s
WHERE s.slot_id = :slot_id
ORDER BY s.name;

-- name: schedule_rows_of
-- The schedules of one definition in a namespace, found by names (an operator's view).
SELECT s.id, s.name, s.slot_id, s.namespace_id, s.every_ms, s.cron, s.zone, s.misfire, s.declared,
       s.overridden, s.cursor_at, s.pending_at, s.pending_cursor AS pending_cursor_at,
       s.pending_missed, s.triggered_at, s.paused, s.resume_at, s.version,
       j.job_ref AS slot_ref, r.next_run_at AS slot_wakes_at, d.name AS job_name
FROM {schema}.schedules s
JOIN {schema}.namespaces n  ON n.id = s.namespace_id
JOIN {schema}.definitions d ON d.id = s.definition_id
JOIN {schema}.jobs j        ON j.id = s.slot_id
LEFT JOIN {schema}.runtime r ON r.job_id = s.slot_id
WHERE n.name = :namespace AND (:job_name IS NULL OR d.name = :job_name)
ORDER BY d.name, s.name;

-- name: schedule_insert
-- on duplicate key: no row
-- A schedule the code declares for the first time: armed now (it fires from its next instant).
INSERT INTO {schema}.schedules
    (namespace_id, definition_id, name, slot_id, every_ms, cron, zone, misfire, declared,
     cursor_at, created_at, updated_at)
SELECT :namespace_id, :definition_id, :name, :slot_id, :every_ms, :cron, :zone, :misfire,
       :declared, :now, :now, :now
FROM (SELECT :now AS now) t
WHERE true;

-- name: schedule_redeclare
-- The code declares a schedule differently: take the new declaration, and (unless an
-- operator's override is in force) the new expression. The cursor stays: nothing already
-- fired fires again.
UPDATE {schema}.schedules
SET declared   = :declared,
    every_ms   = CASE WHEN overridden = 1 THEN every_ms ELSE :every_ms END,
    cron       = CASE WHEN overridden = 1 THEN cron ELSE :cron END,
    zone       = CASE WHEN overridden = 1 THEN zone ELSE :zone END,
    misfire    = CASE WHEN overridden = 1 THEN misfire ELSE :misfire END,
    version    = version + 1,
    updated_at = :now
WHERE namespace_id = :namespace_id AND definition_id = :definition_id AND name = :name
  AND declared <> :declared;

-- name: schedule_undeclared
-- Schedules of a definition that the registering build no longer declares: removed.
DELETE FROM {schema}.schedules
WHERE namespace_id = :namespace_id AND definition_id = :definition_id
  AND name NOT IN (SELECT value FROM JSON_TABLE(:names, '$[*]' COLUMNS (value VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin PATH '$')) AS je);

-- name: schedule_begin
-- Record the firing a slot run is about to make, so a restarted run makes the same one.
UPDATE {schema}.schedules
SET pending_at = :pending_at, pending_cursor = :pending_cursor, pending_missed = :missed
WHERE id = :id;

-- name: schedule_end
-- A firing ended (however its handler did): the cursor moves past what it fired.
UPDATE {schema}.schedules
SET cursor_at      = pending_cursor,
    pending_at     = NULL,
    pending_cursor = NULL,
    pending_missed = 0,
    triggered_at   = CASE WHEN :triggered = 1 THEN NULL ELSE triggered_at END,
    updated_at     = :now
WHERE id = :id AND pending_at IS NOT NULL;

-- name: schedule_unpause
-- A pause with an end that has passed lifts by itself. Instants due during the pause are
-- not fired late: the cursor moves to the pause's end.
UPDATE {schema}.schedules
-- MariaDB assigns left to right: the cursor reads resume_at before it is cleared.
SET cursor_at = GREATEST(cursor_at, resume_at), paused = 0, resume_at = NULL,
    updated_at = :now_at
WHERE slot_id = :slot_id AND paused = 1 AND resume_at IS NOT NULL
  AND resume_at <= :now_at;

-- name: schedule_change
-- An operator's change, checked against the version the operator saw (NULL: any version).
UPDATE {schema}.schedules
SET every_ms     = :every_ms,
    cron         = :cron,
    zone         = :zone,
    misfire      = :misfire,
    overridden   = :overridden,
    -- A cursor never moves back: what fired never fires again.
    cursor_at    = GREATEST(cursor_at, :cursor_at),
    paused       = :paused,
    resume_at = :resume_at,
    triggered_at = :triggered_at,
    version      = version + 1,
    updated_at   = :now_at
WHERE id = :id AND version = :version;

-- name: slot_lock
-- Lock order: the slot's runtime row before its schedules, as every settle takes them (its
-- guard locks the runtime row, then it closes the firing), so a change never deadlocks one.
SELECT job_id FROM {schema}.runtime WHERE job_id = :slot_id;

-- name: slot_wake
-- Set when the slot next runs. A slot waiting for its claim (ready) is moved; one that is
-- running takes the instant from its own settle.
UPDATE {schema}.runtime
SET next_run_at = :wake_at, version = version + 1
WHERE job_id = :slot_id AND status = 10;

-- name: slot_reset
-- A firing ended: its attempts were that firing's own; the next firing starts from none.
UPDATE {schema}.runtime
SET attempts = 0, next_run_at = :wake_at, control = 0
WHERE job_id = :slot_id;

-- name: slot_of_definition
SELECT j.id AS slot_id
FROM {schema}.jobs j
WHERE j.namespace_id = :namespace_id AND j.dedup_key = :dedup_key;
