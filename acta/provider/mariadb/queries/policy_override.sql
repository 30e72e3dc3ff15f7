-- Live policy overrides: read by workers every heartbeat, written by operators by
-- compare-and-set on the version.

-- name: policy_overrides_of
-- Every override of a namespace, by job name (what a worker applies to its definitions).
SELECT d.name, o.policy, o.version
FROM {schema}.policy_overrides o
JOIN {schema}.definitions d ON d.id = o.definition_id
WHERE d.namespace_id = :namespace_id;

-- name: policy_override_of
-- One definition and its override, if any (an operator's read before a change).
SELECT d.id AS definition_id, d.namespace_id, o.policy, COALESCE(o.version, 0) AS version
FROM {schema}.definitions d
JOIN {schema}.namespaces n ON n.id = d.namespace_id
LEFT JOIN {schema}.policy_overrides o ON o.definition_id = d.id
WHERE n.name = :namespace AND d.name = :job_name;

-- name: policy_override_insert
-- on duplicate key: no row
INSERT INTO {schema}.policy_overrides (definition_id, policy, version, updated_at, updated_by, reason)
VALUES (:definition_id, :policy, 1, :now, :actor, :reason);

-- name: policy_override_update
-- The compare-and-set: nothing changes unless the override is at the version the caller read.
UPDATE {schema}.policy_overrides
SET policy = :policy, version = version + 1, updated_at = :now, updated_by = :actor,
    reason = :reason
WHERE definition_id = :definition_id AND version = :version;

-- name: policy_override_reprioritise
-- A priority override also moves the definition's jobs that wait to run (ready, blocked in
-- a lane, suspended on a durable wait, paused); a running job's priority matters no more.
UPDATE {schema}.runtime
SET priority = :priority
WHERE definition_id = :definition_id AND status IN (10, 11, 30, 31) AND priority <> :priority;
