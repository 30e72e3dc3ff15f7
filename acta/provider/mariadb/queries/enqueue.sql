-- Enqueue: namespace and definition rows on first use, then the job, its runtime row, its
-- tags and its enqueued event. All run in one transaction (the caller's, when given).

-- name: ensure_namespace
-- on duplicate key: no row
INSERT INTO {schema}.namespaces (name, created_at)
SELECT :namespace, :now FROM DUAL;

-- name: ensure_definition
-- on duplicate key: no row
-- A producer never overwrites policy; only a worker registration does (register_definition).
INSERT INTO {schema}.definitions
    (namespace_id, name, max_attempts, backoff, timeout_ms, priority, audit_level, registered_at,
     concurrency_limit, meter, retention_ms, tenant_scope, tags)
SELECT n.id, :name, :max_attempts, :backoff, :timeout_ms, :priority, :audit_level, :now,
       :concurrency_limit, :meter, :retention_ms, :tenant_scope, :tags
FROM {schema}.namespaces n
WHERE n.name = :namespace;

-- name: definition_ids
SELECT d.id AS definition_id, d.name, d.namespace_id
FROM {schema}.definitions d
JOIN {schema}.namespaces n ON n.id = d.namespace_id
WHERE n.name = :namespace;

-- name: insert_job
-- on duplicate key: no row
-- A row that hits a unique key (a duplicate deduplication key, or this job already written by
-- an earlier try whose commit outcome was unknown, or a child name its parent already used)
-- inserts nothing and returns no row; so does a job of a retired definition (the verb then
-- asks retired_definitions why). trace_context is NULL unless the enqueue was traced. The tenant
-- is the one resolved by tenants_for_enqueue, or else the parent's (a child inherits it).
INSERT INTO {schema}.jobs
    (job_ref, namespace_id, definition_id, dedup_key, correlation_key, concurrency_key,
     input_codec, input, created_at, deadline_at, deadline_strict, parent_id, root_id,
     child_name, trace_context, tenant_id, dedup_mode, dedup_window_ms)
SELECT :job_ref, :namespace_id, :definition_id, :dedup_key, :correlation_key,
       :concurrency_key, :input_codec, :input, :now, :deadline_at, :deadline_strict,
       :parent_id, :root_id, :child_name, :trace_context,
       COALESCE(:tenant_id, (SELECT pj.tenant_id FROM {schema}.jobs pj WHERE pj.id = :parent_id)),
       :dedup_mode, :dedup_window_ms
FROM {schema}.definitions d
WHERE d.id = :definition_id AND NOT d.retired
RETURNING id AS job_id;

-- name: release_dedup_key
-- Before insert_job, for a key asked while unfinished (mode 2) or within a window (mode 3):
-- the job holding the key gives it up when it no longer counts in that mode (it finished; it
-- was created at or before now minus the window). Its key moves to dedup_released, so the
-- unique key lets the insert through; a race between producers is still decided there.
-- MariaDB assigns left to right: dedup_released takes the key before it is cleared.
UPDATE {schema}.jobs j
SET j.dedup_released = j.dedup_key, j.dedup_key = NULL
WHERE j.namespace_id = :namespace_id AND j.dedup_key = :dedup_key
  AND CASE :dedup_mode
        WHEN 2 THEN EXISTS (SELECT 1 FROM {schema}.runtime r
                            WHERE r.job_id = j.id AND r.status >= 100)
        WHEN 3 THEN j.created_at <= TIMESTAMPADD(MICROSECOND, -:dedup_window_ms * 1000, :now)
        ELSE 0 END;

-- name: job_by_ref_or_dedup_key
-- After insert_job refused a row: the job holding its ref (this very job, written by an earlier
-- try whose commit outcome was unknown), its deduplication key, or its name under its parent
-- (a parent re-entered after a crash spawning the same child again).
SELECT id AS job_id, job_ref
FROM {schema}.jobs
WHERE job_ref = :job_ref
   OR (namespace_id = :namespace_id AND dedup_key = :dedup_key)
   OR (parent_id = :parent_id AND child_name = :child_name)
ORDER BY job_ref = :job_ref DESC
LIMIT 1;

-- name: insert_runtime
-- next_run_at is the given instant, or now plus the delay. A lane member is written blocked
-- (status 11) at its place in the lane; promotion makes the head ready. An operator's
-- priority override of the definition beats the priority the enqueue asked for.
INSERT INTO {schema}.runtime
    (job_id, namespace_id, definition_id, status, priority, next_run_at, updated_at, lane_id,
     lane_seq, gated)
SELECT :job_id, :namespace_id, :definition_id, :status,
       COALESCE((SELECT CAST(JSON_VALUE(o.policy, '$.priority') AS SIGNED) FROM {schema}.policy_overrides o
                 WHERE o.definition_id = :definition_id), :priority),
       COALESCE(:run_at, TIMESTAMPADD(MICROSECOND, (:delay_ms) * 1000, :now)),
       :now, :lane_id, :lane_seq, :gated
FROM DUAL;

-- name: insert_tag
INSERT INTO {schema}.job_tags (job_id, tag) VALUES (:job_id, :tag);

-- name: namespace_id
SELECT id AS namespace_id FROM {schema}.namespaces WHERE name = :namespace;

-- name: tenants_for_enqueue
-- The tenants an enqueue names (:keys, a JSON array), with whether each is suspended. Under
-- BEGIN IMMEDIATE no suspend can commit between this read and the enqueue's commit.
SELECT t.id AS tenant_id, t.tenant_key, t.suspended
FROM {schema}.tenants t
WHERE t.tenant_key IN (SELECT value FROM JSON_TABLE(:keys, '$[*]' COLUMNS (value VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin PATH '$')) AS je);

-- name: retired_definitions
-- Which of :definition_ids (a JSON array) are retired: checked before a batch writes anything.
SELECT d.name FROM {schema}.definitions d
WHERE d.id IN (SELECT value FROM JSON_TABLE(:definition_ids, '$[*]' COLUMNS (value BIGINT PATH '$')) AS je) AND d.retired
ORDER BY d.name;

-- name: retired_named
-- Which of the job names :names (a JSON array) of :namespace are retired (the outbox relay
-- quarantines their rows rather than have the whole batch refused).
SELECT d.name FROM {schema}.definitions d
JOIN {schema}.namespaces n ON n.id = d.namespace_id
WHERE n.name = :namespace AND d.retired AND d.name IN (SELECT value FROM JSON_TABLE(:names, '$[*]' COLUMNS (value VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin PATH '$')) AS je)
ORDER BY d.name;
