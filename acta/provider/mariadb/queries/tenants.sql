-- Tenants and namespaces as operators manage them: register, list, suspend, resume, and
-- compare-and-set changes of tags and metadata (each bumps the row's version).

-- name: tenant_insert
-- on duplicate key: no row
-- No row back: the key is registered already.
INSERT INTO {schema}.tenants (tenant_key, tags, metadata, created_at, updated_at)
SELECT :tenant_key, :tags, :metadata,
       :now,
       :now
WHERE true
RETURNING id AS tenant_id;

-- name: tenant_list
-- One tenant (:tenant_key) or all of them, suspended only when :suspended is true.
SELECT tenant_id, tenant, suspended, suspended_at, suspended_by, suspend_reason, tags, metadata,
       version, created_at, updated_at, open_jobs
FROM {schema}.tenants_view
WHERE (:tenant_key IS NULL OR tenant = :tenant_key)
  AND (:suspended IS NULL OR suspended = :suspended)
ORDER BY tenant;

-- name: tenant_row
SELECT id AS tenant_id, tenant_key, tags, metadata, suspended, version
FROM {schema}.tenants
WHERE tenant_key = :tenant_key;

-- name: tenant_set_suspended
-- The compare-and-set of suspend and resume: nothing changes unless the row is still at
-- :version. A resume clears who suspended it and why (the events keep both).
UPDATE {schema}.tenants
SET suspended      = :suspended,
    suspended_at   = CASE WHEN :suspended THEN :now END,
    suspended_by   = CASE WHEN :suspended THEN :actor END,
    suspend_reason = CASE WHEN :suspended THEN :reason END,
    version        = version + 1,
    updated_at     = :now
WHERE id = :tenant_id AND version = :version;

-- name: tenant_set_labels
UPDATE {schema}.tenants
SET tags       = :tags,
    metadata   = :metadata,
    version    = version + 1,
    updated_at = :now
WHERE id = :tenant_id AND version = :version;

-- name: namespace_list
SELECT namespace_id, namespace, suspended, tags, metadata, version, created_at, definitions,
       workers_running, open_jobs
FROM {schema}.namespaces_view
WHERE (:namespace IS NULL OR namespace = :namespace)
ORDER BY namespace;

-- name: namespace_row
SELECT id AS namespace_id, name, tags, metadata, paused, version
FROM {schema}.namespaces
WHERE name = :namespace;

-- name: namespace_set_labels
UPDATE {schema}.namespaces
SET tags = :tags, metadata = :metadata, version = version + 1
WHERE id = :namespace_id AND version = :version;
