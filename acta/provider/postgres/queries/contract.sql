-- Job contracts: the recorded shape of a definition's input and result (the drift guard).

-- name: contract_of
SELECT c.fingerprint, c.shape, c.recorded_by
FROM {schema}.contracts c
WHERE c.definition_id = :definition_id;

-- name: contract_record
-- The registering worker's shape becomes the recorded one (a first record, or a drift let
-- through by the warn policy).
INSERT INTO {schema}.contracts (definition_id, fingerprint, shape, recorded_at, recorded_by)
VALUES (:definition_id, :fingerprint, :shape, COALESCE(:now::timestamptz, now()), :incarnation)
ON CONFLICT (definition_id) DO UPDATE SET
    fingerprint = excluded.fingerprint,
    shape       = excluded.shape,
    recorded_at = excluded.recorded_at,
    recorded_by = excluded.recorded_by;
