-- acta ledger, PostgreSQL, migration 13: storage settings for the hot tables, so that a claim
-- costs the same whether ten thousand or a million jobs wait, and however many were drained.
--
-- No columns, indexes or views change: only how PostgreSQL stores and cleans the tables.
--
-- runtime is updated two or three times per job (claim, start, settle). Each of those changes
-- status, which the partial indexes name in their WHERE clauses, so PostgreSQL cannot make
-- them heap-only (HOT) updates: every update writes a new row version and new index entries,
-- and leaves the old ones dead until a vacuum. Two things keep that cheap:
-- * fillfactor 80 leaves a fifth of each page free, so the new version of a row usually lands
--   on the page of the old one: a batch dirties the pages it read instead of new ones, and
--   page pruning can reclaim the dead versions without waiting for a vacuum.
-- * autovacuum on a small fixed share of the table: the default (20% of the rows) waits for
--   200,000 dead versions under a million-row backlog, while the claim index collects the dead
--   entries of every row claimed since. 2% plus 1,000 rows starts it after about seven
--   thousand jobs there, and a higher cost limit lets it finish before the next one is due.
--   Claimed rows leave the claim index (its predicate is status 10 or 30), and a scan marks
--   the dead entries it passes as dead for later scans; vacuum removes them for good.
ALTER TABLE {schema}.runtime SET (
    fillfactor = 80,
    autovacuum_vacuum_scale_factor = 0.02,
    autovacuum_vacuum_threshold = 1000,
    autovacuum_analyze_scale_factor = 0.02,
    autovacuum_analyze_threshold = 1000,
    autovacuum_vacuum_cost_limit = 2000
);

-- events and jobs only grow (until retention purges): vacuum them after inserts often enough
-- to keep their visibility maps current (index-only reads of the timeline and the views) and
-- their statistics fresh, rather than after 20% growth.
ALTER TABLE {schema}.events SET (
    autovacuum_vacuum_insert_scale_factor = 0.05,
    autovacuum_vacuum_insert_threshold = 10000,
    autovacuum_analyze_scale_factor = 0.05
);

ALTER TABLE {schema}.jobs SET (
    autovacuum_vacuum_insert_scale_factor = 0.05,
    autovacuum_vacuum_insert_threshold = 10000,
    autovacuum_analyze_scale_factor = 0.05
);
