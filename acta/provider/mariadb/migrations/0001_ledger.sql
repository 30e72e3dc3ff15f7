-- acta ledger, MariaDB, migration 1: every table and view of the ledger as the other dialects'
-- first 16 migrations leave them (MariaDB joined then: its migrations 2 to 16 are empty).
--
-- The ledger is a database of its own (MariaDB's schema, `acta` by default) in utf8mb4 with
-- the binary collation: refs, keys and names compare byte by byte, as on the other dialects.
-- Instants are DATETIME(3) in UTC (UTC_TIMESTAMP(3)); ids BIGINT AUTO_INCREMENT; JSON is
-- LONGTEXT checked by json_valid. Where PostgreSQL has a partial unique index, a generated
-- column holds the key only for the rows it covers (NULL otherwise, and NULLs never collide).
-- Every statement is safe to run again (IF NOT EXISTS): MariaDB commits DDL one statement at
-- a time, and a run that stopped halfway resumes after the last statement it recorded.

CREATE TABLE IF NOT EXISTS {schema}.codes (
    family      VARCHAR(64)  NOT NULL,
    code        INT          NOT NULL,
    name        VARCHAR(64)  NOT NULL,
    description TEXT         NOT NULL,
    PRIMARY KEY (family, code)
) ENGINE = InnoDB;

CREATE TABLE IF NOT EXISTS {schema}.namespaces (
    id         BIGINT       NOT NULL AUTO_INCREMENT PRIMARY KEY,
    name       VARCHAR(255) NOT NULL UNIQUE,
    created_at DATETIME(3)  NOT NULL,
    paused     TINYINT      NOT NULL DEFAULT 0 CHECK (paused IN (0, 1)),
    tags       LONGTEXT     NOT NULL DEFAULT '[]' CHECK (json_valid(tags)),
    metadata   LONGTEXT     NOT NULL DEFAULT '{}' CHECK (json_valid(metadata)),
    version    BIGINT       NOT NULL DEFAULT 1 CHECK (version >= 1)
) ENGINE = InnoDB;

CREATE TABLE IF NOT EXISTS {schema}.definitions (
    id                BIGINT       NOT NULL AUTO_INCREMENT PRIMARY KEY,
    namespace_id      BIGINT       NOT NULL,
    name              VARCHAR(255) NOT NULL,
    max_attempts      INT          NOT NULL CHECK (max_attempts >= 1),
    backoff           TEXT         NOT NULL,
    timeout_ms        BIGINT       CHECK (timeout_ms IS NULL OR timeout_ms > 0),
    priority          INT          NOT NULL,
    audit_level       INT          NOT NULL,
    registered_at     DATETIME(3)  NOT NULL,
    concurrency_limit INT          CHECK (concurrency_limit IS NULL OR concurrency_limit >= 1),
    meter             VARCHAR(255),
    retention_ms      BIGINT       DEFAULT 604800000
                      CHECK (retention_ms IS NULL OR retention_ms >= 60000),
    paused            TINYINT      NOT NULL DEFAULT 0 CHECK (paused IN (0, 1)),
    retired           TINYINT      NOT NULL DEFAULT 0 CHECK (retired IN (0, 1)),
    tags              LONGTEXT     NOT NULL DEFAULT '[]' CHECK (json_valid(tags)),
    tenant_scope      VARCHAR(16)
                      CHECK (tenant_scope IS NULL OR tenant_scope IN ('required', 'forbidden')),
    UNIQUE KEY definitions_name (namespace_id, name),
    UNIQUE KEY definitions_id_namespace (id, namespace_id),
    FOREIGN KEY (namespace_id) REFERENCES {schema}.namespaces (id)
) ENGINE = InnoDB;

CREATE TABLE IF NOT EXISTS {schema}.tenants (
    id             BIGINT       NOT NULL AUTO_INCREMENT PRIMARY KEY,
    tenant_key     VARCHAR(200) NOT NULL UNIQUE CHECK (char_length(tenant_key) BETWEEN 1 AND 200),
    tags           LONGTEXT     NOT NULL DEFAULT '[]' CHECK (json_valid(tags)),
    metadata       LONGTEXT     NOT NULL DEFAULT '{}' CHECK (json_valid(metadata)),
    suspended      TINYINT      NOT NULL DEFAULT 0 CHECK (suspended IN (0, 1)),
    suspended_at   DATETIME(3),
    suspended_by   TEXT,
    suspend_reason TEXT,
    version        BIGINT       NOT NULL DEFAULT 1 CHECK (version >= 1),
    created_at     DATETIME(3)  NOT NULL,
    updated_at     DATETIME(3)  NOT NULL
) ENGINE = InnoDB;

CREATE TABLE IF NOT EXISTS {schema}.jobs (
    id              BIGINT       NOT NULL AUTO_INCREMENT PRIMARY KEY,
    job_ref         VARCHAR(64)  NOT NULL UNIQUE,
    namespace_id    BIGINT       NOT NULL,
    definition_id   BIGINT       NOT NULL,
    dedup_key       VARCHAR(255),
    correlation_key VARCHAR(255),
    input_codec     INT          NOT NULL,
    input           LONGBLOB     NOT NULL,
    created_at      DATETIME(3)  NOT NULL,
    concurrency_key VARCHAR(255),
    parent_id       BIGINT,
    root_id         BIGINT,
    child_name      VARCHAR(255),
    deadline_at     DATETIME(3),
    deadline_strict TINYINT      NOT NULL DEFAULT 0,
    trace_context   TEXT,
    tenant_id       BIGINT,
    -- NULL keys never collide: the PostgreSQL partial indexes' WHERE ... IS NOT NULL.
    UNIQUE KEY jobs_dedup (namespace_id, dedup_key),
    UNIQUE KEY jobs_children (parent_id, child_name),
    KEY jobs_by_correlation (namespace_id, correlation_key),
    KEY jobs_by_tenant (tenant_id),
    FOREIGN KEY (definition_id, namespace_id) REFERENCES {schema}.definitions (id, namespace_id),
    FOREIGN KEY (tenant_id) REFERENCES {schema}.tenants (id)
) ENGINE = InnoDB;

CREATE TABLE IF NOT EXISTS {schema}.job_tags (
    job_id BIGINT       NOT NULL,
    tag    VARCHAR(255) NOT NULL,
    PRIMARY KEY (job_id, tag),
    KEY job_tags_by_tag (tag, job_id),
    FOREIGN KEY (job_id) REFERENCES {schema}.jobs (id) ON DELETE CASCADE
) ENGINE = InnoDB;

CREATE TABLE IF NOT EXISTS {schema}.workers (
    id           BIGINT       NOT NULL AUTO_INCREMENT PRIMARY KEY,
    namespace_id BIGINT       NOT NULL,
    incarnation  VARCHAR(255) NOT NULL UNIQUE,
    host         VARCHAR(255) NOT NULL,
    pid          BIGINT       NOT NULL,
    status       INT          NOT NULL,
    executors    INT          NOT NULL,
    heartbeat_ms BIGINT       NOT NULL CHECK (heartbeat_ms > 0),
    started_at   DATETIME(3)  NOT NULL,
    heartbeat_at DATETIME(3)  NOT NULL,
    stopped_at   DATETIME(3),
    tags         LONGTEXT     NOT NULL DEFAULT '[]' CHECK (json_valid(tags)),
    KEY workers_active (namespace_id, status, heartbeat_at),
    FOREIGN KEY (namespace_id) REFERENCES {schema}.namespaces (id)
) ENGINE = InnoDB;

CREATE TABLE IF NOT EXISTS {schema}.lanes (
    id           BIGINT       NOT NULL AUTO_INCREMENT PRIMARY KEY,
    namespace_id BIGINT       NOT NULL,
    name         VARCHAR(255) NOT NULL,
    last_seq     BIGINT       NOT NULL CHECK (last_seq >= 1),
    head_job_id  BIGINT,
    created_at   DATETIME(3)  NOT NULL,
    UNIQUE KEY lanes_name (namespace_id, name),
    FOREIGN KEY (namespace_id) REFERENCES {schema}.namespaces (id)
) ENGINE = InnoDB;

CREATE TABLE IF NOT EXISTS {schema}.runtime (
    job_id           BIGINT      NOT NULL PRIMARY KEY,
    namespace_id     BIGINT      NOT NULL,
    definition_id    BIGINT      NOT NULL,
    status           INT         NOT NULL,
    priority         INT         NOT NULL,
    next_run_at      DATETIME(3) NOT NULL,
    attempts         INT         NOT NULL DEFAULT 0,
    executions       INT         NOT NULL DEFAULT 0,
    lease_owner      BIGINT,
    lease_expires_at DATETIME(3),
    lease_epoch      BIGINT      NOT NULL DEFAULT 0,
    control          INT         NOT NULL DEFAULT 0,
    version          BIGINT      NOT NULL DEFAULT 0,
    updated_at       DATETIME(3) NOT NULL,
    lane_id          BIGINT,
    lane_seq         BIGINT,
    gated            TINYINT     NOT NULL DEFAULT 0,
    ticket_at        DATETIME(3),
    open_children    INT         NOT NULL DEFAULT 0,
    max_attempts     INT         CHECK (max_attempts IS NULL OR max_attempts BETWEEN 1 AND 1000),
    KEY runtime_claim (namespace_id, status, priority DESC, next_run_at, job_id),
    KEY runtime_leases (namespace_id, status, lease_expires_at),
    KEY runtime_by_owner (lease_owner),
    KEY runtime_by_status (namespace_id, status, definition_id, next_run_at),
    KEY runtime_finished (namespace_id, status, updated_at),
    KEY runtime_lane_line (lane_id, status, lane_seq),
    FOREIGN KEY (job_id) REFERENCES {schema}.jobs (id) ON DELETE CASCADE,
    FOREIGN KEY (lease_owner) REFERENCES {schema}.workers (id),
    FOREIGN KEY (lane_id) REFERENCES {schema}.lanes (id)
) ENGINE = InnoDB;

CREATE TABLE IF NOT EXISTS {schema}.events (
    id           BIGINT       NOT NULL AUTO_INCREMENT PRIMARY KEY,
    at           DATETIME(3)  NOT NULL,
    namespace_id BIGINT,
    job_id       BIGINT,
    job_ref      VARCHAR(64),
    worker_id    BIGINT,
    code         INT          NOT NULL,
    execution    INT,
    epoch        BIGINT,
    outcome      INT,
    reason       INT,
    duration_ms  BIGINT,
    message      TEXT,
    detail       LONGTEXT,
    actor        TEXT,
    KEY events_by_job (job_id, id)
) ENGINE = InnoDB;

CREATE TABLE IF NOT EXISTS {schema}.results (
    job_id     BIGINT      NOT NULL PRIMARY KEY,
    codec      INT         NOT NULL,
    body       LONGBLOB    NOT NULL,
    created_at DATETIME(3) NOT NULL,
    FOREIGN KEY (job_id) REFERENCES {schema}.jobs (id) ON DELETE CASCADE
) ENGINE = InnoDB;

CREATE TABLE IF NOT EXISTS {schema}.gates (
    id             BIGINT       NOT NULL AUTO_INCREMENT PRIMARY KEY,
    namespace_id   BIGINT       NOT NULL,
    kind           INT          NOT NULL,
    name           VARCHAR(255) NOT NULL,
    slot_limit     INT          NOT NULL CHECK (slot_limit >= 1),
    limit_override INT          CHECK (limit_override IS NULL OR limit_override >= 1),
    version        BIGINT       NOT NULL DEFAULT 0,
    updated_at     DATETIME(3)  NOT NULL,
    UNIQUE KEY gates_name (namespace_id, kind, name),
    FOREIGN KEY (namespace_id) REFERENCES {schema}.namespaces (id)
) ENGINE = InnoDB;

CREATE TABLE IF NOT EXISTS {schema}.gate_holds (
    job_id  BIGINT      NOT NULL PRIMARY KEY,
    gate_id BIGINT      NOT NULL,
    epoch   BIGINT      NOT NULL,
    since   DATETIME(3) NOT NULL,
    KEY gate_holds_by_gate (gate_id),
    FOREIGN KEY (job_id) REFERENCES {schema}.jobs (id) ON DELETE CASCADE,
    FOREIGN KEY (gate_id) REFERENCES {schema}.gates (id)
) ENGINE = InnoDB;

CREATE TABLE IF NOT EXISTS {schema}.meters (
    id                 BIGINT       NOT NULL AUTO_INCREMENT PRIMARY KEY,
    namespace_id       BIGINT       NOT NULL,
    name               VARCHAR(255) NOT NULL,
    rate               INT          NOT NULL CHECK (rate >= 1),
    period_ms          BIGINT       NOT NULL CHECK (period_ms > 0),
    rate_override      INT          CHECK (rate_override IS NULL OR rate_override >= 1),
    period_override_ms BIGINT       CHECK (period_override_ms IS NULL OR period_override_ms > 0),
    booked_until       DATETIME(3),
    admitted_until     DATETIME(3),
    version            BIGINT       NOT NULL DEFAULT 0,
    updated_at         DATETIME(3)  NOT NULL,
    UNIQUE KEY meters_name (namespace_id, name),
    CONSTRAINT meters_override_pair CHECK ((rate_override IS NULL) = (period_override_ms IS NULL)),
    FOREIGN KEY (namespace_id) REFERENCES {schema}.namespaces (id)
) ENGINE = InnoDB;

CREATE TABLE IF NOT EXISTS {schema}.latches (
    child_id  BIGINT NOT NULL PRIMARY KEY,
    parent_id BIGINT NOT NULL,
    KEY latches_by_parent (parent_id),
    FOREIGN KEY (child_id) REFERENCES {schema}.jobs (id) ON DELETE CASCADE
) ENGINE = InnoDB;

CREATE TABLE IF NOT EXISTS {schema}.signals (
    job_id  BIGINT       NOT NULL,
    name    VARCHAR(255) NOT NULL,
    codec   INT          NOT NULL,
    body    LONGBLOB     NOT NULL,
    sent_at DATETIME(3)  NOT NULL,
    PRIMARY KEY (job_id, name),
    FOREIGN KEY (job_id) REFERENCES {schema}.jobs (id) ON DELETE CASCADE
) ENGINE = InnoDB;

CREATE TABLE IF NOT EXISTS {schema}.steps (
    job_id       BIGINT       NOT NULL,
    name         VARCHAR(255) NOT NULL,
    state        INT          NOT NULL,
    at_most_once TINYINT      NOT NULL DEFAULT 0,
    execution    INT          NOT NULL,
    codec        INT,
    body         LONGBLOB,
    error        TEXT,
    started_at   DATETIME(3)  NOT NULL,
    completed_at DATETIME(3),
    PRIMARY KEY (job_id, name),
    FOREIGN KEY (job_id) REFERENCES {schema}.jobs (id) ON DELETE CASCADE
) ENGINE = InnoDB;

CREATE TABLE IF NOT EXISTS {schema}.variables (
    job_id     BIGINT       NOT NULL,
    name       VARCHAR(255) NOT NULL,
    codec      INT          NOT NULL,
    body       LONGBLOB     NOT NULL,
    updated_at DATETIME(3)  NOT NULL,
    PRIMARY KEY (job_id, name),
    FOREIGN KEY (job_id) REFERENCES {schema}.jobs (id) ON DELETE CASCADE
) ENGINE = InnoDB;

CREATE TABLE IF NOT EXISTS {schema}.waits (
    job_id      BIGINT       NOT NULL,
    kind        INT          NOT NULL,
    name        VARCHAR(255) NOT NULL,
    due_at      DATETIME(3),
    armed_at    DATETIME(3)  NOT NULL,
    execution   INT          NOT NULL,
    released_at DATETIME(3),
    parked_in   INT,
    PRIMARY KEY (job_id, kind, name),
    FOREIGN KEY (job_id) REFERENCES {schema}.jobs (id) ON DELETE CASCADE
) ENGINE = InnoDB;

CREATE TABLE IF NOT EXISTS {schema}.progress (
    job_id     BIGINT      NOT NULL PRIMARY KEY,
    done       DOUBLE      NOT NULL,
    total      DOUBLE,
    message    TEXT,
    updated_at DATETIME(3) NOT NULL,
    FOREIGN KEY (job_id) REFERENCES {schema}.jobs (id) ON DELETE CASCADE
) ENGINE = InnoDB;

CREATE TABLE IF NOT EXISTS {schema}.schedules (
    id             BIGINT       NOT NULL AUTO_INCREMENT PRIMARY KEY,
    namespace_id   BIGINT       NOT NULL,
    definition_id  BIGINT       NOT NULL,
    name           VARCHAR(255) NOT NULL,
    slot_id        BIGINT       NOT NULL,
    every_ms       BIGINT       CHECK (every_ms IS NULL OR every_ms >= 1000),
    cron           VARCHAR(255),
    zone           VARCHAR(255) NOT NULL DEFAULT 'UTC',
    misfire        INT          NOT NULL DEFAULT 0,
    declared       LONGTEXT     NOT NULL,
    overridden     TINYINT      NOT NULL DEFAULT 0,
    cursor_at      DATETIME(3)  NOT NULL,
    pending_at     DATETIME(3),
    pending_cursor DATETIME(3),
    pending_missed INT          NOT NULL DEFAULT 0,
    triggered_at   DATETIME(3),
    paused         TINYINT      NOT NULL DEFAULT 0,
    resume_at      DATETIME(3),
    version        BIGINT       NOT NULL DEFAULT 1,
    created_at     DATETIME(3)  NOT NULL,
    updated_at     DATETIME(3)  NOT NULL,
    CONSTRAINT schedules_one_kind CHECK ((every_ms IS NULL) <> (cron IS NULL)),
    CONSTRAINT schedules_pending_pair CHECK ((pending_at IS NULL) = (pending_cursor IS NULL)),
    UNIQUE KEY schedules_name (namespace_id, definition_id, name),
    KEY schedules_by_slot (slot_id),
    FOREIGN KEY (namespace_id) REFERENCES {schema}.namespaces (id),
    FOREIGN KEY (slot_id) REFERENCES {schema}.jobs (id),
    FOREIGN KEY (definition_id, namespace_id) REFERENCES {schema}.definitions (id, namespace_id)
) ENGINE = InnoDB;

CREATE TABLE IF NOT EXISTS {schema}.purged_jobs (
    job_ref       VARCHAR(64) NOT NULL PRIMARY KEY,
    job_id        BIGINT      NOT NULL,
    namespace_id  BIGINT      NOT NULL,
    definition_id BIGINT      NOT NULL,
    status        INT         NOT NULL,
    finished_at   DATETIME(3) NOT NULL,
    purged_at     DATETIME(3) NOT NULL,
    KEY purged_jobs_by_age (namespace_id, purged_at),
    FOREIGN KEY (namespace_id) REFERENCES {schema}.namespaces (id),
    FOREIGN KEY (definition_id, namespace_id) REFERENCES {schema}.definitions (id, namespace_id)
) ENGINE = InnoDB;

CREATE TABLE IF NOT EXISTS {schema}.alerts (
    id               BIGINT       NOT NULL AUTO_INCREMENT PRIMARY KEY,
    namespace_id     BIGINT       NOT NULL,
    job_id           BIGINT,
    job_ref          VARCHAR(64),
    kind             INT          NOT NULL,
    severity         INT          NOT NULL,
    title            TEXT         NOT NULL,
    detail           LONGTEXT,
    opened_at        DATETIME(3)  NOT NULL,
    resolved_at      DATETIME(3),
    definition_id    BIGINT,
    reason           INT,
    occurrences      INT          NOT NULL DEFAULT 1,
    first_seen_at    DATETIME(3),
    last_seen_at     DATETIME(3),
    acknowledged_at  DATETIME(3),
    acknowledged_by  TEXT,
    resolved_by      TEXT,
    next_reminder_at DATETIME(3),
    last_notified_at DATETIME(3),
    pending_channels LONGTEXT,
    -- 1 for an open failure incident, NULL otherwise: one open incident per key.
    open_incident    TINYINT AS (IF(kind = 2 AND resolved_at IS NULL, 1, NULL)) PERSISTENT,
    UNIQUE KEY alerts_one_open_incident (namespace_id, definition_id, reason, open_incident),
    KEY alerts_open (namespace_id, resolved_at, opened_at),
    FOREIGN KEY (namespace_id) REFERENCES {schema}.namespaces (id)
) ENGINE = InnoDB;

CREATE TABLE IF NOT EXISTS {schema}.settings (
    id            BIGINT       NOT NULL AUTO_INCREMENT PRIMARY KEY,
    scope         INT          NOT NULL CHECK (scope IN (1, 2, 3)),
    namespace_id  BIGINT,
    definition_id BIGINT,
    name          VARCHAR(255) NOT NULL,
    value         LONGTEXT     NOT NULL,
    version       BIGINT       NOT NULL DEFAULT 1 CHECK (version >= 1),
    updated_at    DATETIME(3)  NOT NULL,
    updated_by    TEXT         NOT NULL,
    reason        TEXT         NOT NULL,
    -- One setting of a name per scope and owner: the key exists only for its scope's rows.
    global_name   VARCHAR(255) AS (IF(scope = 1, name, NULL)) PERSISTENT,
    in_namespace  TINYINT      AS (IF(scope = 2, 1, NULL)) PERSISTENT,
    CONSTRAINT settings_global_scope CHECK ((scope = 1) = (namespace_id IS NULL)),
    CONSTRAINT settings_definition_scope CHECK ((scope = 3) = (definition_id IS NOT NULL)),
    UNIQUE KEY settings_global (global_name),
    UNIQUE KEY settings_namespace (name, namespace_id, in_namespace),
    UNIQUE KEY settings_definition (name, definition_id),
    FOREIGN KEY (namespace_id) REFERENCES {schema}.namespaces (id),
    FOREIGN KEY (definition_id) REFERENCES {schema}.definitions (id)
) ENGINE = InnoDB;

CREATE TABLE IF NOT EXISTS {schema}.contracts (
    definition_id BIGINT       NOT NULL PRIMARY KEY,
    fingerprint   VARCHAR(128) NOT NULL,
    shape         LONGTEXT     NOT NULL,
    recorded_at   DATETIME(3)  NOT NULL,
    recorded_by   VARCHAR(255) NOT NULL,
    FOREIGN KEY (definition_id) REFERENCES {schema}.definitions (id)
) ENGINE = InnoDB;

CREATE TABLE IF NOT EXISTS {schema}.policy_overrides (
    definition_id BIGINT      NOT NULL PRIMARY KEY,
    policy        LONGTEXT    NOT NULL CHECK (json_valid(policy)),
    version       BIGINT      NOT NULL DEFAULT 1 CHECK (version >= 1),
    updated_at    DATETIME(3) NOT NULL,
    updated_by    TEXT        NOT NULL,
    reason        TEXT        NOT NULL,
    FOREIGN KEY (definition_id) REFERENCES {schema}.definitions (id)
) ENGINE = InnoDB;

-- Names for every small-integer code stored above (docs/reference/codes.md).
INSERT INTO {schema}.codes (family, code, name, description) VALUES
    ('alert_kind', 1, 'manual', 'Opened by a handler with ctx.alert.'),
    ('alert_kind', 2, 'failure', 'A failure incident: failures of one definition for one reason class.'),
    ('alert_severity', 1, 'info', 'For the record.'),
    ('alert_severity', 2, 'warning', 'Someone should look.'),
    ('alert_severity', 3, 'critical', 'Someone should act now.'),
    ('audit_level', 0, 'off', 'Write no per-job events except lease safety events.'),
    ('audit_level', 1, 'failures', 'Write only events about failures, retries and lease safety.'),
    ('audit_level', 2, 'full', 'Write the full timeline (default).'),
    ('control', 0, 'none', 'No pending request.'),
    ('control', 1, 'cancel', 'Cancel the job when its current run ends.'),
    ('control', 2, 'parent-gave-up', 'Cancel the job when its current run ends: its parent stopped waiting.'),
    ('event', 1, 'enqueued', 'The job was written to the ledger.'),
    ('event', 10, 'execution-started', 'A handler run began (pairs with execution-finished or lease-lost).'),
    ('event', 11, 'execution-finished', 'A handler run ended; outcome and reason say how.'),
    ('event', 12, 'retry-scheduled', 'A failed run will be retried at next_run_at.'),
    ('event', 13, 'handed-back', 'A worker returned a claimed job without spending an attempt.'),
    ('event', 14, 'rearmed', 'A recurring job was set to run again at next_run_at.'),
    ('event', 15, 'admitted', 'The job passed its concurrency and rate gates and may start.'),
    ('event', 16, 'bounced', 'A gate turned the job away for now; it comes back at next_run_at.'),
    ('event', 17, 'promoted', 'The job became the head of its lane and may be claimed.'),
    ('event', 18, 'gate-changed', 'An operator changed a concurrency limit or a rate.'),
    ('event', 20, 'succeeded', 'The job reached succeeded.'),
    ('event', 21, 'failed', 'The job reached failed.'),
    ('event', 22, 'cancelled', 'The job reached cancelled.'),
    ('event', 23, 'cancel-requested', 'Cancellation was asked for while the job was running.'),
    ('event', 24, 'suspended', 'The job left its worker to wait (sleep, signal, children); message says why.'),
    ('event', 25, 'signalled', 'A signal was sent to the job; message names it.'),
    ('event', 26, 'released', 'A signal or the last child released the job''s wait: it is ready again.'),
    ('event', 27, 'rescheduled', 'The handler asked to run again at next_run_at (no attempt spent).'),
    ('event', 28, 'paused', 'The job was paused and waits for an operator to resume it.'),
    ('event', 29, 'resumed', 'An operator resumed a paused job.'),
    ('event', 30, 'lease-lost', 'A lease lapsed; recovery took the job back from its worker.'),
    ('event', 31, 'write-fenced', 'A worker write was refused because the lease epoch moved on.'),
    ('event', 32, 'purged', 'Retention removed terminal job rows past their retention; message says which.'),
    ('event', 40, 'step-begun', 'An at-most-once step recorded its intent; its body runs next, at most once.'),
    ('event', 41, 'step-completed', 'A durable step''s result was recorded; re-entry returns it.'),
    ('event', 42, 'step-interrupted', 'An at-most-once step was found begun without an outcome.'),
    ('event', 43, 'children-spawned', 'The job enqueued child jobs; message says how many.'),
    ('event', 44, 'note', 'A note the handler wrote to its timeline.'),
    ('event', 45, 'alert-opened', 'An alert was opened: by the handler (ctx.alert), or a failure incident by the settle that failed a job.'),
    ('event', 46, 'fired', 'A recurring slot fired; message names the schedules and the scheduled instant.'),
    ('event', 47, 'schedule-changed', 'An operator paused, resumed, triggered or overrode a schedule.'),
    ('event', 48, 'delivered', 'The outbox relay delivered this job from a staged row; message names it.'),
    ('event', 49, 'quarantined', 'The outbox relay could not admit a staged row and quarantined it.'),
    ('event', 50, 'worker-started', 'A worker incarnation registered.'),
    ('event', 51, 'worker-stopped', 'A worker shut down cleanly.'),
    ('event', 52, 'worker-died', 'A silent worker was declared dead by recovery.'),
    ('event', 60, 'quarantine-decided', 'An operator requeued or discarded a quarantined outbox row.'),
    ('event', 61, 'setting-changed', 'A durable setting was set or deleted; message names it and says why.'),
    ('event', 62, 'contract-changed', 'A worker registered a job whose input or result shape differs from the recorded one.'),
    ('event', 63, 'policy-overridden', 'An operator overrode (or cleared) a definition''s policy; detail: the override.'),
    ('event', 64, 'tenant-registered', 'An operator registered a tenant; detail: its key, tags and metadata.'),
    ('event', 65, 'tenant-suspended', 'An operator suspended a tenant: its new enqueues are refused; detail names it.'),
    ('event', 66, 'tenant-resumed', 'An operator resumed a suspended tenant; detail names it.'),
    ('event', 67, 'tenant-updated', 'An operator changed a tenant''s tags or metadata; detail: old and new values.'),
    ('event', 68, 'namespace-updated', 'An operator changed a namespace''s tags or metadata; detail: old and new values.'),
    ('event', 70, 'restarted', 'An operator restarted a finished job with its stored input; message names the previous outcome.'),
    ('event', 71, 'amended', 'An operator changed the priority, attempt limit or tags of a waiting job; detail has old and new values.'),
    ('event', 72, 'run-at-changed', 'An operator moved a waiting job''s next run to next_run_at.'),
    ('event', 73, 'claims-paused', 'An operator paused claims of a definition or a namespace; message names which.'),
    ('event', 74, 'claims-resumed', 'An operator resumed claims of a definition or a namespace; message names which.'),
    ('event', 75, 'retired', 'An operator retired a definition: paused for good, its queue cancelled.'),
    ('event', 80, 'alert-resolved', 'An alert was resolved: by an operator, or by sys.alerts after a later success.'),
    ('event', 81, 'alert-acknowledged', 'An operator acknowledged an alert: no more reminders.'),
    ('event', 82, 'alert-notified', 'sys.alerts notified the channels of an alert; message says which failed.'),
    ('gate_kind', 1, 'key', 'Named by the concurrency_key of an enqueue.'),
    ('gate_kind', 2, 'job', 'Named by a definition with a concurrency_limit.'),
    ('job_status', 10, 'ready', 'Waiting to be claimed; due at next_run_at (possibly in the future).'),
    ('job_status', 11, 'blocked', 'Behind the head of its lane; not a claim candidate.'),
    ('job_status', 20, 'dispatched', 'Claimed under a lease; the handler has not started.'),
    ('job_status', 21, 'executing', 'The handler is running under the lease.'),
    ('job_status', 30, 'suspended', 'Parked on a durable wait (sleep, signal, children).'),
    ('job_status', 31, 'paused', 'Held until an operator resumes it.'),
    ('job_status', 100, 'succeeded', 'Terminal: the handler returned.'),
    ('job_status', 101, 'failed', 'Terminal: attempts exhausted or a failure that cannot be retried.'),
    ('job_status', 102, 'cancelled', 'Terminal: cancelled by an operator or by the handler.'),
    ('misfire', 0, 'skip', 'A late schedule fires once, for its latest due instant; older ones are dropped.'),
    ('misfire', 1, 'catch-up', 'A late schedule fires once, for its oldest due instant, covering the rest.'),
    ('outcome', 1, 'succeeded', 'The handler returned normally.'),
    ('outcome', 2, 'failed', 'The handler raised, or its input could not be decoded.'),
    ('outcome', 3, 'timed-out', 'The run exceeded the definition''s execution timeout.'),
    ('outcome', 4, 'cancelled', 'The run stopped because the job was cancelled.'),
    ('outcome', 5, 'interrupted', 'The worker stopped the run (shutdown) and handed the job back.'),
    ('outcome', 6, 'rearmed', 'A recurring run finished and re-armed its job.'),
    ('outcome', 7, 'suspended', 'The run parked the job on a durable wait.'),
    ('outcome', 8, 'rescheduled', 'The handler asked to run again later.'),
    ('outcome', 9, 'paused', 'The handler paused the job for an operator.'),
    ('reason', 0, 'none', 'No reason recorded.'),
    ('reason', 1, 'handler-error', 'The handler raised an exception.'),
    ('reason', 2, 'timeout', 'The execution timeout elapsed.'),
    ('reason', 3, 'input-undecodable', 'The stored input no longer decodes into the handler''s input type.'),
    ('reason', 4, 'attempts-exhausted', 'The last allowed attempt failed.'),
    ('reason', 5, 'lease-expired', 'The worker stopped renewing its lease.'),
    ('reason', 6, 'shutdown', 'The worker was shutting down.'),
    ('reason', 7, 'no-handler', 'This worker has no handler for the job''s name.'),
    ('reason', 8, 'operator', 'An operator asked for it.'),
    ('reason', 9, 'worker-silent', 'The worker missed seven heartbeats.'),
    ('reason', 10, 'result-unencodable', 'The handler''s return value could not be encoded.'),
    ('reason', 11, 'clean-exit', 'The worker exited normally.'),
    ('reason', 12, 'deadline', 'The job''s strict deadline passed.'),
    ('reason', 13, 'wait-timed-out', 'A signal or children wait expired before it was released.'),
    ('reason', 14, 'step-interrupted', 'An at-most-once step began and never recorded an outcome.'),
    ('reason', 15, 'handler-decided', 'The handler ended its run on purpose (fail, cancel, pause, reschedule).'),
    ('reason', 16, 'parent-gave-up', 'The parent''s bounded wait expired before this child finished.'),
    ('reason', 17, 'misfire-skipped', 'A schedule was late and dropped its older due instants (skip).'),
    ('setting_scope', 1, 'global', 'Applies to every namespace of the ledger.'),
    ('setting_scope', 2, 'namespace', 'Applies to one namespace; wins over a global value.'),
    ('setting_scope', 3, 'definition', 'Applies to one job name in one namespace; wins over the other two.'),
    ('step_state', 1, 'begun', 'An at-most-once step''s intent is recorded; no outcome yet.'),
    ('step_state', 2, 'completed', 'The step''s result is stored; re-entry returns it without running the body.'),
    ('step_state', 3, 'interrupted', 'Begun and never completed (or its at-most-once body raised): not run again.'),
    ('wait_kind', 1, 'sleep', 'A durable sleep: due at its armed instant.'),
    ('wait_kind', 2, 'signal', 'A wait for a named signal, with an optional timeout.'),
    ('wait_kind', 3, 'children', 'A wait for the job''s unfinished children, with an optional timeout.'),
    ('worker_status', 1, 'active', 'Registered and heartbeating.'),
    ('worker_status', 2, 'stopped', 'Shut down cleanly.'),
    ('worker_status', 3, 'dead', 'Declared dead after missing seven heartbeats; never revived.')
ON DUPLICATE KEY UPDATE name = VALUES(name), description = VALUES(description);

-- The operator views (docs/reference/views.md), as on the other dialects.

-- view alerts_view
CREATE OR REPLACE VIEW {schema}.alerts_view AS
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

-- view effective_policy_view
CREATE OR REPLACE VIEW {schema}.effective_policy_view AS
SELECT
    n.name  AS namespace,
    d.name  AS job_name,
    CASE WHEN JSON_EXTRACT(o.policy, '$.max_attempts') IS NULL THEN d.max_attempts
         ELSE CAST(JSON_VALUE(o.policy, '$.max_attempts') AS SIGNED) END AS max_attempts,
    -- JSON_UNQUOTE: a string comes out as its text, as SQLite's json_extract gives it.
    CASE WHEN JSON_EXTRACT(o.policy, '$.backoff') IS NULL THEN d.backoff
         ELSE JSON_UNQUOTE(JSON_EXTRACT(o.policy, '$.backoff')) END AS backoff,
    CASE WHEN JSON_EXTRACT(o.policy, '$.timeout_ms') IS NULL THEN d.timeout_ms
         ELSE CAST(JSON_VALUE(o.policy, '$.timeout_ms') AS SIGNED) END AS timeout_ms,
    a.name  AS audit,
    CASE WHEN JSON_EXTRACT(o.policy, '$.retention_ms') IS NULL THEN d.retention_ms
         ELSE CAST(JSON_VALUE(o.policy, '$.retention_ms') AS SIGNED) END AS retention_ms,
    CASE JSON_TYPE(JSON_EXTRACT(o.policy, '$.alerts')) WHEN 'NULL' THEN NULL
         ELSE JSON_UNQUOTE(JSON_EXTRACT(o.policy, '$.alerts')) END AS alerts,
    CASE WHEN JSON_EXTRACT(o.policy, '$.priority') IS NULL THEN d.priority
         ELSE CAST(JSON_VALUE(o.policy, '$.priority') AS SIGNED) END AS priority,
    o.policy AS overrides,
    COALESCE(o.version, 0) AS version,
    o.updated_at,
    o.updated_by,
    o.reason,
    d.tags,
    d.tenant_scope,
    d.id    AS definition_id,
    a.code  AS audit_code
FROM {schema}.definitions d
JOIN {schema}.namespaces n ON n.id = d.namespace_id
LEFT JOIN {schema}.policy_overrides o ON o.definition_id = d.id
JOIN {schema}.codes a ON a.family = 'audit_level'
    AND a.code = CASE WHEN JSON_EXTRACT(o.policy, '$.audit') IS NULL THEN d.audit_level
                      ELSE CAST(JSON_VALUE(o.policy, '$.audit') AS SIGNED) END;

-- view events_view
CREATE OR REPLACE VIEW {schema}.events_view AS
SELECT
    e.id          AS event_id,
    e.at,
    e.job_ref,
    d.name        AS job_name,
    n.name        AS namespace,
    c.name        AS event,
    e.execution,
    e.epoch,
    o.name        AS outcome,
    r.name        AS reason,
    e.duration_ms,
    e.message,
    e.detail,
    e.actor,
    w.incarnation AS worker,
    tn.tenant_key AS tenant,
    e.job_id
FROM {schema}.events e
LEFT JOIN {schema}.jobs j        ON j.id = e.job_id
LEFT JOIN {schema}.definitions d ON d.id = j.definition_id
LEFT JOIN {schema}.namespaces n  ON n.id = e.namespace_id
LEFT JOIN {schema}.workers w     ON w.id = e.worker_id
LEFT JOIN {schema}.tenants tn    ON tn.id = j.tenant_id
JOIN {schema}.codes c            ON c.family = 'event' AND c.code = e.code
LEFT JOIN {schema}.codes o       ON o.family = 'outcome' AND o.code = e.outcome
LEFT JOIN {schema}.codes r       ON r.family = 'reason' AND r.code = e.reason;

-- view gates_view
CREATE OR REPLACE VIEW {schema}.gates_view AS
SELECT
    g.name,
    n.name                                AS namespace,
    k.name                                AS kind,
    COALESCE(g.limit_override, g.slot_limit) AS limit_in_force,
    g.slot_limit                          AS declared_limit,
    g.limit_override,
    (SELECT count(*) FROM {schema}.gate_holds h WHERE h.gate_id = g.id) AS held,
    -- The holders' refs as a sorted JSON array (NULL when nobody holds a slot).
    (SELECT JSON_ARRAYAGG(j.job_ref ORDER BY j.job_ref)
       FROM {schema}.gate_holds h JOIN {schema}.jobs j ON j.id = h.job_id
      WHERE h.gate_id = g.id)              AS holders,
    g.version,
    g.updated_at,
    g.id                                  AS gate_id
FROM {schema}.gates g
JOIN {schema}.namespaces n ON n.id = g.namespace_id
JOIN {schema}.codes k      ON k.family = 'gate_kind' AND k.code = g.kind;

-- view jobs_view
CREATE OR REPLACE VIEW {schema}.jobs_view AS
SELECT
    j.job_ref,
    n.name                AS namespace,
    d.name                AS job_name,
    s.name                AS status,
    r.status              AS status_code,
    r.priority,
    r.attempts,
    -- The job's own limit (an operator's amend), else the definition's limit in force.
    COALESCE(r.max_attempts, ep.max_attempts) AS max_attempts,
    r.executions,
    j.created_at,
    r.next_run_at,
    r.updated_at,
    CASE WHEN r.status >= 100 THEN r.updated_at END AS finished_at,
    w.incarnation         AS lease_worker,
    w.host                AS lease_host,
    r.lease_expires_at,
    r.lease_epoch,
    j.dedup_key,
    j.correlation_key,
    l.name                AS lane,
    r.lane_seq,
    j.concurrency_key,
    -- A sorted JSON array (NULL without tags), so a tag containing a comma stays unambiguous.
    (SELECT JSON_ARRAYAGG(t.tag ORDER BY t.tag)
       FROM {schema}.job_tags t WHERE t.job_id = j.id) AS tags,
    le.message            AS last_error,
    lr.name               AS last_error_reason,
    le.at                 AS last_error_at,
    pj.job_ref            AS parent_ref,
    rj.job_ref            AS root_ref,
    j.child_name,
    r.open_children,
    j.deadline_at,
    CASE WHEN j.deadline_at IS NULL THEN NULL
         WHEN j.deadline_strict THEN 'strict' ELSE 'advisory' END AS deadline_policy,
    p.done                AS progress_done,
    p.total               AS progress_total,
    p.message             AS progress_message,
    p.updated_at          AS progress_at,
    -- What a suspended job waits for, as kind:name (sleep:nap, signal:approved, children:all).
    (SELECT wk.name || ':' || wt.name
       FROM {schema}.waits wt
       JOIN {schema}.codes wk ON wk.family = 'wait_kind' AND wk.code = wt.kind
      WHERE wt.job_id = j.id AND wt.parked_in IS NOT NULL AND r.status = 30
      ORDER BY wt.parked_in DESC LIMIT 1) AS waiting_for,
    tn.tenant_key         AS tenant,
    j.id                  AS job_id
