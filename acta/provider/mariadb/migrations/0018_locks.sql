-- acta ledger, MariaDB, migration 18: locks a running handler takes (ctx.lock), as SQLite's 18
-- and PostgreSQL's 21.
--
-- One row per lock key in a namespace, naming its holder as (job, lease epoch). The holder's
-- runtime row decides whether the lock is held: while that job is running at that epoch the
-- lock is taken; once recovery (or a new claim) moved the epoch on, or the run ended, the lock
-- is free and the next acquire overwrites the row. A release deletes the row, matched on holder
-- and epoch, so a zombie can never release a lock another job took since.

CREATE TABLE IF NOT EXISTS {schema}.locks (
    id            BIGINT       NOT NULL AUTO_INCREMENT PRIMARY KEY,
    namespace_id  BIGINT       NOT NULL,
    name          VARCHAR(255) NOT NULL,
    holder_job_id BIGINT       NOT NULL,
    holder_epoch  BIGINT       NOT NULL,
    since         DATETIME(3)  NOT NULL,
    UNIQUE KEY locks_name (namespace_id, name),
    KEY locks_by_holder (holder_job_id),
    FOREIGN KEY (namespace_id) REFERENCES {schema}.namespaces (id),
    FOREIGN KEY (holder_job_id) REFERENCES {schema}.jobs (id) ON DELETE CASCADE
) ENGINE = InnoDB;

-- Each lock row with its holder, and whether that holder still holds it (held = 0: its lease
-- was taken back or its run ended; the next acquire takes the lock over).
CREATE OR REPLACE VIEW {schema}.locks_view AS
SELECT
    n.name         AS namespace,
    k.name         AS lock_key,
    j.job_ref      AS holder_job_ref,
    d.name         AS holder_job_name,
    k.holder_epoch,
    k.since,
    CASE WHEN r.lease_epoch = k.holder_epoch AND r.status = 21 THEN 1 ELSE 0 END AS held
FROM {schema}.locks k
JOIN {schema}.namespaces n ON n.id = k.namespace_id
LEFT JOIN {schema}.jobs j ON j.id = k.holder_job_id
LEFT JOIN {schema}.definitions d ON d.id = j.definition_id
LEFT JOIN {schema}.runtime r ON r.job_id = k.holder_job_id;
