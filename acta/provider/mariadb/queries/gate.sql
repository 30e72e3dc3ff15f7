-- Gates: lane positions and promotion, concurrency slots, rate meters (acta/ledger/gate.py).
--
-- Locks follow the one order (job, lane, gate, meter) by construction: SQLite has a single
-- writer (BEGIN IMMEDIATE), so each transaction below runs alone.

-- name: lane_book
-- Take :count positions at the end of a lane, creating it on first use; locks the lane row
-- until commit, so two producers cannot interleave their members.
INSERT INTO {schema}.lanes (namespace_id, name, last_seq, created_at)
VALUES (:namespace_id, :lane, :count, :now)
ON DUPLICATE KEY UPDATE last_seq = last_seq + VALUES(last_seq)
RETURNING id AS lane_id, last_seq;

-- name: lane_lock
SELECT head_job_id FROM {schema}.lanes WHERE id = :lane_id;

-- name: lane_next
-- The blocked member with the lowest position: the next head.
SELECT r.job_id, j.job_ref, r.namespace_id, d.audit_level
FROM {schema}.runtime r
JOIN {schema}.jobs j        ON j.id = r.job_id
JOIN {schema}.definitions d ON d.id = r.definition_id
WHERE r.lane_id = :lane_id AND r.status = 11
ORDER BY r.lane_seq
LIMIT 1;

-- name: promote_member
UPDATE {schema}.runtime
SET status = 10, version = version + 1, updated_at = :now
WHERE job_id = :job_id AND status = 11;

-- name: lane_set_head
UPDATE {schema}.lanes SET head_job_id = :job_id WHERE id = :lane_id;

-- name: admit_guard
-- Admission's compare-and-set read: still dispatched to this worker at this epoch. Locks the
-- job first (the lock order), and reads the database clock the meter is judged by.
SELECT r.ticket_at, r.control, :now AS now_at
FROM {schema}.runtime r
WHERE r.job_id = :job_id AND r.lease_epoch = :epoch AND r.status = 20
  AND r.lease_owner = :worker_id;

-- name: gate_take
-- Lock a concurrency gate, creating it on first use; with the operator's override (the limit
-- in force over what each job declares, when set).
INSERT INTO {schema}.gates (namespace_id, kind, name, slot_limit, updated_at)
VALUES (:namespace_id, :kind, :name, :slot_limit, :now)
ON DUPLICATE KEY UPDATE slot_limit = VALUES(slot_limit)
RETURNING id AS gate_id, limit_override;

-- name: gate_held
SELECT count(*) AS held FROM {schema}.gate_holds WHERE gate_id = :gate_id;

-- name: gate_hold
INSERT INTO {schema}.gate_holds (job_id, gate_id, epoch, since)
VALUES (:job_id, :gate_id, :epoch, :now);

-- name: release_hold
-- Whatever ends a lease (settle, hand-back, recovery, cancel) frees the slot it held.
DELETE FROM {schema}.gate_holds WHERE job_id = :job_id;