FROM {schema}.jobs j
JOIN {schema}.runtime r      ON r.job_id = j.id
JOIN {schema}.namespaces n   ON n.id = j.namespace_id
JOIN {schema}.definitions d  ON d.id = j.definition_id
JOIN {schema}.effective_policy_view ep ON ep.definition_id = d.id
JOIN {schema}.codes s        ON s.family = 'job_status' AND s.code = r.status
LEFT JOIN {schema}.workers w ON w.id = r.lease_owner
LEFT JOIN {schema}.lanes l   ON l.id = r.lane_id
LEFT JOIN {schema}.jobs pj   ON pj.id = j.parent_id
LEFT JOIN {schema}.jobs rj   ON rj.id = j.root_id
LEFT JOIN {schema}.progress p ON p.job_id = j.id
LEFT JOIN {schema}.tenants tn ON tn.id = j.tenant_id
LEFT JOIN {schema}.events le ON le.id = (
    SELECT max(e.id) FROM {schema}.events e
    WHERE e.job_id = j.id
      AND (e.code IN (21, 30) OR (e.code = 11 AND e.outcome IN (2, 3))))
LEFT JOIN {schema}.codes lr  ON lr.family = 'reason' AND lr.code = le.reason;

-- view lanes_view
CREATE OR REPLACE VIEW {schema}.lanes_view AS
SELECT
    l.name          AS lane,
    n.name          AS namespace,
    h.job_ref       AS head_job_ref,
    hs.name         AS head_status,
    (SELECT count(*) FROM {schema}.runtime r
      WHERE r.lane_id = l.id AND r.status < 100) AS depth,
    l.last_seq,
    l.created_at,
    l.id            AS lane_id
