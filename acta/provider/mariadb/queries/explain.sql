-- Explain (acta/ops): the rows that say why a job is where it is. All of them run in one read
-- transaction, so the verdict is judged on one consistent picture of the ledger; the database
-- clock (or the test clock bound as :now) is read with them, so ages and "due" are judged by
-- the same clock that claims.

-- name: explain_job
-- The job, its runtime row, its definition, the worker holding its lease (if any) and, for a
-- lane member, the lane's head.
SELECT j.id AS job_id, j.job_ref, n.name AS namespace, j.namespace_id, d.name,
       j.definition_id, r.status, r.priority, r.attempts,
       COALESCE(r.max_attempts, ep.max_attempts) AS max_attempts, r.executions,
       r.next_run_at, j.created_at, r.updated_at, r.lease_epoch, r.lease_expires_at,
       r.control, r.ticket_at, r.open_children, r.lane_seq, j.concurrency_key,
       d.concurrency_limit, d.meter, j.deadline_at, j.deadline_strict,
       l.name AS lane, h.job_ref AS lane_head_ref, hr.status AS lane_head_status,
       w.incarnation AS lease_worker, w.host AS lease_host, w.status AS lease_worker_status,
       w.heartbeat_at AS lease_heartbeat_at, w.heartbeat_ms AS lease_heartbeat_ms,
       (SELECT p.job_ref FROM {schema}.jobs p WHERE p.id = j.parent_id) AS parent_ref,
       -- Claims skip a paused definition or namespace (an operator's pause or retire).
       d.paused AS definition_paused, d.retired AS definition_retired,
       n.paused AS namespace_paused,
       tn.tenant_key AS tenant, tn.suspended AS tenant_suspended,
       EXISTS (SELECT 1 FROM {schema}.schedules s WHERE s.slot_id = j.id) AS schedule_slot,
       :now AS now_at
FROM {schema}.jobs j
JOIN {schema}.runtime r     ON r.job_id = j.id
JOIN {schema}.namespaces n  ON n.id = j.namespace_id
JOIN {schema}.definitions d ON d.id = j.definition_id
JOIN {schema}.effective_policy_view ep ON ep.definition_id = d.id
LEFT JOIN {schema}.workers w ON w.id = r.lease_owner
LEFT JOIN {schema}.lanes l   ON l.id = r.lane_id
LEFT JOIN {schema}.tenants tn ON tn.id = j.tenant_id
LEFT JOIN {schema}.jobs h    ON h.id = l.head_job_id
LEFT JOIN {schema}.runtime hr ON hr.job_id = l.head_job_id
WHERE j.job_ref = :job_ref
  AND n.name = :namespace;

-- name: explain_events
-- The newest event of each (code, outcome) pair: enough to name the last error, the last
-- retry, who cancelled, why it paused or bounced, without reading a long timeline whole.
SELECT e.id AS event_id, e.at, e.code, e.execution, e.epoch, e.outcome, e.reason,
       e.duration_ms, e.message, e.detail, e.actor, w.incarnation AS worker
FROM {schema}.events e
LEFT JOIN {schema}.workers w ON w.id = e.worker_id
WHERE e.id IN (SELECT max(x.id) FROM {schema}.events x
               WHERE x.job_id = :job_id GROUP BY x.code, x.outcome)
ORDER BY e.id;

-- name: explain_ahead
-- How many claimable jobs a worker of this namespace takes before this one: the claim's own
-- order (priority high first, then due time, then id) over what is due now. acta's own system
-- jobs are left out: they take no executor, so they never hold a user job back.
SELECT count(*) AS ahead
FROM {schema}.runtime r
JOIN {schema}.definitions d ON d.id = r.definition_id
WHERE r.namespace_id = :namespace_id
  AND d.name NOT LIKE 'sys.%'
  AND r.status IN (10, 30)
  AND r.next_run_at <= :now
  AND (r.priority > :priority
       OR (r.priority = :priority
           AND (r.next_run_at < :next_run_at
                OR (r.next_run_at = :next_run_at AND r.job_id < :job_id))));

-- name: explain_workers
-- The namespace's workers that have neither stopped nor been declared dead, with their last
-- heartbeat (explain judges silence by it).
SELECT w.incarnation, w.host, w.heartbeat_at, w.heartbeat_ms
FROM {schema}.workers w
WHERE w.namespace_id = :namespace_id
  AND w.status = 1
ORDER BY w.id;

-- name: explain_handed_back
-- Which of those workers handed back a job of this definition for want of a handler (event
-- handed-back, reason no-handler): such a worker skips the definition for the rest of its
-- life. Read only for a due job; it scans the events of the namespace's live workers, which
-- no index serves, so explain pays it only when the answer can matter.
SELECT DISTINCT w.incarnation
FROM {schema}.events e
JOIN {schema}.workers w ON w.id = e.worker_id
JOIN {schema}.jobs j    ON j.id = e.job_id
WHERE w.namespace_id = :namespace_id
  AND w.status = 1
  AND e.code = 13
  AND e.reason = 7
  AND j.definition_id = :definition_id;

-- name: explain_wait
-- The wait a suspended job is parked on (the newest parking), and whether its signal is in.
SELECT wt.kind, wt.name, wt.due_at, wt.armed_at,
       EXISTS (SELECT 1 FROM {schema}.signals sg
               WHERE wt.kind = 2 AND sg.job_id = wt.job_id AND sg.name = wt.name) AS signalled
FROM {schema}.waits wt
WHERE wt.job_id = :job_id
  AND wt.parked_in IS NOT NULL
ORDER BY wt.parked_in DESC
LIMIT 1;

-- name: explain_gates
-- The concurrency gates that can turn this job away (its key's, its definition's limit) with
-- their limit in force and the slots held, and its definition's rate meter.
SELECT 'gate' AS source, g.kind, g.name, COALESCE(g.limit_override, g.slot_limit) AS slot_limit,
       (SELECT count(*) FROM {schema}.gate_holds gh WHERE gh.gate_id = g.id) AS held,
       NULL AS booked_until_at
FROM {schema}.gates g
WHERE g.namespace_id = :namespace_id
  AND ((g.kind = 1 AND g.name = :concurrency_key) OR (g.kind = 2 AND g.name = :name))
UNION ALL
SELECT 'meter' AS source, 0 AS kind, m.name, COALESCE(m.rate_override, m.rate) AS slot_limit,
       0 AS held, m.booked_until AS booked_until_at
FROM {schema}.meters m
WHERE m.namespace_id = :namespace_id
  AND m.name = :meter;

-- name: explain_locks
-- The locks (ctx.lock) a running job holds under its current lease epoch (names compare
-- byte-wise: the column is utf8mb4_bin).
SELECT k.name
FROM {schema}.locks k
WHERE k.holder_job_id = :job_id AND k.holder_epoch = :epoch
ORDER BY k.name;
