-- Alerts: failure incidents opened by settles, notified and resolved by sys.alerts,
-- acknowledged and resolved by operators. Every change here writes an alert event (job_id
-- NULL: an incident is the namespace's, not one job's) in the same transaction.

-- name: incident_upsert
-- A failure opens its definition's incident for this reason class, or joins the open one:
-- one row per outage, counting occurrences, with the last job and error. The partial unique
-- index alerts_one_open_incident is the arbiter, so two settles failing at once cannot open
-- two incidents. occurrences = 1 on return means this settle opened it.
INSERT INTO {schema}.alerts AS a
    (namespace_id, job_id, job_ref, kind, severity, title, detail, opened_at, definition_id,
     reason, occurrences, first_seen_at, last_seen_at)
SELECT j.namespace_id, j.id, j.job_ref, 2, :severity, d.name || ' failed: ' || :reason_label,
       :detail, COALESCE(:now::timestamptz, now()), j.definition_id, :reason, 1,
       COALESCE(:now::timestamptz, now()), COALESCE(:now::timestamptz, now())
FROM {schema}.jobs j
JOIN {schema}.definitions d ON d.id = j.definition_id
WHERE j.id = :job_id
ON CONFLICT (namespace_id, definition_id, reason) WHERE kind = 2 AND resolved_at IS NULL
DO UPDATE SET occurrences  = a.occurrences + 1,
              last_seen_at = excluded.last_seen_at,
              job_id       = excluded.job_id,
              job_ref      = excluded.job_ref,
              detail       = excluded.detail,
              severity     = GREATEST(a.severity, excluded.severity)
RETURNING a.id AS alert_id, a.occurrences, a.title;

-- name: incidents_recovered
-- Open failure incidents of the namespace whose definition succeeded after their last
-- failure (a success at the same instant counts when its job came later): the outage is over.
UPDATE {schema}.alerts a
SET resolved_at = COALESCE(:now::timestamptz, now()), resolved_by = :actor
FROM {schema}.namespaces n
WHERE n.name = :namespace AND a.namespace_id = n.id
  AND a.kind = 2 AND a.resolved_at IS NULL
  AND EXISTS (
      SELECT 1 FROM {schema}.runtime r
      WHERE r.namespace_id = a.namespace_id AND r.definition_id = a.definition_id
        AND r.status = 100
        AND (r.updated_at > a.last_seen_at
             OR (r.updated_at = a.last_seen_at AND r.job_id > a.job_id)))
RETURNING a.id AS alert_id, a.namespace_id, a.title;

-- name: alerts_due
-- Open, unacknowledged alerts owed a notice: never notified, a reminder due, or channels
-- that failed the last notice. Oldest first, one batch.
SELECT v.*, a.namespace_id,
       -- false when only failed channels are owed the last notice (no new round yet)
       (a.next_reminder_at IS NULL OR a.next_reminder_at <= COALESCE(:now::timestamptz, now())) AS round_due
FROM {schema}.alerts_view v
JOIN {schema}.alerts a ON a.id = v.alert_id
JOIN {schema}.namespaces n ON n.id = a.namespace_id
WHERE n.name = :namespace
  AND a.resolved_at IS NULL AND a.acknowledged_at IS NULL
  AND (a.next_reminder_at IS NULL OR a.next_reminder_at <= COALESCE(:now::timestamptz, now())
       OR a.pending_channels IS NOT NULL)
ORDER BY a.id
LIMIT :limit;

-- name: alert_notified
-- A notice went out: a full round (:remind_ms given) sets the next reminder; a retry of
-- failed channels only (:remind_ms NULL) keeps it. :pending lists channels that failed.
UPDATE {schema}.alerts
SET last_notified_at = COALESCE(:now::timestamptz, now()),
    next_reminder_at = CASE WHEN :remind_ms::bigint IS NULL THEN next_reminder_at
                            ELSE COALESCE(:now::timestamptz, now())
                                 + :remind_ms::bigint * interval '1 millisecond' END,
    pending_channels = :pending
WHERE id = :alert_id AND resolved_at IS NULL;

-- name: alert_acknowledge
-- An operator took it: no more reminders (an alert already acknowledged or resolved is left).
UPDATE {schema}.alerts a
SET acknowledged_at = COALESCE(:now::timestamptz, now()), acknowledged_by = :actor
FROM {schema}.namespaces n
WHERE a.id = :alert_id AND n.id = a.namespace_id AND n.name = :namespace
  AND a.resolved_at IS NULL AND a.acknowledged_at IS NULL
RETURNING a.id AS alert_id, a.namespace_id;

-- name: alert_resolve
UPDATE {schema}.alerts a
SET resolved_at = COALESCE(:now::timestamptz, now()), resolved_by = :actor
FROM {schema}.namespaces n
WHERE a.id = :alert_id AND n.id = a.namespace_id AND n.name = :namespace
  AND a.resolved_at IS NULL
RETURNING a.id AS alert_id, a.namespace_id;

-- name: alert_by_id
SELECT * FROM {schema}.alerts_view WHERE alert_id = :alert_id AND namespace = :namespace;

-- name: alerts_list
-- Newest first; open ones only unless :everything.
SELECT * FROM {schema}.alerts_view
WHERE namespace = :namespace AND (:everything = 1 OR resolved_at IS NULL)
ORDER BY alert_id DESC
LIMIT :limit;
