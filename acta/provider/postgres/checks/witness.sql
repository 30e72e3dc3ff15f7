-- The witness table of anvil.checks.witness, beside a ledger (not part of acta's schema).

-- name: witness_table
-- id orders the rows as they were committed (an identity without cache); at is the server's
-- clock when the row was written, for the reader (the checks go by execution).
CREATE TABLE IF NOT EXISTS {schema}.witness (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job_ref text NOT NULL, step text NOT NULL, execution bigint NOT NULL,
    pid integer NOT NULL, token text NOT NULL,
    at timestamptz NOT NULL DEFAULT clock_timestamp());

-- name: witness_index
-- An index name lives in its table's schema: it takes no qualifier.
CREATE INDEX IF NOT EXISTS witness_runs ON {schema}.witness (job_ref, step, execution);
