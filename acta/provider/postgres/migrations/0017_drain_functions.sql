-- acta ledger, PostgreSQL, migration 17: the drain's three statements as functions, so their
-- plans are kept.
--
-- A worker drains with three statements: claim (lease a batch and start what it can at once),
-- start (the rest of a batch, when an executor takes it) and settle (a batch of outcomes with
-- their events). Sent as text each time, PostgreSQL parsed and planned them on every call, and
-- that cost more server time than running them: planning the claim alone took about a
-- millisecond. As with enqueue_one (migration 16), a PL/pgSQL function keeps the plans of its
-- statements in each backend without any state a pooler could strand; the worker now sends a
-- short SELECT of the function.
--
-- Each body is the statement the worker used to send, with its parameters prefixed p_ and the
-- same rows, guards and events; the comments on them stay in queries/fused.sql. The claim is
-- split in two statements (pick the batch, then update it by key), because PostgreSQL may keep
-- one plan per connection for a function's statement, and that plan must hold for any batch
-- at any depth (docs/internals/write-budget.md has the measurements). The result
-- columns are named like the columns they come from, so `#variable_conflict use_column` makes
-- every bare name in the body mean the column.

-- claim: fused_claim
CREATE FUNCTION {schema}.claim_batch(
    p_namespace_id bigint,
    p_now timestamptz,
    p_skip bigint[],
    p_worker_id bigint,
    p_limit bigint,
    p_startable bigint[],
    p_start bigint,
    p_lease_ms bigint,
    p_quiet_definitions bigint[]
)
RETURNS TABLE (
    job_id bigint, job_ref text, name text, definition_id bigint, namespace_id bigint,
    lease_epoch bigint, attempts integer, executions bigint, execution bigint, control smallint,
    started boolean, priority smallint, input_codec smallint, input bytea, correlation_key text,
    created_at timestamptz, lane_id bigint, concurrency_key text, ticket_at timestamptz,
    parent_id bigint, root_id bigint, deadline_at timestamptz, deadline_strict boolean,
    max_attempts smallint, parent_ref text, root_ref text, trace_context text
)
LANGUAGE plpgsql
AS $body$
#variable_conflict use_column
DECLARE
    v_ids bigint[];
    v_started boolean[];
