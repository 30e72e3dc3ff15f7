-- Parents and children: no child spawned twice, each parent has all its children, and a
-- parent succeeded only after every one of them had succeeded; no latch is left behind.
--
-- Returns one row per violation (no rows: it holds); portable SQL. Parameters: :parent_job,
-- the definition whose jobs spawn children, and :children, how many each spawns (set by the
-- certification's children workload, anvil/certify/workloads/children.py). The "problem"
-- column says which rule broke.
--
-- What it reads. jobs (a child's parent_id and child_name, its name under the parent: a
-- re-entered parent finds the children it spawned instead of spawning them again), runtime
-- (statuses, and the parent's open_children count, decremented by each child's terminal
-- transition), the latches a waiting parent holds (one per unfinished child, deleted by its
-- terminal transition), and the terminal events (20 succeeded, 21 failed, 22 cancelled),
-- whose ids give commit order.
--   * child spawned twice: two children of one parent under one name, or more than
--     :children children;
--   * children missing: a succeeded parent with fewer than :children children;
--   * succeeded before a child succeeded: a succeeded parent with a child not succeeded, or
--     whose succeeded event was committed before a child's terminal event;
--   * latch left: a terminal parent with open_children other than 0 or a latch row left.
WITH parents AS (
    SELECT j.id AS job_id, j.job_ref, r.status, r.open_children
    FROM {schema}.jobs j
    JOIN {schema}.definitions d ON d.id = j.definition_id
    JOIN {schema}.runtime r ON r.job_id = j.id
    WHERE d.name = :parent_job
),
kids AS (
    SELECT c.parent_id, c.id AS job_id, c.child_name, r.status,
           (SELECT max(e.id) FROM {schema}.events e
             WHERE e.job_id = c.id AND e.code IN (20, 21, 22)) AS ended_at_event
    FROM {schema}.jobs c
    JOIN {schema}.runtime r ON r.job_id = c.id
    WHERE c.parent_id IN (SELECT job_id FROM parents)
),
counted AS (
    SELECT p.job_id, p.job_ref, p.status, p.open_children,
           (SELECT count(*) FROM kids k WHERE k.parent_id = p.job_id) AS children,
           (SELECT count(DISTINCT k.child_name) FROM kids k WHERE k.parent_id = p.job_id)
               AS names,
           (SELECT count(*) FROM kids k WHERE k.parent_id = p.job_id AND k.status <> 100)
               AS unfinished,
           (SELECT max(k.ended_at_event) FROM kids k WHERE k.parent_id = p.job_id)
               AS last_child_end,
           (SELECT min(e.id) FROM {schema}.events e WHERE e.job_id = p.job_id AND e.code = 20)
               AS succeeded_at_event,
           (SELECT count(*) FROM {schema}.latches l WHERE l.parent_id = p.job_id) AS latches
    FROM parents p
)
SELECT job_ref, children, unfinished, open_children, 'child spawned twice' AS problem
FROM counted
WHERE children > :children OR names < children
UNION ALL
SELECT job_ref, children, unfinished, open_children, 'children missing'
FROM counted
WHERE status = 100 AND children < :children
UNION ALL
SELECT job_ref, children, unfinished, open_children, 'succeeded before a child succeeded'
FROM counted
WHERE status = 100
  AND (unfinished > 0 OR last_child_end IS NULL OR succeeded_at_event < last_child_end)
UNION ALL
SELECT job_ref, children, unfinished, open_children, 'latch left'
FROM counted
WHERE status >= 100 AND (open_children <> 0 OR latches > 0)
ORDER BY 1, 5
