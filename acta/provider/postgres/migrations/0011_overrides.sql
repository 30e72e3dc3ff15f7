-- acta ledger, PostgreSQL, migration 11: live policy overrides.
--
-- An operator's override of a definition's declared policy, on a running system: a JSON object
-- holding only the fields it changes (max_attempts, backoff, timeout_ms, audit, retention_ms,
-- alerts; a JSON null timeout or retention means none/forever). Workers read it every
-- heartbeat; recovery and retention read it in SQL. Every change is a compare-and-set on the
-- version and writes a policy-overridden event.

CREATE TABLE {schema}.policy_overrides (
    definition_id bigint      PRIMARY KEY REFERENCES {schema}.definitions (id),
    policy        jsonb       NOT NULL,
    version       integer     NOT NULL DEFAULT 1 CHECK (version >= 1),
    updated_at    timestamptz NOT NULL,
    updated_by    text        NOT NULL,
    reason        text        NOT NULL
);

-- The policy in force per definition: its declaration, with an operator's override on top.
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
    d.priority,
    o.policy::text AS overrides,
    COALESCE(o.version, 0) AS version,
    o.updated_at,
    o.updated_by,
    o.reason
FROM {schema}.definitions d
JOIN {schema}.namespaces n ON n.id = d.namespace_id
LEFT JOIN {schema}.policy_overrides o ON o.definition_id = d.id
JOIN {schema}.codes a ON a.family = 'audit_level'
    AND a.code = CASE WHEN o.policy ? 'audit' THEN (o.policy ->> 'audit')::smallint
                      ELSE d.audit_level END;

INSERT INTO {schema}.codes (family, code, name, description) VALUES
    ('event', 63, 'policy-overridden', 'An operator overrode (or cleared) a definition''s policy; detail: the override.');