BEGIN
    -- Two statements, so that the plan PostgreSQL keeps for each (a function's statements may
    -- be planned once per connection, for any values) holds at any depth. The first picks and
    -- locks the batch walking runtime_claim in claim order; the second updates the picked rows
    -- by primary key, from arrays whose length a kept plan does not need to know.
    WITH candidates AS MATERIALIZED (
        SELECT r.job_id, r.priority, r.next_run_at, r.definition_id, r.gated
        FROM {schema}.runtime r
        WHERE r.namespace_id = p_namespace_id
          AND r.status IN (10, 30)
          AND r.next_run_at <= COALESCE(p_now, now())
          -- NOT IN over the unnested array, not <> ALL (p_skip): for an array it does not know,
          -- PostgreSQL estimates <> ALL from the column's statistics, and when one definition
          -- holds the backlog that says "no row matches", which makes a kept plan sort every
          -- due job instead of walking the index (docs/internals/write-budget.md).
          AND r.definition_id NOT IN (SELECT s.id FROM unnest(p_skip) AS s(id))
          -- Paused definitions and namespaces are not claimed (see claim in claim.sql).
          AND r.definition_id NOT IN (SELECT d.id FROM {schema}.definitions d
                                      WHERE d.namespace_id = p_namespace_id AND d.paused)
          -- A paused namespace still runs acta's own sys.* jobs: recovery keeps leases honest.
          AND (NOT EXISTS (SELECT 1 FROM {schema}.namespaces n
                           WHERE n.id = p_namespace_id AND n.paused)
               OR r.definition_id IN (SELECT d.id FROM {schema}.definitions d
                                      WHERE d.namespace_id = p_namespace_id
                                        AND d.name LIKE 'sys.%'))
          AND EXISTS (SELECT 1 FROM {schema}.workers w
                      WHERE w.id = p_worker_id AND w.status = 1)
        ORDER BY r.priority DESC, r.next_run_at, r.job_id
        LIMIT p_limit
        FOR UPDATE OF r SKIP LOCKED
    ),
    -- Window functions cannot share a query level with FOR UPDATE, so the rank is taken here.
    ranked AS (
        SELECT c.job_id,
               c.definition_id = ANY (p_startable) AND NOT c.gated
               AND row_number() OVER (
                       PARTITION BY c.definition_id = ANY (p_startable) AND NOT c.gated
                       ORDER BY c.priority DESC, c.next_run_at, c.job_id)
                   <= p_start AS started
        FROM candidates c
    )
    SELECT array_agg(k.job_id), array_agg(k.started) INTO v_ids, v_started FROM ranked k;
    IF v_ids IS NULL THEN
        RETURN;  -- nothing due: no rows, no events
    END IF;

    RETURN QUERY
    WITH ranked AS (
        SELECT * FROM unnest(v_ids, v_started) AS k(job_id, started)
    ),
    claimed AS (
        UPDATE {schema}.runtime r
        SET status           = CASE WHEN c.started THEN 21 ELSE 20 END,
            executions       = r.executions + CASE WHEN c.started THEN 1 ELSE 0 END,
            lease_owner      = p_worker_id,
            lease_epoch      = r.lease_epoch + 1,
            lease_expires_at = COALESCE(p_now, now())
                               + p_lease_ms * interval '1 millisecond',
            version          = r.version + 1,
            updated_at       = COALESCE(p_now, now())
        FROM ranked c
        WHERE r.job_id = c.job_id
          AND r.status IN (10, 30)
        RETURNING r.job_id, r.lease_epoch, r.attempts, r.executions, r.priority, r.next_run_at,
                  r.control, r.definition_id, r.namespace_id, c.started, r.lane_id, r.ticket_at,
                  r.max_attempts
    ),
    logged AS (
        INSERT INTO {schema}.events
            (at, namespace_id, job_id, job_ref, worker_id, code, execution, epoch)
        SELECT COALESCE(p_now, now()), c.namespace_id, c.job_id, j.job_ref, p_worker_id,
               10, c.executions, c.lease_epoch
        FROM claimed c
        JOIN {schema}.jobs j ON j.id = c.job_id
        WHERE c.started
          AND c.definition_id <> ALL (p_quiet_definitions)
    )
    SELECT c.job_id, j.job_ref, d.name, j.definition_id, j.namespace_id, c.lease_epoch,
           c.attempts,
           c.executions - CASE WHEN c.started THEN 1 ELSE 0 END AS executions,
           c.executions AS execution, c.control, c.started,
           c.priority, j.input_codec, j.input, j.correlation_key, j.created_at, c.lane_id,
           j.concurrency_key, c.ticket_at,
           j.parent_id, j.root_id, j.deadline_at, j.deadline_strict, c.max_attempts,
           pj.job_ref AS parent_ref, rj.job_ref AS root_ref, j.trace_context
    FROM claimed c
    JOIN {schema}.jobs j        ON j.id = c.job_id
    JOIN {schema}.definitions d ON d.id = j.definition_id
    LEFT JOIN {schema}.jobs pj  ON pj.id = j.parent_id
    LEFT JOIN {schema}.jobs rj  ON rj.id = j.root_id
    ORDER BY c.priority DESC, c.next_run_at, c.job_id;
END
$body$;

-- start: fused_start
CREATE FUNCTION {schema}.start_batch(
    p_job_ids bigint[],
    p_epochs bigint[],
    p_audit boolean[],
    p_now timestamptz,
    p_worker_id bigint
)
RETURNS TABLE (
    job_id bigint, executions bigint, control smallint
)
LANGUAGE plpgsql
AS $body$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    WITH plan AS (
        SELECT * FROM unnest(p_job_ids, p_epochs, p_audit)
            AS p(job_id, epoch, audit)
    ),
    started AS (
        UPDATE {schema}.runtime r
        SET status     = 21,
            executions = r.executions + 1,
            version    = r.version + 1,
            updated_at = COALESCE(p_now, now())
        FROM plan p
        WHERE r.job_id = p.job_id
          AND r.lease_epoch = p.epoch
          AND r.status = 20
          AND r.lease_owner = p_worker_id
        RETURNING r.job_id, r.namespace_id, r.executions, r.control, r.lease_epoch
    ),
    logged AS (
        INSERT INTO {schema}.events
            (at, namespace_id, job_id, job_ref, worker_id, code, execution, epoch)
        SELECT COALESCE(p_now, now()), s.namespace_id, s.job_id, j.job_ref, p_worker_id,
               10, s.executions, s.lease_epoch
        FROM started s
        JOIN plan p ON p.job_id = s.job_id
        JOIN {schema}.jobs j ON j.id = s.job_id
        WHERE p.audit
    )
    SELECT job_id, executions, control FROM started;
