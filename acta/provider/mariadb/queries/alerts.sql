-- Alerts: failure incidents opened by settles, notified and resolved by sys.alerts,
-- acknowledged and resolved by operators. Every change here writes an alert event (job_id
-- NULL: an incident is the namespace's, not one job's) in the same transaction.

-- name: incident_upsert
-- A failure opens its definition's incident for this reason class, or joins the open one:
-- one row per outage, counting occurrences, with the last job and error. The partial unique
-- key alerts_one_open_incident (over the generated open_incident) is the arbiter, so two settles failing at once cannot open
-- two incidents. occurrences = 1 on return means this settle opened it.
INSERT INTO {schema}.alerts
    (namespace_id, job_id, job_ref, kind, severity, title, detail, opened_at, definition_id,
     reason, occurrences, first_seen_at, last_seen_at)
SELECT j.namespace_id, j.id, j.job_ref, 2, :severity, d.name || ' failed: ' || :reason_label,
       :detail, :now, j.definition_id, :reason, 1, :now, :now
FROM {schema}.jobs j
JOIN {schema}.definitions d ON d.id = j.definition_id
WHERE j.id = :job_id
ON DUPLICATE KEY UPDATE occurrences  = occurrences + 1,
              last_seen_at = VALUES(last_seen_at),
              job_id       = VALUES(job_id),
              job_ref      = VALUES(job_ref),
              detail       = VALUES(detail),
              severity     = GREATEST(severity, VALUES(severity))
RETURNING id AS alert_id, occurrences, title;

-- name: incidents_recovered.lock
-- Open failure incidents of the namespace whose definition succeeded after their last
-- failure (a success at the same instant counts when its job came later): the outage is over.
SELECT a.id FROM {schema}.alerts a
WHERE a.namespace_id = (SELECT id FROM {schema}.namespaces WHERE name = :namespace)
  AND a.kind = 2 AND a.resolved_at IS NULL
  AND EXISTS (
      SELECT 1 FROM {schema}.runtime r
      WHERE r.namespace_id = a.namespace_id AND r.definition_id = a.definition_id
        AND r.status = 100
        AND (r.updated_at > a.last_seen_at
             OR (r.updated_at = a.last_seen_at AND r.job_id > a.job_id)))
FOR UPDATE;

-- name: incidents_recovered.update
UPDATE {schema}.alerts SET resolved_at = :now, resolved_by = :actor
WHERE id IN (SELECT value FROM JSON_TABLE(:_ids, '$[*]' COLUMNS (value BIGINT PATH '$')) AS ids);

-- name: incidents_recovered.select
SELECT id AS alert_id, namespace_id, title FROM {schema}.alerts
WHERE id IN (SELECT value FROM JSON_TABLE(:_ids, '$[*]' COLUMNS (value BIGINT PATH '$')) AS ids) ORDER BY id;

-- name: alerts_due
-- Open, unacknowledged alerts owed a notice: never notified, a reminder due, or channels
-- that failed the last notice. Oldest first, one batch.
SELECT v.*, a.namespace_id,
       -- false when only failed channels are owed the last notice (no new round yet)
       (a.next_reminder_at IS NULL OR a.next_reminder_at <= :now) AS round_due
FROM {schema}.alerts_view v
JOIN {schema}.alerts a ON a.id = v.alert_id
JOIN {schema}.namespaces n ON n.id = a.namespace_id
WHERE n.name = :namespace
  AND a.resolved_at IS NULL AND a.acknowledged_at IS NULL
  AND (a.next_reminder_at IS NULL OR a.next_reminder_at <= :now
       OR a.pending_channels IS NOT NULL)
ORDER BY a.id
LIMIT :limit;

-- name: alert_notified
-- A notice went out: a full round (:remind_ms given) sets the next reminder; a retry of
-- failed channels only (:remind_ms NULL) keeps it. :pending lists channels that failed.
UPDATE {schema}.alerts
SET last_notified_at = :now,
    next_reminder_at = CASE WHEN :remind_ms IS NULL THEN next_reminder_at
                            ELSE TIMESTAMPADD(MICROSECOND, (:remind_ms) * 1000, :now) END,
    pending_channels = :pending
WHERE id = :alert_id AND resolved_at IS NULL;

-- name: alert_acknowledge.lock
-- An operator took it: no more reminders (an alert already acknowledged or resolved is left).
SELECT a.id FROM {schema}.alerts a
WHERE a.id = :alert_id
  AND a.namespace_id = (SELECT id FROM {schema}.namespaces WHERE name = :namespace)
  AND a.resolved_at IS NULL AND a.acknowledged_at IS NULL
FOR UPDATE;

-- name: alert_acknowledge.update
UPDATE {schema}.alerts SET acknowledged_at = :now, acknowledged_by = :actor
WHERE id IN (SELECT value FROM JSON_TABLE(:_ids, '$[*]' COLUMNS (value BIGINT PATH '$')) AS ids);

-- name: alert_acknowledge.select
SELECT id AS alert_id, namespace_id FROM {schema}.alerts WHERE id IN (SELECT value FROM JSON_TABLE(:_ids, '$[*]' COLUMNS (value BIGINT PATH '$')) AS ids);

-- name: alert_resolve.lock
SELECT a.id FROM {schema}.alerts a
WHERE a.id = :alert_id
  AND a.namespace_id = (SELECT id FROM {schema}.namespaces WHERE name = :namespace)
  AND a.resolved_at IS NULL
FOR UPDATE;

-- name: alert_resolve.update
UPDATE {schema}.alerts SET resolved_at = :now, resolved_by = :actor
WHERE id IN (SELECT value FROM JSON_TABLE(:_ids, '$[*]' COLUMNS (value BIGINT PATH '$')) AS ids);

-- name: alert_resolve.select
SELECT id AS alert_id, namespace_id FROM {schema}.alerts WHERE id IN (SELECT value FROM JSON_TABLE(:_ids, '$[*]' COLUMNS (value BIGINT PATH '$')) AS ids);

-- name: alert_by_id
SELECT * FROM {schema}.alerts_view WHERE alert_id = :alert_id AND namespace = :namespace;

-- name: alerts_list
-- Newest first; open ones only unless :everything.
SELECT * FROM {schema}.alerts_view
WHERE namespace = :namespace AND (:everything = 1 OR resolved_at IS NULL)
ORDER BY alert_id DESC
LIMIT :limit;