FROM {schema}.lanes l
JOIN {schema}.namespaces n    ON n.id = l.namespace_id
LEFT JOIN {schema}.jobs h     ON h.id = l.head_job_id
LEFT JOIN {schema}.runtime hr ON hr.job_id = l.head_job_id
LEFT JOIN {schema}.codes hs   ON hs.family = 'job_status' AND hs.code = hr.status;

-- view meters_view
CREATE OR REPLACE VIEW {schema}.meters_view AS
SELECT
    m.name,
    n.name                 AS namespace,
    m.rate_now             AS rate,
    m.period_now           AS period_ms,
    m.rate                 AS declared_rate,
    m.period_ms            AS declared_period_ms,
    m.rate_override,
    m.period_override_ms,
    -- SQLite's integer division, written as DIV.
    TIMESTAMPADD(MICROSECOND,
                 -(GREATEST(1, m.rate_now * 1000 DIV m.period_now) - 1)
                 * ((m.period_now + m.rate_now - 1) DIV m.rate_now) * 1000,
                 GREATEST(m.booked_until, COALESCE(m.admitted_until, m.booked_until)))
                           AS next_free_at,
    m.booked_until,
    m.admitted_until,
    m.version,
    m.updated_at,
    m.id                   AS meter_id
FROM (SELECT x.*, COALESCE(x.rate_override, x.rate) AS rate_now,
             COALESCE(x.period_override_ms, x.period_ms) AS period_now
      FROM {schema}.meters x) m
