-- The acta outbox on SQLite: job requests staged in the application's own database.
--
-- Rows are written by add_to_outbox() inside the application's transaction, next to its
-- business rows, so a request exists exactly when that transaction committed. A relay (not
-- built yet) will later move each row into the acta ledger, possibly another database, and
-- delete it here. Everything an enqueue needs is kept in the row; nothing refers to the ledger.
--
-- Instants are UTC text with milliseconds ('2026-12-03 14:05:09.123'), as in the ledger:
-- that text sorts like the instant it names.
-- Every statement ends with a semicolon at the end of its line (create_outbox splits on it).

CREATE TABLE IF NOT EXISTS {table} (
    -- Staging order. AUTOINCREMENT: an id is never handed out twice, even after the newest
    -- row was delivered and deleted, so a later staging always sorts after an earlier one.
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    namespace        TEXT    NOT NULL,
    job_name         TEXT    NOT NULL,
    -- The input, already converted and encoded with the definition's codec at staging time
    -- (the same bytes enqueue would have written to the ledger).
    input_codec      INTEGER NOT NULL,
    input            BLOB    NOT NULL,
    priority         INTEGER NOT NULL,
    -- When the job may first run: not_before, or the staging instant plus delay (a delay
    -- counts from staging, not from delivery). NULL: as soon as it is delivered.
    run_at           TEXT,
    dedup_key        TEXT,
    correlation_key  TEXT,
    -- A JSON array of strings, '[]' when there are none.
    tags             TEXT    NOT NULL DEFAULT '[]',
    lane             TEXT,
    concurrency_key  TEXT,
    -- A deadline given as a duration was counted from staging as well.
    deadline_at      TEXT,
    deadline_strict  INTEGER NOT NULL DEFAULT 1 CHECK (deadline_strict IN (0, 1)),
    staged_at        TEXT    NOT NULL,
    -- Relay bookkeeping, unused until the relay exists: who holds the row and until when,
    -- how many deliveries were tried, and why the last one failed.
    claimed_by       TEXT,
    claimed_until    TEXT,
    attempts         INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    last_error       TEXT,
    CHECK ((claimed_by IS NULL) = (claimed_until IS NULL))
);

-- Rows of one namespace and lane in staging order: the relay will deliver a lane's rows one
-- after another, oldest first.
CREATE INDEX IF NOT EXISTS {table}_by_lane ON {table} (namespace, lane, id);