-- name: meter_take
-- Lock a rate meter, creating it on first use with the declared rate; returns the rate in
-- force (the operator's override, else the declared one) and both horizons.
INSERT INTO {schema}.meters (namespace_id, name, rate, period_ms, updated_at)
VALUES (:namespace_id, :name, :rate, :period_ms, :now)
ON DUPLICATE KEY UPDATE
    rate = VALUES(rate), period_ms = VALUES(period_ms)
RETURNING id AS meter_id, COALESCE(rate_override, rate) AS rate,
          COALESCE(period_override_ms, period_ms) AS period_ms,
          -- Named *_at so every provider reads them back as instants.
          booked_until AS booked_at, admitted_until AS admitted_at;

-- name: meter_set
UPDATE {schema}.meters
SET booked_until = :booked_until, admitted_until = :admitted_until,
    updated_at = :now
WHERE id = :meter_id;

-- name: admit_start.update
-- Admitted: dispatched -> executing, the meter turn spent.
UPDATE {schema}.runtime
SET status     = 21,
    executions = executions + 1,
    ticket_at  = NULL,
    version    = version + 1,
    updated_at = :now
WHERE job_id = :job_id AND lease_epoch = :epoch AND status = 20;

-- name: admit_start.select
SELECT executions, control FROM {schema}.runtime
WHERE job_id = :job_id AND lease_epoch = :epoch AND status = 21;

-- name: bounce
-- Turned away by a gate: back to ready at :until, lease released, no attempt spent. A rate
-- gate's turn is kept in ticket_at so the job comes back for it instead of racing again.
UPDATE {schema}.runtime
SET status           = 10,
    next_run_at      = :until,
    ticket_at        = :ticket,
    lease_owner      = NULL,
    lease_expires_at = NULL,
    version          = version + 1,
    updated_at       = :now
WHERE job_id = :job_id AND lease_epoch = :epoch AND status = 20;

-- Operator overrides (acta/ledger/override.py): a compare-and-set on the row's version, so two
-- operators changing one limit cannot silently overwrite each other. A gate or meter nobody
-- has used yet is created by the override, at version 1, declaring what it sets.

-- name: gate_override.update
UPDATE {schema}.gates
SET limit_override = :limit, version = version + 1, updated_at = :now
WHERE namespace_id = :namespace_id AND kind = :kind AND name = :name AND version = :expected;

-- name: gate_override.select
SELECT version, slot_limit FROM {schema}.gates
WHERE namespace_id = :namespace_id AND kind = :kind AND name = :name;

-- name: gate_create
-- on duplicate key: no row
INSERT INTO {schema}.gates (namespace_id, kind, name, slot_limit, limit_override, version,
                          updated_at)
VALUES (:namespace_id, :kind, :name, COALESCE(:limit, 1), :limit, 1, :now)
RETURNING version, slot_limit;

-- name: gate_version
SELECT version, limit_override FROM {schema}.gates
WHERE namespace_id = :namespace_id AND kind = :kind AND name = :name;

-- name: meter_override.update
UPDATE {schema}.meters
SET rate_override = :rate, period_override_ms = :period_ms, version = version + 1,
    updated_at = :now
WHERE namespace_id = :namespace_id AND name = :name AND version = :expected;

-- name: meter_override.select
SELECT version, rate, period_ms FROM {schema}.meters
WHERE namespace_id = :namespace_id AND name = :name;

-- name: meter_create
-- on duplicate key: no row
INSERT INTO {schema}.meters (namespace_id, name, rate, period_ms, rate_override,
                           period_override_ms, version, updated_at)
VALUES (:namespace_id, :name, :rate, :period_ms, :rate, :period_ms, 1, :now)
RETURNING version, rate, period_ms;

-- name: meter_version
SELECT version, rate_override, period_override_ms FROM {schema}.meters WHERE namespace_id = :namespace_id AND name = :name;

-- name: gates_of_namespace
SELECT v.kind, v.name, v.limit_in_force, v.declared_limit, v.limit_override, v.held, v.holders,
       v.version, v.updated_at
FROM {schema}.gates_view v
WHERE v.namespace = :namespace
ORDER BY v.kind, v.name;

-- name: meters_of_namespace
SELECT v.name, v.rate, v.period_ms, v.declared_rate, v.declared_period_ms, v.rate_override,
       v.next_free_at, v.version, v.updated_at
FROM {schema}.meters_view v
WHERE v.namespace = :namespace
ORDER BY v.name;

-- name: lane_ids
-- The ids of existing lanes among :names (a JSON array), so that an enqueue touching several
-- lanes books them in id order, the order every other locker of lanes uses.
SELECT l.id AS lane_id, l.name
FROM {schema}.lanes l
WHERE l.namespace_id = :namespace_id
  AND l.name IN (SELECT value FROM JSON_TABLE(:names, '$[*]' COLUMNS (value VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin PATH '$')) AS je);

-- name: declared_limit
-- What the latest registration of a definition declared: an override of the definition's
-- own gate is only accepted where one exists.
SELECT d.concurrency_limit FROM {schema}.definitions d
WHERE d.namespace_id = :namespace_id AND d.name = :name;

-- name: meter_declared
SELECT count(*) AS definitions FROM {schema}.definitions d
WHERE d.namespace_id = :namespace_id AND d.meter = :name;
