-- acta ledger, MariaDB, migration 17: deduplication modes (as SQLite's 0017 and PostgreSQL's
-- 0020 say: a key may count only while its holder is unfinished, or within a window). Each row
-- records its mode and window; a holder that no longer counts moves its key to dedup_released
-- (release_dedup_key), so the unique key (namespace_id, dedup_key) still decides every race.

ALTER TABLE {schema}.jobs
    ADD COLUMN IF NOT EXISTS dedup_mode INT NOT NULL DEFAULT 1,
    ADD COLUMN IF NOT EXISTS dedup_window_ms BIGINT,
    ADD COLUMN IF NOT EXISTS dedup_released VARCHAR(255);

-- jobs_view again, with three columns at the end (the others keep their meaning and order).
CREATE OR REPLACE VIEW {schema}.jobs_view AS
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
    (SELECT JSON_ARRAYAGG(t.tag ORDER BY t.tag)
       FROM {schema}.job_tags t WHERE t.job_id = j.id) AS tags,
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
    j.id                  AS job_id,
    -- The mode this job was enqueued with (NULL for a job enqueued without a key), its window,
    -- and the key it held until a later enqueue took the key over.
    CASE WHEN j.dedup_key IS NULL AND j.dedup_released IS NULL THEN NULL
         WHEN j.dedup_mode = 2 THEN 'unfinished'
         WHEN j.dedup_mode = 3 THEN 'window'
         ELSE 'forever' END AS dedup_mode,
    j.dedup_window_ms,
    j.dedup_released      AS dedup_released_key
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
