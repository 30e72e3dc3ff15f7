-- acta ledger, SQLite, migration 9: job contracts (the drift guard).
--
-- The shape of each definition's input and result as the last registering worker declared
-- it, with a fingerprint. A worker whose build declares another shape is warned, or refused,
-- when it registers: jobs already in the ledger were encoded with the recorded shape.

CREATE TABLE {schema}.contracts (
    definition_id INTEGER PRIMARY KEY REFERENCES {schema}.definitions (id),
    -- A digest of shape: equal shapes, equal fingerprints.
    fingerprint   TEXT    NOT NULL,
    -- The shape as JSON: {"input": ..., "result": ...}.
    shape         TEXT    NOT NULL,
    recorded_at   TEXT    NOT NULL,
    -- The worker incarnation that recorded it.
    recorded_by   TEXT    NOT NULL
);

INSERT INTO {schema}.codes (family, code, name, description) VALUES
    ('event', 62, 'contract-changed', 'A worker registered a job whose input or result shape differs from the recorded one.');
