-- acta ledger, SQLite, migration 8: durable named settings.
--
-- A setting is a name and a JSON value at one scope: global, one namespace, or one job name in
-- a namespace; the narrowest scope that has the name wins. A new name needs no migration.
-- Every write is a compare-and-set on the version and writes a setting-changed event.

CREATE TABLE {schema}.settings (
    id            INTEGER PRIMARY KEY,
    -- 1 global, 2 namespace, 3 definition (the setting_scope codes).
    scope         INTEGER NOT NULL CHECK (scope IN (1, 2, 3)),
    namespace_id  INTEGER REFERENCES {schema}.namespaces (id),
    definition_id INTEGER REFERENCES {schema}.definitions (id),
    name          TEXT    NOT NULL,
    -- The value as JSON text.
    value         TEXT    NOT NULL,
    version       INTEGER NOT NULL DEFAULT 1 CHECK (version >= 1),
    updated_at    TEXT    NOT NULL,
    -- Who wrote it last (the actor an operator surface passes), and why.
    updated_by    TEXT    NOT NULL,
    reason        TEXT    NOT NULL,
    CHECK ((scope = 1) = (namespace_id IS NULL)),
    CHECK ((scope = 3) = (definition_id IS NOT NULL))
);
-- One value per name and place.
CREATE UNIQUE INDEX {schema}.settings_global
    ON {schema}.settings (name) WHERE scope = 1;
CREATE UNIQUE INDEX {schema}.settings_namespace
    ON {schema}.settings (name, namespace_id) WHERE scope = 2;
CREATE UNIQUE INDEX {schema}.settings_definition
    ON {schema}.settings (name, definition_id) WHERE scope = 3;

-- Every setting with its scope, namespace and job name spelled out.
CREATE VIEW {schema}.settings_view AS
SELECT
    st.name,
    c.name        AS scope,
    n.name        AS namespace,
    d.name        AS job_name,
    st.value,
    st.version,
    st.updated_at,
    st.updated_by,
    st.reason
FROM {schema}.settings st
JOIN {schema}.codes c            ON c.family = 'setting_scope' AND c.code = st.scope
LEFT JOIN {schema}.namespaces n  ON n.id = st.namespace_id
LEFT JOIN {schema}.definitions d ON d.id = st.definition_id;

INSERT INTO {schema}.codes (family, code, name, description) VALUES
    ('event', 61, 'setting-changed', 'A durable setting was set or deleted; message names it and says why.'),
    ('setting_scope', 1, 'global', 'Applies to every namespace of the ledger.'),
    ('setting_scope', 2, 'namespace', 'Applies to one namespace; wins over a global value.'),
    ('setting_scope', 3, 'definition', 'Applies to one job name in one namespace; wins over the other two.');
