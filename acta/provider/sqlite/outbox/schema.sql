-- The acta outbox on SQLite: job requests staged in the application's own database.
--
-- Rows are written by add_to_outbox() inside the application's transaction, next to its
-- business rows, so a request exists exactly when that transaction committed. The sys.outbox
-- relay later moves each row into the acta ledger, possibly another database, and
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
    -- Relay bookkeeping: which relay holds the row and until when (a lapsed hold may be
    -- taken again), how many deliveries failed, and why the last one did.
    claimed_by       TEXT,
    claimed_until    TEXT,
    attempts         INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    last_error       TEXT,
    CHECK ((claimed_by IS NULL) = (claimed_until IS NULL))
);

-- Rows of one namespace and lane in staging order: the relay delivers a lane's rows one after
-- another, oldest first, and a row waits while an older one of its lane remains.
CREATE INDEX IF NOT EXISTS {table}_by_lane ON {table} (namespace, lane, id);

-- Rows the relay could not admit (unknown job, undecodable input, over the payload cap, bad
-- namespace or options), moved here with the reason so that later rows of their lane go on.
-- An operator reads them and decides: requeue puts the row back in the outbox under its old
-- id, discard drops its input. Decided rows stay, as the record of who decided what and why.
CREATE TABLE IF NOT EXISTS {quarantine} (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    -- The outbox row's id, the one add_to_outbox returned (kept again on requeue).
    outbox_id        INTEGER NOT NULL,
    namespace        TEXT    NOT NULL,
    job_name         TEXT    NOT NULL,
    input_codec      INTEGER NOT NULL,
    -- NULL once discarded: the payload is gone, the record of it stays.
    input            BLOB,
    priority         INTEGER NOT NULL,
    run_at           TEXT,
    dedup_key        TEXT,
    correlation_key  TEXT,
    tags             TEXT    NOT NULL,
    lane             TEXT,
    concurrency_key  TEXT,
    deadline_at      TEXT,
    deadline_strict  INTEGER NOT NULL,
    staged_at        TEXT    NOT NULL,
    attempts         INTEGER NOT NULL,
    -- Why it was not admitted: unknown_job, undecodable, too_large, bad_namespace, rejected.
    reason           TEXT    NOT NULL,
    message          TEXT    NOT NULL,
    quarantined_at   TEXT    NOT NULL,
    quarantined_by   TEXT    NOT NULL,
    -- The operator's decision, once made: when, which (requeue or discard), who and why.
    decided_at       TEXT,
    decision         TEXT    CHECK (decision IN ('requeue', 'discard')),
    actor            TEXT,
    decision_reason  TEXT,
    CHECK ((decided_at IS NULL) = (decision IS NULL))
);

-- At most one undecided entry per outbox row: two relays racing over a lapsed hold cannot
-- quarantine one row twice.
CREATE UNIQUE INDEX IF NOT EXISTS acta_outbox_quarantine_open
    ON {quarantine} (outbox_id) WHERE decided_at IS NULL;
