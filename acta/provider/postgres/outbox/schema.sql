-- The acta outbox on PostgreSQL: job requests staged in the application's own database.
--
-- Rows are written by add_to_outbox() inside the application's transaction, next to its
-- business rows, so a request exists exactly when that transaction committed. The sys.outbox
-- relay later moves each row into the acta ledger, possibly another database, and
-- delete it here. Everything an enqueue needs is kept in the row; nothing refers to the ledger.
--
-- Every statement ends with a semicolon at the end of its line (create_outbox splits on it).

CREATE SCHEMA IF NOT EXISTS {schema};

CREATE TABLE IF NOT EXISTS {table} (
    -- Staging order. An identity is never handed out twice; concurrent transactions may
    -- commit out of id order, so only rows staged one after another are ordered by it.
    id               bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    namespace        text        NOT NULL,
    job_name         text        NOT NULL,
    -- The input, already converted and encoded with the definition's codec at staging time
    -- (the same bytes enqueue would have written to the ledger).
    input_codec      smallint    NOT NULL,
    input            bytea       NOT NULL,
    priority         integer     NOT NULL,
    -- When the job may first run: not_before, or the staging instant plus delay (a delay
    -- counts from staging, not from delivery). NULL: as soon as it is delivered.
    run_at           timestamptz,
    dedup_key        text,
    correlation_key  text,
    -- A JSON array of strings, '[]' when there are none (text, read back by the relay).
    tags             text        NOT NULL DEFAULT '[]',
    lane             text,
    concurrency_key  text,
    -- A deadline given as a duration was counted from staging as well.
    deadline_at      timestamptz,
    deadline_strict  boolean     NOT NULL DEFAULT true,
    staged_at        timestamptz NOT NULL,
    -- Relay bookkeeping: which relay holds the row and until when (a lapsed hold may be
    -- taken again), how many deliveries failed, and why the last one did.
    claimed_by       text,
    claimed_until    timestamptz,
    attempts         integer     NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    last_error       text,
    CHECK ((claimed_by IS NULL) = (claimed_until IS NULL))
);

-- Rows of one namespace and lane in staging order: the relay delivers a lane's rows one after
-- another, oldest first, and a row waits while an older one of its lane remains.
CREATE INDEX IF NOT EXISTS acta_outbox_by_lane ON {table} (namespace, lane, id);

-- Rows the relay could not admit (unknown job, undecodable input, over the payload cap, bad
-- namespace or options), moved here with the reason so that later rows of their lane go on.
-- An operator reads them and decides: requeue puts the row back in the outbox under its old
-- id, discard drops its input. Decided rows stay, as the record of who decided what and why.
CREATE TABLE IF NOT EXISTS {quarantine} (
    id               bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    -- The outbox row's id, the one add_to_outbox returned (kept again on requeue).
    outbox_id        bigint      NOT NULL,
    namespace        text        NOT NULL,
    job_name         text        NOT NULL,
    input_codec      smallint    NOT NULL,
    -- NULL once discarded: the payload is gone, the record of it stays.
    input            bytea,
    priority         integer     NOT NULL,
    run_at           timestamptz,
    dedup_key        text,
    correlation_key  text,
    tags             text        NOT NULL,
    lane             text,
    concurrency_key  text,
    deadline_at      timestamptz,
    deadline_strict  boolean     NOT NULL,
    staged_at        timestamptz NOT NULL,
    attempts         integer     NOT NULL,
    -- Why it was not admitted: unknown_job, undecodable, too_large, bad_namespace, rejected.
    reason           text        NOT NULL,
    message          text        NOT NULL,
    quarantined_at   timestamptz NOT NULL,
    quarantined_by   text        NOT NULL,
    -- The operator's decision, once made: when, which (requeue or discard), who and why.
    decided_at       timestamptz,
    decision         text        CHECK (decision IN ('requeue', 'discard')),
    actor            text,
    decision_reason  text,
    CHECK ((decided_at IS NULL) = (decision IS NULL))
);

-- At most one undecided entry per outbox row: two relays racing over a lapsed hold cannot
-- quarantine one row twice.
CREATE UNIQUE INDEX IF NOT EXISTS acta_outbox_quarantine_open
    ON {quarantine} (outbox_id) WHERE decided_at IS NULL;
