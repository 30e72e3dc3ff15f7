-- Outbox, delivered once: every staged row became exactly one ledger job or sits in quarantine
-- (never both, never neither), laned rows were admitted in staging order, and the outbox is
-- empty.
--
-- Returns one row per problem found (no rows: the promise held). PostgreSQL, with the ledger
-- and the source in two schemas of one database: {schema}. is the ledger's, {outbox}. the
-- source's. Parameter :source is the OutboxSource name (jobs are delivered under the
-- deduplication key outbox:<source>:<row id>).
--
-- What it reads: {outbox}.orders, the business table the workload wrote in the same
-- transaction as each staged row (order id, the staged row's outbox_id, its lane); the
-- ledger's jobs (dedup_key) and runtime (lane_id, lane_seq, the place a lane member was given
-- at enqueue, under the lane's lock); the source's acta_outbox and acta_outbox_quarantine.
--
-- Rules:
--   * lost: an order's row is neither a job nor an undecided quarantine entry;
--   * delivered and quarantined: both;
--   * quarantined twice: two undecided entries for one row;
--   * phantom job: a job under an outbox key that no order staged;
--   * admitted out of order: two rows of one lane, the later staged (higher outbox id) got
--     the earlier place in the ledger's lane (lower lane_seq);
--   * still staged: a row left in acta_outbox.
WITH staged AS (
    SELECT o.id AS order_id, o.outbox_id, o.lane
    FROM {outbox}.orders o
),
delivered AS (
    SELECT CAST(substr(j.dedup_key, length('outbox:' || :source || ':') + 1) AS bigint) AS outbox_id,
           j.job_ref, r.lane_id, r.lane_seq
    FROM {schema}.jobs j
    JOIN {schema}.runtime r ON r.job_id = j.id
    WHERE left(j.dedup_key, length('outbox:' || :source || ':')) = 'outbox:' || :source || ':'
),
quarantined AS (
    SELECT q.outbox_id, count(*) AS entries
    FROM {outbox}.acta_outbox_quarantine q
    WHERE q.decided_at IS NULL
    GROUP BY q.outbox_id
)
SELECT 'lost' AS problem, s.outbox_id, CAST(NULL AS bigint) AS other_outbox_id
FROM staged s
WHERE NOT EXISTS (SELECT 1 FROM delivered d WHERE d.outbox_id = s.outbox_id)
  AND NOT EXISTS (SELECT 1 FROM quarantined q WHERE q.outbox_id = s.outbox_id)
UNION ALL
SELECT 'delivered and quarantined', s.outbox_id, NULL
FROM staged s
JOIN delivered d ON d.outbox_id = s.outbox_id
JOIN quarantined q ON q.outbox_id = s.outbox_id
UNION ALL
SELECT 'quarantined twice', q.outbox_id, NULL
FROM quarantined q
WHERE q.entries > 1
UNION ALL
SELECT 'phantom job', d.outbox_id, NULL
FROM delivered d
WHERE NOT EXISTS (SELECT 1 FROM staged s WHERE s.outbox_id = d.outbox_id)
UNION ALL
SELECT 'admitted out of order', a.outbox_id, b.outbox_id
FROM delivered a
JOIN delivered b
  ON b.lane_id = a.lane_id AND b.outbox_id > a.outbox_id AND b.lane_seq < a.lane_seq
UNION ALL
SELECT 'still staged', x.id, NULL
FROM {outbox}.acta_outbox x
ORDER BY 1, 2;
