-- The acta outbox on MariaDB: job requests staged in the application's own database.
--
-- Rows are written by add_to_outbox() inside the application's transaction, next to its
-- business rows, so a request exists exactly when that transaction committed. The sys.outbox
-- relay later moves each row into the acta ledger, possibly another database, and deletes it
-- here. The tables go into the connection's database, or the database named as the schema.
-- Text compares byte by byte (utf8mb4_bin), instants are DATETIME(3) in UTC.
--
-- Every statement ends with a semicolon at the end of its line (create_outbox splits on it).

CREATE TABLE IF NOT EXISTS {table} (
    -- Staging order. An AUTO_INCREMENT id is never handed out twice; concurrent transactions
    -- may commit out of id order, so only rows staged one after another are ordered by it.
    id               BIGINT       NOT NULL AUTO_INCREMENT PRIMARY KEY,
    namespace        VARCHAR(255) NOT NULL,
    job_name         VARCHAR(255) NOT NULL,
    -- The input, already converted and encoded with the definition's codec at staging time.
    input_codec      SMALLINT     NOT NULL,
    input            LONGBLOB     NOT NULL,
    priority         INT          NOT NULL,
    -- When the job may first run (a delay counts from staging). NULL: once delivered.
    run_at           DATETIME(3),
    dedup_key        VARCHAR(255),
    correlation_key  VARCHAR(255),
    -- A JSON array of strings, '[]' when there are none.
    tags             LONGTEXT     NOT NULL DEFAULT '[]',
    lane             VARCHAR(255),
    concurrency_key  VARCHAR(255),
    deadline_at      DATETIME(3),
    deadline_strict  TINYINT      NOT NULL DEFAULT 1 CHECK (deadline_strict IN (0, 1)),
    staged_at        DATETIME(3)  NOT NULL,
    -- Relay bookkeeping: which relay holds the row and until when, failed deliveries, why.
    claimed_by       VARCHAR(255),
    claimed_until    DATETIME(3),
    attempts         INT          NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    last_error       TEXT,
    CONSTRAINT acta_outbox_hold CHECK ((claimed_by IS NULL) = (claimed_until IS NULL)),
    KEY acta_outbox_by_lane (namespace, lane, id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- One row that a relay locks (FOR UPDATE) before it claims: two relays never claim at the same
-- time, as PostgreSQL's advisory lock makes sure there.
CREATE TABLE IF NOT EXISTS {table}_claim_lock (
    id TINYINT NOT NULL PRIMARY KEY
) ENGINE = InnoDB;
INSERT IGNORE INTO {table}_claim_lock (id) VALUES (1);

-- Rows the relay could not admit, moved here with the reason so that later rows of their lane
-- go on; an operator requeues or discards them.
CREATE TABLE IF NOT EXISTS {quarantine} (
    id               BIGINT       NOT NULL AUTO_INCREMENT PRIMARY KEY,
    outbox_id        BIGINT       NOT NULL,
    namespace        VARCHAR(255) NOT NULL,
    job_name         VARCHAR(255) NOT NULL,
    input_codec      SMALLINT     NOT NULL,
    -- NULL once discarded: the payload is gone, the record of it stays.
    input            LONGBLOB,
    priority         INT          NOT NULL,
    run_at           DATETIME(3),
    dedup_key        VARCHAR(255),
    correlation_key  VARCHAR(255),
    tags             LONGTEXT     NOT NULL,
    lane             VARCHAR(255),
    concurrency_key  VARCHAR(255),
    deadline_at      DATETIME(3),
    deadline_strict  TINYINT      NOT NULL,
    staged_at        DATETIME(3)  NOT NULL,
    attempts         INT          NOT NULL,
    reason           VARCHAR(32)  NOT NULL,
    message          TEXT         NOT NULL,
    quarantined_at   DATETIME(3)  NOT NULL,
    quarantined_by   VARCHAR(255) NOT NULL,
    decided_at       DATETIME(3),
    decision         VARCHAR(16)  CHECK (decision IN ('requeue', 'discard')),
    actor            TEXT,
    decision_reason  TEXT,
    -- The outbox row's id while the entry is undecided, NULL after: at most one undecided
    -- entry per outbox row (PostgreSQL's partial unique index).
    open_outbox_id   BIGINT AS (IF(decided_at IS NULL, outbox_id, NULL)) PERSISTENT,
    CONSTRAINT acta_outbox_quarantine_decision CHECK ((decided_at IS NULL) = (decision IS NULL)),
    UNIQUE KEY acta_outbox_quarantine_open (open_outbox_id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
