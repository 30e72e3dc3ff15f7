-- The witness table of anvil.checks.witness, beside a ledger (not part of acta's schema).

-- name: witness_table
-- id orders the rows as they were committed; at is when the row was written, for the reader
-- (the checks go by execution).
CREATE TABLE IF NOT EXISTS {schema}.witness (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    job_ref TEXT NOT NULL, step TEXT NOT NULL, execution INTEGER NOT NULL,
    pid INTEGER NOT NULL, token TEXT NOT NULL,
    at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f', 'now')));

-- name: witness_index
-- Index names are file-wide in SQLite: the ledger's prefix keeps two ledgers' apart.
CREATE INDEX IF NOT EXISTS {schema}.witness_runs ON {schema}.witness (job_ref, step, execution);
