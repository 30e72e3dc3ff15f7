-- acta ledger, PostgreSQL, migration 21: locks a running handler takes (ctx.lock).
--
-- One row per lock key in a namespace, naming its holder as (job, lease epoch). The holder's
-- runtime row decides whether the lock is held: while that job is running at that epoch the
-- lock is taken; once recovery (or a new claim) moved the epoch on, or the run ended, the lock
-- is free and the next acquire overwrites the row. So a dead holder's lock is released by
-- recovery, and a fenced zombie cannot keep it. A release deletes the row, matched on holder
-- and epoch, so a zombie can never release a lock another job took since.

CREATE TABLE {schema}.locks (
    id            bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    namespace_id  bigint      NOT NULL REFERENCES {schema}.namespaces (id),
    name          text        NOT NULL,
    holder_job_id bigint      NOT NULL REFERENCES {schema}.jobs (id) ON DELETE CASCADE,
    holder_epoch  bigint      NOT NULL,
    since         timestamptz NOT NULL,
    UNIQUE (namespace_id, name)
);

CREATE INDEX locks_by_holder ON {schema}.locks (holder_job_id);

-- Each lock row with its holder, and whether that holder still holds it (held = false: its
-- lease was taken back or its run ended; the next acquire takes the lock over).
CREATE VIEW {schema}.locks_view AS
SELECT
    n.name         AS namespace,
    k.name         AS lock_key,
    j.job_ref      AS holder_job_ref,
    d.name         AS holder_job_name,
    k.holder_epoch,
    k.since,
    COALESCE(r.lease_epoch = k.holder_epoch AND r.status = 21, false) AS held
FROM {schema}.locks k
JOIN {schema}.namespaces n ON n.id = k.namespace_id
LEFT JOIN {schema}.jobs j ON j.id = k.holder_job_id
LEFT JOIN {schema}.definitions d ON d.id = j.definition_id
LEFT JOIN {schema}.runtime r ON r.job_id = k.holder_job_id;