JOIN {schema}.namespaces n ON n.id = m.namespace_id;

-- view namespaces_view
CREATE OR REPLACE VIEW {schema}.namespaces_view AS
SELECT
    n.name        AS namespace,
    n.paused      AS suspended,
    n.tags,
    n.metadata,
    n.version,
    n.created_at,
    (SELECT count(*) FROM {schema}.definitions d WHERE d.namespace_id = n.id) AS definitions,
    (SELECT count(*) FROM {schema}.workers w WHERE w.namespace_id = n.id AND w.status = 1)
                  AS workers_running,
    (SELECT count(*) FROM {schema}.runtime r WHERE r.namespace_id = n.id AND r.status < 100)
                  AS open_jobs,
    n.id          AS namespace_id
FROM {schema}.namespaces n;

-- view schedules_view
CREATE OR REPLACE VIEW {schema}.schedules_view AS
SELECT
    n.name          AS namespace,
    d.name          AS job_name,
    s.name          AS schedule,
    CASE WHEN s.cron IS NULL THEN 'every' ELSE 'cron' END AS kind,
    s.every_ms,
    s.cron,
    s.zone,
    m.name          AS misfire,
    s.overridden,
    s.cursor_at     AS last_fired_at,
    s.pending_at    AS firing_at,
    s.triggered_at,
    s.paused,
    s.resume_at,
    r.next_run_at   AS slot_wakes_at,
    j.job_ref       AS slot_ref,
    s.version,
    s.updated_at
