-- acta ledger, PostgreSQL, migration 9: job contracts (the drift guard).
--
-- The shape of each definition's input and result as the last registering worker declared
-- it, with a fingerprint. A worker whose build declares another shape is warned, or refused,
-- when it registers: jobs already in the ledger were encoded with the recorded shape.

CREATE TABLE {schema}.contracts (
    definition_id bigint      PRIMARY KEY REFERENCES {schema}.definitions (id),
    -- A digest of shape: equal shapes, equal fingerprints.
    fingerprint   text        NOT NULL,
    -- The shape as JSON: {"input": ..., "result": ...}.
    shape         text        NOT NULL,
    recorded_at   timestamptz NOT NULL,
    -- The worker incarnation that recorded it.
    recorded_by   text        NOT NULL
);

INSERT INTO {schema}.codes (family, code, name, description) VALUES
    ('event', 62, 'contract-changed', 'A worker registered a job whose input or result shape differs from the recorded one.');
