-- The witness table of anvil.checks.witness, beside a ledger (not part of acta's schema).

-- name: witness_table
-- id orders the rows as they were committed (InnoDB's AUTO_INCREMENT, taken at insert); at is
-- the server's clock in milliseconds when the row was written, for the reader (the checks go
-- by execution). Refs and steps compare byte-wise, as the ledger's refs do.
CREATE TABLE IF NOT EXISTS {schema}.witness (
    id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
    job_ref VARCHAR(255) COLLATE utf8mb4_bin NOT NULL,
    step VARCHAR(255) COLLATE utf8mb4_bin NOT NULL,
    execution BIGINT NOT NULL,
    pid INT NOT NULL,
    token VARCHAR(255) COLLATE utf8mb4_bin NOT NULL,
    at DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- name: witness_index
-- An index name lives in its table: it takes no qualifier (IF NOT EXISTS: MariaDB's own).
CREATE INDEX IF NOT EXISTS witness_runs ON {schema}.witness (job_ref, step, execution);
