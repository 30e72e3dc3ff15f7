-- acta ledger, SQLite, migration 11: live policy overrides.
--
-- An operator's override of a definition's declared policy, on a running system: a JSON object
-- holding only the fields it changes (max_attempts, backoff, timeout_ms, audit, retention_ms,
-- alerts; a JSON null timeout or retention means none/forever). Workers read it every
-- heartbeat; recovery and retention read it in SQL. Every change is a compare-and-set on the
-- version and writes a policy-overridden event.

CREATE TABLE {schema}.policy_overrides (
    definition_id INTEGER PRIMARY KEY REFERENCES {schema}.definitions (id),
    policy        TEXT    NOT NULL CHECK (json_valid(policy)),
    version       INTEGER NOT NULL DEFAULT 1 CHECK (version >= 1),
    updated_at    TEXT    NOT NULL,
    updated_by    TEXT    NOT NULL,
    reason        TEXT    NOT NULL
);

-- The policy in force per definition: its declaration, with an operator's override on top.
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
    d.priority,
    o.policy AS overrides,
    COALESCE(o.version, 0) AS version,
    o.updated_at,
    o.updated_by,
    o.reason
FROM {schema}.definitions d
JOIN {schema}.namespaces n ON n.id = d.namespace_id
LEFT JOIN {schema}.policy_overrides o ON o.definition_id = d.id
JOIN {schema}.codes a ON a.family = 'audit_level'
    AND a.code = CASE WHEN json_type(o.policy, '$.audit') IS NULL THEN d.audit_level
                      ELSE json_extract(o.policy, '$.audit') END;

INSERT INTO {schema}.codes (family, code, name, description) VALUES
    ('event', 63, 'policy-overridden', 'An operator overrode (or cleared) a definition''s policy; detail: the override.');
