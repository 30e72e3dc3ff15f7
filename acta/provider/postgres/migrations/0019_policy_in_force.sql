-- acta ledger, PostgreSQL, migration 19: the policy in force, written in one place.
--
-- The policy in force is the job's own value (an operator's amend; only max_attempts has
-- one), else the definition's live override, else its declaration. effective_policy_view
-- already held the definition's part; the reads (get, list, explain, the dashboard, jobs_view)
-- and recovery and retention each wrote it again, and jobs_view and the reads dropped the
-- override: under a live max_attempts override they showed the declared limit while workers
-- applied the override. Now effective_policy_view also carries the definition's id and the
-- audit level's code, and every statement that needs a policy joins it; jobs_view does too.

-- Two columns at the end (the view's other columns keep their meaning and order).
CREATE OR REPLACE VIEW {schema}.effective_policy_view AS
SELECT
    n.name  AS namespace,
    d.name  AS job_name,
    CASE WHEN o.policy ? 'max_attempts' THEN (o.policy ->> 'max_attempts')::integer
         ELSE d.max_attempts END AS max_attempts,
    CASE WHEN o.policy ? 'backoff' THEN o.policy ->> 'backoff' ELSE d.backoff END AS backoff,
    CASE WHEN o.policy ? 'timeout_ms' THEN (o.policy ->> 'timeout_ms')::bigint
         ELSE d.timeout_ms END AS timeout_ms,
    a.name  AS audit,
    CASE WHEN o.policy ? 'retention_ms' THEN (o.policy ->> 'retention_ms')::bigint
         ELSE d.retention_ms END AS retention_ms,
    o.policy ->> 'alerts' AS alerts,
    CASE WHEN o.policy ? 'priority' THEN (o.policy ->> 'priority')::smallint
         ELSE d.priority END AS priority,
    o.policy::text AS overrides,
    COALESCE(o.version, 0) AS version,
    o.updated_at,
    o.updated_by,
    o.reason,
    d.tags::text AS tags,
    d.tenant_scope,
    d.id    AS definition_id,
    a.code  AS audit_code
FROM {schema}.definitions d
JOIN {schema}.namespaces n ON n.id = d.namespace_id
LEFT JOIN {schema}.policy_overrides o ON o.definition_id = d.id
JOIN {schema}.codes a ON a.family = 'audit_level'
    AND a.code = CASE WHEN o.policy ? 'audit' THEN (o.policy ->> 'audit')::smallint
                      ELSE d.audit_level END;

-- jobs_view again, with the attempt limit in force (its type widens to integer).
DROP VIEW {schema}.jobs_view;
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
    (SELECT json_agg(t.tag ORDER BY t.tag)::text FROM {schema}.job_tags t WHERE t.job_id = j.id)
                          AS tags,
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
