-- acta ledger, PostgreSQL, migration 16: the single enqueue as a function, so its plan is kept.
--
-- A single enqueue (the call a web request makes) used to send the whole fused statement
-- every time: PostgreSQL parsed, analysed and planned its five inserts on each call, which
-- took about twice as long as running them. acta sends no prepared statements (a
-- transaction-mode pooler can strand them), but a PL/pgSQL function keeps the plans of its
-- statements in each backend on its own, invisibly to poolers: the client now sends a short
-- SELECT of this function and the server reuses the plans it made the first time.
--
-- The statement is the one `fused_enqueue_one` ran, unchanged: the same rows, the same rules
-- (a retired definition writes nothing and says so, a taken key writes nothing and answers a
-- NULL job id, a child without a tenant takes its parent's, NOTIFY when the job is due now).
-- Parameters are prefixed p_ so that none can be mistaken for a column of the same name.
CREATE FUNCTION {schema}.enqueue_one(
    p_now timestamptz,
    p_namespace text,
    p_channel text,
    p_namespace_id bigint,
    p_definition_id bigint,
    p_job_ref text,
    p_dedup_key text,
    p_correlation_key text,
    p_concurrency_key text,
    p_codec smallint,
    p_input bytea,
    p_priority smallint,
    p_run_at timestamptz,
    p_delay bigint,
    p_audit boolean,
    p_deadline_at timestamptz,
    p_deadline_strict boolean,
    p_parent_id bigint,
    p_root_id bigint,
    p_child_name text,
    p_trace_context text,
    p_tenant_id bigint,
    p_tags text[],
    OUT o_job_id bigint,
    OUT o_rang bigint,
    OUT o_retired boolean
)
LANGUAGE plpgsql
AS $body$
BEGIN
    WITH retired AS (
        SELECT d.id FROM {schema}.definitions d WHERE d.id = p_definition_id AND d.retired
    ),
    inserted AS (
        INSERT INTO {schema}.jobs
            (job_ref, namespace_id, definition_id, dedup_key, correlation_key, concurrency_key,
             input_codec, input, created_at, deadline_at, deadline_strict, parent_id, root_id,
             child_name, trace_context, tenant_id)
        SELECT p_job_ref, p_namespace_id, p_definition_id, p_dedup_key, p_correlation_key,
               p_concurrency_key, p_codec, p_input, COALESCE(p_now, now()), p_deadline_at,
               COALESCE(p_deadline_strict, false), p_parent_id, p_root_id, p_child_name,
               p_trace_context,
               COALESCE(p_tenant_id,
                        (SELECT pj.tenant_id FROM {schema}.jobs pj WHERE pj.id = p_parent_id))
        WHERE NOT EXISTS (SELECT 1 FROM retired)
        ON CONFLICT DO NOTHING
        RETURNING id, job_ref
    ),
    made AS (
        INSERT INTO {schema}.runtime
            (job_id, namespace_id, definition_id, status, priority, next_run_at, updated_at,
             gated)
        SELECT n.id, p_namespace_id, p_definition_id, 10,
               -- an operator's priority override of the definition beats the asked-for one
               COALESCE((SELECT (o.policy ->> 'priority')::smallint
                         FROM {schema}.policy_overrides o
                         WHERE o.definition_id = p_definition_id), p_priority),
               COALESCE(p_run_at,
                        COALESCE(p_now, now()) + p_delay * interval '1 millisecond'),
               COALESCE(p_now, now()), p_concurrency_key IS NOT NULL
        FROM inserted n
    ),
    tagged AS (
        INSERT INTO {schema}.job_tags (job_id, tag)
        SELECT n.id, t.tag FROM inserted n, unnest(p_tags) AS t(tag)
    ),
    logged AS (
        INSERT INTO {schema}.events (at, namespace_id, job_id, job_ref, code)
        SELECT COALESCE(p_now, now()), p_namespace_id, n.id, n.job_ref, 1
        FROM inserted n
        WHERE p_audit
    ),
    rang AS (
        SELECT pg_notify(p_channel, p_namespace)
        WHERE p_channel IS NOT NULL AND p_run_at IS NULL AND p_delay = 0
          AND EXISTS (SELECT 1 FROM inserted)
    )
    SELECT (SELECT n.id FROM inserted n), (SELECT count(*) FROM rang),
           EXISTS (SELECT 1 FROM retired)
    INTO o_job_id, o_rang, o_retired;
END
$body$;
