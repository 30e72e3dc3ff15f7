-- Job contracts: the recorded shape of a definition's input and result (the drift guard).

-- name: contract_of
SELECT c.fingerprint, c.shape, c.recorded_by
FROM {schema}.contracts c
WHERE c.definition_id = :definition_id;

-- name: contract_record
-- The registering worker's shape becomes the recorded one (a first record, or a drift let
-- through by the warn policy).
INSERT INTO {schema}.contracts (definition_id, fingerprint, shape, recorded_at, recorded_by)
VALUES (:definition_id, :fingerprint, :shape, :now, :incarnation)
ON DUPLICATE KEY UPDATE
    fingerprint = VALUES(fingerprint),
    shape       = VALUES(shape),
    recorded_at = VALUES(recorded_at),
    recorded_by = VALUES(recorded_by);
