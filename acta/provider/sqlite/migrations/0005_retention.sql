-- acta ledger, SQLite, migration 5: retention.
--
-- Each definition says how long its finished jobs are kept; sys.retention purges the rows of
-- jobs past it, and leaves a tombstone per purged job so that its ref still resolves (as
-- purged, with its timeline) for as long as events are kept.

-- Milliseconds a finished job is kept; NULL keeps it forever. Rows written before this
-- migration take the documented default (7 days) until their next registration.
ALTER TABLE {schema}.definitions ADD COLUMN retention_ms INTEGER DEFAULT 604800000
    CHECK (retention_ms IS NULL OR retention_ms >= 60000);

CREATE TABLE {schema}.purged_jobs (
    job_ref       TEXT    PRIMARY KEY,
    -- The purged row's id: its events keep it, so the timeline is read by the same index.
    job_id        INTEGER NOT NULL,
    namespace_id  INTEGER NOT NULL REFERENCES {schema}.namespaces (id),
    definition_id INTEGER NOT NULL,
    -- The terminal status it had and when it reached it.
    status        INTEGER NOT NULL,
    finished_at   TEXT    NOT NULL,
    purged_at     TEXT    NOT NULL,
    FOREIGN KEY (definition_id, namespace_id) REFERENCES {schema}.definitions (id, namespace_id)
) WITHOUT ROWID;
-- Tombstones leave with the events they stand for (event retention), oldest first.
CREATE INDEX {schema}.purged_jobs_by_age ON {schema}.purged_jobs (namespace_id, purged_at);

-- Finished jobs oldest first: where a purge batch looks for its candidates.
CREATE INDEX {schema}.runtime_finished
    ON {schema}.runtime (namespace_id, updated_at) WHERE status >= 100;
