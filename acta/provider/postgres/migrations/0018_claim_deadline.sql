-- acta ledger, PostgreSQL, migration 18: the claim no longer starts a job with a strict
-- deadline.
--
-- A job claimed after its strict deadline must be failed without running, and a run that never
-- started must leave no trace of one: no execution-started or execution-finished event, no
-- execution counted, no attempt spent. The claim used to start such a job in its own statement
-- (counting the execution and writing execution-started) before the worker could look at the
-- deadline. Now claim_batch only leases a job with a strict deadline; the worker's run checks
-- the deadline first and either fails the job from dispatched or starts it as it starts any
-- job an executor takes (start_batch). Only jobs with a strict deadline pay that second round
-- trip. The portable claim (acta/ledger/claim.py) makes the same choice, so SQLite needs no
-- migration. The body is migration 17's but for the ranked step.

CREATE OR REPLACE FUNCTION {schema}.claim_batch(
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
    -- A job with a strict deadline is only leased: its run checks the deadline before it
    -- starts, so a job claimed too late is failed with no execution recorded.
    ranked AS (
        SELECT c.job_id,
               s.startable
               AND row_number() OVER (
                       PARTITION BY s.startable
                       ORDER BY c.priority DESC, c.next_run_at, c.job_id)
                   <= p_start AS started
        FROM candidates c
        CROSS JOIN LATERAL (
            SELECT c.definition_id = ANY (p_startable) AND NOT c.gated
                   AND NOT EXISTS (SELECT 1 FROM {schema}.jobs j
                                   WHERE j.id = c.job_id AND j.deadline_strict
                                     AND j.deadline_at IS NOT NULL) AS startable
        ) s
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
