-- Reads for acta.telemetry: only the backlog gauge, and only for an application that opted in.

-- name: backlog
-- Due jobs no worker holds yet, by job name: what the claim would take now (ready, or suspended
-- with its timer due), acta's own sys.* jobs left out. Run at each metrics collection, not per
-- job; it walks the claim index (namespace, status, due time) rather than the jobs table.
SELECT d.name, count(*) AS waiting
FROM {schema}.runtime r
JOIN {schema}.namespaces n  ON n.id = r.namespace_id
JOIN {schema}.definitions d ON d.id = r.definition_id
WHERE n.name = :namespace
  AND r.status IN (10, 30)
  AND r.next_run_at <= :now
  AND d.name NOT LIKE 'sys.%'
GROUP BY d.name
ORDER BY d.name;
