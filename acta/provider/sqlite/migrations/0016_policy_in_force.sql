-- acta ledger, SQLite, migration 16: the policy in force, written in one place.
--
-- The policy in force is the job's own value (an operator's amend; only max_attempts has
-- one), else the definition's live override, else its declaration. effective_policy_view
-- already held the definition's part; the reads (get, list, explain, the dashboard, jobs_view)
-- and recovery and retention each wrote it again, and jobs_view and the reads dropped the
-- override: under a live max_attempts override they showed the declared limit while workers
-- applied the override. Now effective_policy_view also carries the definition's id and the
-- audit level's code, and every statement that needs a policy joins it; jobs_view does too.

DROP VIEW {schema}.jobs_view;
DROP VIEW {schema}.effective_policy_view;

-- Two columns at the end (the view's other columns keep their meaning and order).
CREATE VIEW {schema}.effective_policy_view AS
SELECT
    n.name  AS namespace,
    d.name  AS job_name,
    CASE WHEN json_type(o.policy, '$.max_attempts') IS NULL THEN d.max_attempts
         ELSE json_extract(o.policy, '$.max_attempts') END AS max_attempts,
    CASE WHEN json_type(o.policy, '$.backoff') IS NULL THEN d.backoff
         ELSE json_extract(o.policy, '$.backoff') END AS backoff,
    CASE WHEN json_type(o.policy, '$.timeout_ms') IS NULL THEN d.timeout_ms
         ELSE json_extract(o.policy, '$.timeout_ms') END AS timeout_ms,
    a.name  AS audit,
    CASE WHEN json_type(o.policy, '$.retention_ms') IS NULL THEN d.retention_ms
         ELSE json_extract(o.policy, '$.retention_ms') END AS retention_ms,
    json_extract(o.policy, '$.alerts') AS alerts,
    CASE WHEN json_type(o.policy, '$.priority') IS NULL THEN d.priority
         ELSE json_extract(o.policy, '$.priority') END AS priority,
    o.policy AS overrides,
    COALESCE(o.version, 0) AS version,
    o.updated_at,
    o.updated_by,
    o.reason,
    d.tags,
    d.tenant_scope,
    d.id    AS definition_id,
    a.code  AS audit_code
FROM {schema}.definitions d
JOIN {schema}.namespaces n ON n.id = d.namespace_id
LEFT JOIN {schema}.policy_overrides o ON o.definition_id = d.id
JOIN {schema}.codes a ON a.family = 'audit_level'
    AND a.code = CASE WHEN json_type(o.policy, '$.audit') IS NULL THEN d.audit_level
                      ELSE json_extract(o.policy, '$.audit') END;

-- jobs_view again, with the attempt limit in force.
CREATE VIEW {schema}.jobs_view AS
SELECT
    j.job_ref,
    n.name                AS namespace,
    d.name                AS job_name,
    s.name                AS status,
    r.status              AS status_code,
    r.priority,
    r.attempts,
    -- The job's own limit (an operator's amend), else the definition's limit in force.
    COALESCE(r.max_attempts, ep.max_attempts) AS max_attempts,
    r.executions,
    j.created_at,
    r.next_run_at,
    r.updated_at,
    CASE WHEN r.status >= 100 THEN r.updated_at END AS finished_at,
    w.incarnation         AS lease_worker,
    w.host                AS lease_host,
    r.lease_expires_at,
    r.lease_epoch,
    j.dedup_key,
    j.correlation_key,
    l.name                AS lane,
    r.lane_seq,
    j.concurrency_key,
    -- A sorted JSON array (NULL without tags), so a tag containing a comma stays unambiguous.
    (SELECT NULLIF(json_group_array(t.tag), '[]')
       FROM (SELECT tag FROM {schema}.job_tags WHERE job_id = j.id ORDER BY tag) t) AS tags,
    le.message            AS last_error,
    lr.name               AS last_error_reason,
    le.at                 AS last_error_at,
    pj.job_ref            AS parent_ref,
    rj.job_ref            AS root_ref,
    j.child_name,
    r.open_children,
    j.deadline_at,
    CASE WHEN j.deadline_at IS NULL THEN NULL
         WHEN j.deadline_strict THEN 'strict' ELSE 'advisory' END AS deadline_policy,
    p.done                AS progress_done,
    p.total               AS progress_total,
    p.message             AS progress_message,
    p.updated_at          AS progress_at,
    -- What a suspended job waits for, as kind:name (sleep:nap, signal:approved, children:all).
    (SELECT wk.name || ':' || wt.name
       FROM {schema}.waits wt
       JOIN {schema}.codes wk ON wk.family = 'wait_kind' AND wk.code = wt.kind
      WHERE wt.job_id = j.id AND wt.parked_in IS NOT NULL AND r.status = 30
      ORDER BY wt.parked_in DESC LIMIT 1) AS waiting_for,
    tn.tenant_key         AS tenant,
    j.id                  AS job_id
FROM {schema}.jobs j
JOIN {schema}.runtime r      ON r.job_id = j.id
JOIN {schema}.namespaces n   ON n.id = j.namespace_id
JOIN {schema}.definitions d  ON d.id = j.definition_id
JOIN {schema}.effective_policy_view ep ON ep.definition_id = d.id
JOIN {schema}.codes s        ON s.family = 'job_status' AND s.code = r.status
LEFT JOIN {schema}.workers w ON w.id = r.lease_owner
LEFT JOIN {schema}.lanes l   ON l.id = r.lane_id
LEFT JOIN {schema}.jobs pj   ON pj.id = j.parent_id
LEFT JOIN {schema}.jobs rj   ON rj.id = j.root_id
LEFT JOIN {schema}.progress p ON p.job_id = j.id
LEFT JOIN {schema}.tenants tn ON tn.id = j.tenant_id
LEFT JOIN {schema}.events le ON le.id = (
    SELECT max(e.id) FROM {schema}.events e
    WHERE e.job_id = j.id
      AND (e.code IN (21, 30) OR (e.code = 11 AND e.outcome IN (2, 3))))
LEFT JOIN {schema}.codes lr  ON lr.family = 'reason' AND lr.code = le.reason;
