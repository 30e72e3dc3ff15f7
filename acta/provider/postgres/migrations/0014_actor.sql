-- acta ledger, PostgreSQL, migration 14: who did it, and a live priority.
--
-- Operator verbs (repairs, pauses, overrides, settings, schedule and alert decisions) name
-- their actor; until now it sat inside some events' JSON detail. It becomes a column of its
-- own so "what did this person change" is a plain WHERE. NULL for what the runtime did on its
-- own (claims, settles, recovery). events_view shows it.
--
-- A policy override may now also set priority: effective_policy_view shows the priority in
-- force (the override's, else the declared one).

ALTER TABLE {schema}.events ADD COLUMN actor text;

DROP VIEW {schema}.events_view;
CREATE VIEW {schema}.events_view AS
SELECT
    e.id          AS event_id,
    e.at,
    e.job_ref,
    d.name        AS job_name,
    n.name        AS namespace,
    c.name        AS event,
    e.execution,
    e.epoch,
    o.name        AS outcome,
    r.name        AS reason,
    e.duration_ms,
    e.message,
    e.detail,
    e.actor,
    w.incarnation AS worker,
    tn.tenant_key AS tenant,
    e.job_id
FROM {schema}.events e
LEFT JOIN {schema}.jobs j        ON j.id = e.job_id
LEFT JOIN {schema}.definitions d ON d.id = j.definition_id
LEFT JOIN {schema}.namespaces n  ON n.id = e.namespace_id
LEFT JOIN {schema}.workers w     ON w.id = e.worker_id
LEFT JOIN {schema}.tenants tn    ON tn.id = j.tenant_id
JOIN {schema}.codes c            ON c.family = 'event' AND c.code = e.code
LEFT JOIN {schema}.codes o       ON o.family = 'outcome' AND o.code = e.outcome
LEFT JOIN {schema}.codes r       ON r.family = 'reason' AND r.code = e.reason;

DROP VIEW {schema}.effective_policy_view;
CREATE VIEW {schema}.effective_policy_view AS
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
    d.tenant_scope
FROM {schema}.definitions d
JOIN {schema}.namespaces n ON n.id = d.namespace_id
LEFT JOIN {schema}.policy_overrides o ON o.definition_id = d.id
JOIN {schema}.codes a ON a.family = 'audit_level'
    AND a.code = CASE WHEN o.policy ? 'audit' THEN (o.policy ->> 'audit')::smallint
                      ELSE d.audit_level END;
