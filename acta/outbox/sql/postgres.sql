-- The acta outbox on PostgreSQL: job requests staged in the application's own database.
--
-- Rows are written by add_to_outbox() inside the application's transaction, next to its
-- business rows, so a request exists exactly when that transaction committed. A relay (not
-- built yet) will later move each row into the acta ledger, possibly another database, and
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
    -- Relay bookkeeping, unused until the relay exists: who holds the row and until when,
    -- how many deliveries were tried, and why the last one failed.
    claimed_by       text,
    claimed_until    timestamptz,
    attempts         integer     NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    last_error       text,
    CHECK ((claimed_by IS NULL) = (claimed_until IS NULL))
);

-- Rows of one namespace and lane in staging order: the relay will deliver a lane's rows one
-- after another, oldest first.
CREATE INDEX IF NOT EXISTS acta_outbox_by_lane ON {table} (namespace, lane, id);