FROM {schema}.schedules s
JOIN {schema}.namespaces n  ON n.id = s.namespace_id
JOIN {schema}.definitions d ON d.id = s.definition_id
JOIN {schema}.jobs j        ON j.id = s.slot_id
LEFT JOIN {schema}.runtime r ON r.job_id = s.slot_id
JOIN {schema}.codes m       ON m.family = 'misfire' AND m.code = s.misfire;

-- view settings_view
CREATE OR REPLACE VIEW {schema}.settings_view AS
SELECT
    st.name,
    c.name        AS scope,
    n.name        AS namespace,
    d.name        AS job_name,
    st.value,
    st.version,
    st.updated_at,
    st.updated_by,
    st.reason
FROM {schema}.settings st
JOIN {schema}.codes c            ON c.family = 'setting_scope' AND c.code = st.scope
LEFT JOIN {schema}.namespaces n  ON n.id = st.namespace_id
LEFT JOIN {schema}.definitions d ON d.id = st.definition_id;

-- view steps_view
CREATE OR REPLACE VIEW {schema}.steps_view AS
SELECT
    j.job_ref,
    st.name          AS step,
    c.name           AS state,
    st.at_most_once,
    st.execution,
    st.started_at,
    st.completed_at,
    st.error,
    st.job_id
