-- Durable named settings: read by name and place, written by compare-and-set on the version.

-- name: setting_place
-- The ids a scope names: the namespace (NULL for global) and the definition (definition scope).
SELECT n.id AS namespace_id, d.id AS definition_id
FROM (SELECT 1) one
LEFT JOIN {schema}.namespaces n  ON n.name = :namespace
LEFT JOIN {schema}.definitions d ON d.namespace_id = n.id AND d.name = :job_name;

-- name: settings_list
-- Settings visible from a namespace (its own, its definitions', and the global ones), or all.
SELECT st.id, st.scope, st.name, st.value, st.version, st.updated_at, st.updated_by,
       st.reason, n.name AS namespace, d.name AS job_name
FROM {schema}.settings st
LEFT JOIN {schema}.namespaces n  ON n.id = st.namespace_id
LEFT JOIN {schema}.definitions d ON d.id = st.definition_id
WHERE (:name IS NULL OR st.name = :name)
  AND (:namespace IS NULL OR st.namespace_id IS NULL OR n.name = :namespace)
ORDER BY st.name, st.scope, n.name, d.name;

-- name: setting_at
SELECT st.id, st.version, st.value
FROM {schema}.settings st
WHERE st.name = :name AND st.scope = :scope
  AND COALESCE(st.namespace_id, 0) = COALESCE(:namespace_id, 0)
  AND COALESCE(st.definition_id, 0) = COALESCE(:definition_id, 0);

-- name: setting_insert
-- on duplicate key: no row
INSERT INTO {schema}.settings
    (scope, namespace_id, definition_id, name, value, version, updated_at, updated_by, reason)
SELECT :scope, :namespace_id, :definition_id, :name, :value, 1,
       :now, :actor, :reason
WHERE true;

-- name: setting_update
-- The compare-and-set: nothing changes unless the row is still at the version the caller read.
UPDATE {schema}.settings
SET value      = :value,
    version    = version + 1,
    updated_at = :now,
    updated_by = :actor,
    reason     = :reason
WHERE id = :id AND version = :version;

-- name: setting_delete
DELETE FROM {schema}.settings WHERE id = :id AND version = :version;
