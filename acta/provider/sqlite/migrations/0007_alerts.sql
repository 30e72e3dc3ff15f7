-- acta ledger, SQLite, migration 7: failure alerts.
--
-- A failure alert is an incident, not a row per failure: one open row per (namespace,
-- definition, reason class) counts its occurrences and keeps the first and last time it was
-- seen, the last job and its error. The settle that fails a job opens or joins the incident in
-- its own transaction. sys.alerts notifies the channels of open incidents (new, or due for a
-- reminder) and resolves an incident once its definition succeeds again; operators acknowledge
-- (no more reminders) and resolve by hand.

-- The failing definition and the reason class of its failures (failure incidents only).
ALTER TABLE {schema}.alerts ADD COLUMN definition_id INTEGER;
ALTER TABLE {schema}.alerts ADD COLUMN reason INTEGER;
ALTER TABLE {schema}.alerts ADD COLUMN occurrences INTEGER NOT NULL DEFAULT 1;
-- NULL for manual alerts: their one occurrence is opened_at.
ALTER TABLE {schema}.alerts ADD COLUMN first_seen_at TEXT;
ALTER TABLE {schema}.alerts ADD COLUMN last_seen_at TEXT;
ALTER TABLE {schema}.alerts ADD COLUMN acknowledged_at TEXT;
ALTER TABLE {schema}.alerts ADD COLUMN acknowledged_by TEXT;
ALTER TABLE {schema}.alerts ADD COLUMN resolved_by TEXT;
-- When sys.alerts notifies the incident again (NULL: never notified yet, due now).
ALTER TABLE {schema}.alerts ADD COLUMN next_reminder_at TEXT;
ALTER TABLE {schema}.alerts ADD COLUMN last_notified_at TEXT;
-- Channels that failed the current notice, with its state (JSON): retried on the next round.
ALTER TABLE {schema}.alerts ADD COLUMN pending_channels TEXT;

-- One open incident per (namespace, definition, reason class): the settle's upsert joins it.
CREATE UNIQUE INDEX {schema}.alerts_one_open_incident
    ON {schema}.alerts (namespace_id, definition_id, reason)
    WHERE kind = 2 AND resolved_at IS NULL;

DROP VIEW {schema}.alerts_view;

-- Alerts with their job, definition and reason names.
CREATE VIEW {schema}.alerts_view AS
SELECT
    a.id             AS alert_id,
    n.name           AS namespace,
    a.job_ref,
    d.name           AS job_name,
    k.name           AS kind,
    sv.name          AS severity,
    a.title,
    a.detail,
    a.opened_at,
    a.resolved_at,
    rc.name          AS reason_class,
    a.occurrences,
    COALESCE(a.first_seen_at, a.opened_at) AS first_seen_at,
    COALESCE(a.last_seen_at, a.opened_at)  AS last_seen_at,
    a.acknowledged_at,
    a.acknowledged_by,
    a.resolved_by,
    a.next_reminder_at,
    a.last_notified_at,
    a.pending_channels
FROM {schema}.alerts a
JOIN {schema}.namespaces n   ON n.id = a.namespace_id
LEFT JOIN {schema}.jobs j    ON j.id = a.job_id
LEFT JOIN {schema}.definitions d ON d.id = COALESCE(a.definition_id, j.definition_id)
JOIN {schema}.codes k        ON k.family = 'alert_kind' AND k.code = a.kind
JOIN {schema}.codes sv       ON sv.family = 'alert_severity' AND sv.code = a.severity
LEFT JOIN {schema}.codes rc  ON rc.family = 'reason' AND rc.code = a.reason;

UPDATE {schema}.codes SET description = 'An alert was opened: by the handler (ctx.alert), or a failure incident by the settle that failed a job.'
WHERE family = 'event' AND code = 45;

INSERT INTO {schema}.codes (family, code, name, description) VALUES
    ('alert_kind', 2, 'failure', 'A failure incident: failures of one definition for one reason class.'),
    ('event', 80, 'alert-resolved', 'An alert was resolved: by an operator, or by sys.alerts after a later success.'),
    ('event', 81, 'alert-acknowledged', 'An operator acknowledged an alert: no more reminders.'),
    ('event', 82, 'alert-notified', 'sys.alerts notified the channels of an alert; message says which failed.');