FROM {schema}.steps st
JOIN {schema}.jobs j  ON j.id = st.job_id
JOIN {schema}.codes c ON c.family = 'step_state' AND c.code = st.state;

-- view tenants_view
CREATE OR REPLACE VIEW {schema}.tenants_view AS
SELECT
    t.tenant_key  AS tenant,
    t.suspended,
    t.suspended_at,
    t.suspended_by,
    t.suspend_reason,
    t.tags,
    t.metadata,
    t.version,
    t.created_at,
    t.updated_at,
    (SELECT count(*) FROM {schema}.jobs j JOIN {schema}.runtime r ON r.job_id = j.id
      WHERE j.tenant_id = t.id AND r.status < 100) AS open_jobs,
    t.id          AS tenant_id
FROM {schema}.tenants t;

-- view waits_view
CREATE OR REPLACE VIEW {schema}.waits_view AS
SELECT
    j.job_ref,
    k.name           AS kind,
    wt.name,
    wt.due_at,
    wt.armed_at,
    wt.execution,
    wt.released_at,
    EXISTS (SELECT 1 FROM {schema}.signals sg
             WHERE wt.kind = 2 AND sg.job_id = wt.job_id AND sg.name = wt.name) AS signalled,
    wt.job_id
FROM {schema}.waits wt
JOIN {schema}.jobs j  ON j.id = wt.job_id
JOIN {schema}.codes k ON k.family = 'wait_kind' AND k.code = wt.kind;

-- view workers_view
CREATE OR REPLACE VIEW {schema}.workers_view AS
SELECT
    w.incarnation,
    n.name                     AS namespace,
    w.host,
    w.pid,
    s.name                     AS status,
    w.status                   AS status_code,
    w.executors,
    w.heartbeat_ms / 1000.0    AS heartbeat_seconds,
    w.heartbeat_ms * 4 / 1000.0 AS lease_seconds,
    w.heartbeat_ms * 7 / 1000.0 AS dead_after_seconds,
    w.started_at,
    w.heartbeat_at,
    w.stopped_at,
    (SELECT count(*) FROM {schema}.runtime r WHERE r.lease_owner = w.id AND r.status IN (20, 21))
                               AS jobs_held,
    w.tags,
    w.id                       AS worker_id
FROM {schema}.workers w
JOIN {schema}.namespaces n ON n.id = w.namespace_id
JOIN {schema}.codes s      ON s.family = 'worker_status' AND s.code = w.status;