END
$body$;

-- settle: fused_settle
CREATE FUNCTION {schema}.settle_batch(
    p_job_ids bigint[],
    p_epochs bigint[],
    p_expects smallint[],
    p_owners bigint[],
    p_statuses smallint[],
    p_delays bigint[],
    p_charges int[],
    p_now timestamptz,
    p_result_job_ids bigint[],
    p_result_codecs smallint[],
    p_result_bodies bytea[],
    p_ev_namespace_ids bigint[],
    p_ev_job_ids bigint[],
    p_ev_job_refs text[],
    p_ev_worker_ids bigint[],
    p_ev_codes smallint[],
    p_ev_executions int[],
    p_ev_epochs bigint[],
    p_ev_outcomes smallint[],
    p_ev_reasons smallint[],
    p_ev_durations bigint[],
    p_ev_messages text[],
    p_ev_details text[]
)
RETURNS TABLE (
    job_id bigint, lane_id bigint, status smallint
)
LANGUAGE plpgsql
AS $body$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    WITH plan AS (
        SELECT * FROM unnest(p_job_ids, p_epochs, p_expects,
                             p_owners, p_statuses, p_delays,
                             p_charges)
            AS p(job_id, epoch, expect, owner, status, delay_ms, charge)
    ),
    settled AS (
        UPDATE {schema}.runtime r
        SET status           = p.status,
            next_run_at      = CASE WHEN p.delay_ms IS NULL THEN r.next_run_at
                                    ELSE COALESCE(p_now, now())
                                         + p.delay_ms * interval '1 millisecond' END,
            attempts         = r.attempts + p.charge,
            lease_owner      = NULL,
            lease_expires_at = NULL,
            version          = r.version + 1,
            updated_at       = COALESCE(p_now, now())
        FROM plan p
        WHERE r.job_id = p.job_id
          AND r.lease_epoch = p.epoch
          AND r.status = p.expect
          AND r.lease_owner = p.owner
          AND r.control = 0
        RETURNING r.job_id, r.lane_id, r.status
    ),
    -- Whatever ends a lease frees the concurrency slot it held (no rows when gates are unused).
    released AS (
        DELETE FROM {schema}.gate_holds h WHERE h.job_id IN (SELECT job_id FROM settled)
    ),
    stored AS (
        INSERT INTO {schema}.results (job_id, codec, body, created_at)
        SELECT x.job_id, x.codec, x.body, COALESCE(p_now, now())
        FROM unnest(p_result_job_ids, p_result_codecs, p_result_bodies)
            AS x(job_id, codec, body)
        WHERE x.job_id IN (SELECT job_id FROM settled)
        ON CONFLICT (job_id) DO UPDATE SET
            codec = excluded.codec, body = excluded.body, created_at = excluded.created_at
    ),
    logged AS (
        INSERT INTO {schema}.events
            (at, namespace_id, job_id, job_ref, worker_id, code, execution, epoch, outcome, reason,
             duration_ms, message, detail)
        SELECT COALESCE(p_now, now()), e.namespace_id, e.job_id, e.job_ref, e.worker_id,
               e.code, e.execution, e.epoch, e.outcome, e.reason, e.duration_ms, e.message,
               e.detail
        FROM unnest(p_ev_namespace_ids, p_ev_job_ids, p_ev_job_refs,
                    p_ev_worker_ids, p_ev_codes, p_ev_executions,
                    p_ev_epochs, p_ev_outcomes, p_ev_reasons,
                    p_ev_durations, p_ev_messages, p_ev_details)
            WITH ORDINALITY AS e(namespace_id, job_id, job_ref, worker_id, code, execution, epoch,
                                 outcome, reason, duration_ms, message, detail, ord)
        WHERE e.job_id IN (SELECT job_id FROM settled)
        ORDER BY e.ord
    )
    SELECT job_id, lane_id, status FROM settled;
END
$body$;
