-- acta ledger, PostgreSQL, migration 10: operations (repair verbs).
--
-- Operators stop claims of a definition or of a whole namespace (paused), retire a definition
-- for good, and give one job its own attempt limit. The claim statements skip paused
-- definitions and namespaces, so a pause takes effect at the commit of the claim that follows
-- it; runs already claimed finish.

-- Paused: no worker claims the namespace's jobs (or the definition's) until resumed.
ALTER TABLE {schema}.namespaces ADD COLUMN paused boolean NOT NULL DEFAULT false;
ALTER TABLE {schema}.definitions ADD COLUMN paused boolean NOT NULL DEFAULT false;
-- Retired: paused for good (resume refuses it); its queue was cancelled when it was retired.
ALTER TABLE {schema}.definitions ADD COLUMN retired boolean NOT NULL DEFAULT false;
-- The job's own attempt limit, set by an operator's amend; NULL: the definition's.
ALTER TABLE {schema}.runtime ADD COLUMN max_attempts smallint
    CHECK (max_attempts IS NULL OR max_attempts BETWEEN 1 AND 1000);

DROP VIEW {schema}.jobs_view;

-- jobs_view again: max_attempts is the job's own limit when an operator amended it.
CREATE VIEW {schema}.jobs_view AS
SELECT
    j.job_ref,
    n.name                AS namespace,
    d.name                AS job_name,
    s.name                AS status,
    r.status              AS status_code,
    r.priority,
    r.attempts,
    COALESCE(r.max_attempts, d.max_attempts) AS max_attempts,
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
    j.id                  AS job_id
FROM {schema}.jobs j
JOIN {schema}.runtime r      ON r.job_id = j.id
JOIN {schema}.namespaces n   ON n.id = j.namespace_id
JOIN {schema}.definitions d  ON d.id = j.definition_id
JOIN {schema}.codes s        ON s.family = 'job_status' AND s.code = r.status
LEFT JOIN {schema}.workers w ON w.id = r.lease_owner
LEFT JOIN {schema}.lanes l   ON l.id = r.lane_id
LEFT JOIN {schema}.jobs pj   ON pj.id = j.parent_id
LEFT JOIN {schema}.jobs rj   ON rj.id = j.root_id
LEFT JOIN {schema}.progress p ON p.job_id = j.id
LEFT JOIN {schema}.events le ON le.id = (
    SELECT max(e.id) FROM {schema}.events e
    WHERE e.job_id = j.id
      AND (e.code IN (21, 30) OR (e.code = 11 AND e.outcome IN (2, 3))))
LEFT JOIN {schema}.codes lr  ON lr.family = 'reason' AND lr.code = le.reason;

-- The new codes: the repair verbs.
INSERT INTO {schema}.codes (family, code, name, description) VALUES
    ('event', 70, 'restarted', 'An operator restarted a finished job with its stored input; message names the previous outcome.'),
    ('event', 71, 'amended', 'An operator changed the priority, attempt limit or tags of a waiting job; detail has old and new values.'),
    ('event', 72, 'run-at-changed', 'An operator moved a waiting job''s next run to next_run_at.'),
    ('event', 73, 'claims-paused', 'An operator paused claims of a definition or a namespace; message names which.'),
    ('event', 74, 'claims-resumed', 'An operator resumed claims of a definition or a namespace; message names which.'),
    ('event', 75, 'retired', 'An operator retired a definition: paused for good, its queue cancelled.');
