-- Fused statements: the hot verbs as one round trip each, for server dialects only.
--
-- Each one does, for a whole batch, what the portable statements do row by row: the guarded
-- update and the events that explain it, in one data-modifying CTE. Rows whose guard fails are
-- simply absent from the result; the verb then takes the portable path for those few (which
-- records a fenced write or applies a pending cancellation), in the same transaction.
-- Batches arrive as parallel arrays (unnest) so psycopg sends them as typed parameters.

-- name: fused_claim
-- Claim a batch in one call, and start at once the first :start of it (in claim order)
-- whose definition is in :startable (those this worker has a handler for and that declare no
-- gate) and that carry no gate of their own (gated: a concurrency key) and no strict deadline.
-- A gated job stays dispatched: admission decides whether it starts. A job with a strict
-- deadline stays dispatched too: its run checks the deadline before starting it (migration 18).
-- See claim for why MATERIALIZED and SKIP LOCKED. A started row goes straight to executing:
-- its execution is counted and its execution-started event written (except for definitions
-- listed in :quiet_definitions, whose audit level leaves it out), so a woken worker with free
-- executors reaches its handlers after one round trip. The rest stay dispatched, waiting for
-- an executor. In the result, executions is the count before this claim and execution the
-- number of the run that started (meaningful where started is true).
-- The statements are in the function claim_batch (migration 0017), whose plans the server
-- keeps per connection: there the claim is two statements (pick the batch, then update it by
-- key), so that a plan kept for any values stays good however deep the backlog.
SELECT * FROM {schema}.claim_batch(
    p_namespace_id => :namespace_id::bigint,
    p_now => :now::timestamptz,
    p_skip => :skip::bigint[],
    p_worker_id => :worker_id::bigint,
    p_limit => :limit::bigint,
    p_startable => :startable::bigint[],
    p_start => :start::bigint,
    p_lease_ms => :lease_ms::bigint,
    p_quiet_definitions => :quiet_definitions::bigint[]
);

-- name: fused_start
-- dispatched -> executing for a batch of this worker's runs, with their execution-started
-- events (for the runs whose definition audits them). Fenced runs are absent from the result.
-- The statement itself is the function start_batch (migration 0017), whose plans the server keeps.
SELECT * FROM {schema}.start_batch(
    p_job_ids => :job_ids::bigint[],
    p_epochs => :epochs::bigint[],
    p_audit => :audit::boolean[],
    p_now => :now::timestamptz,
    p_worker_id => :worker_id::bigint
);

-- name: fused_settle
-- The common settle for a batch: guard, new state, result and events in one statement. The
-- guard also requires no pending cancel request (control = 0): those, and fenced runs, are
-- left out of the result and go through transition_guard/transition instead. Rows that
-- reach a terminal status in a lane come back with it: the verb promotes the next member.
-- The statement itself is the function settle_batch (migration 0017), whose plans the server keeps.
SELECT * FROM {schema}.settle_batch(
    p_job_ids => :job_ids::bigint[],
    p_epochs => :epochs::bigint[],
    p_expects => :expects::smallint[],
    p_owners => :owners::bigint[],
    p_statuses => :statuses::smallint[],
    p_delays => :delays::bigint[],
    p_charges => :charges::int[],
    p_now => :now::timestamptz,
    p_result_job_ids => :result_job_ids::bigint[],
    p_result_codecs => :result_codecs::smallint[],
    p_result_bodies => :result_bodies::bytea[],
    p_ev_namespace_ids => :ev_namespace_ids::bigint[],
    p_ev_job_ids => :ev_job_ids::bigint[],
    p_ev_job_refs => :ev_job_refs::text[],
    p_ev_worker_ids => :ev_worker_ids::bigint[],
    p_ev_codes => :ev_codes::smallint[],
    p_ev_executions => :ev_executions::int[],
    p_ev_epochs => :ev_epochs::bigint[],
    p_ev_outcomes => :ev_outcomes::smallint[],
    p_ev_reasons => :ev_reasons::smallint[],
    p_ev_durations => :ev_durations::bigint[],
    p_ev_messages => :ev_messages::text[],
    p_ev_details => :ev_details::text[]
);

-- name: fused_enqueue
-- A batch of new jobs without lanes (a laned batch takes the portable path, which books the
-- lane positions) in one statement: jobs (with a child's lineage and any deadline), runtime
-- rows, tags and enqueued events. A row that hits a unique key (a duplicate deduplication key,
-- a child name its parent used, or this very job already written by an earlier try whose
-- commit outcome was unknown) inserts nothing and comes back with a NULL job_id; the verb
-- looks those up afterwards. The deadline and lineage arrays may be NULL (a batch with neither),
-- and so may the trace contexts (an untraced batch) and the tenant ids (a batch naming no
-- tenant): unnest pads them with NULLs. A child without a tenant of its own takes its parent's.
-- A batch holding a job of a retired definition writes nothing at all: every row comes back
-- with a NULL job_id and retired says which, so the verb raises and the batch is refused whole.
WITH input AS (
    SELECT * FROM unnest(:job_refs::text[], :definition_ids::bigint[], :dedup_keys::text[],
                         :correlation_keys::text[], :concurrency_keys::text[], :codecs::smallint[],
                         :inputs::bytea[], :priorities::smallint[], :run_ats::timestamptz[],
                         :delays::bigint[], :audit::boolean[], :deadline_ats::timestamptz[],
                         :deadline_stricts::boolean[], :parent_ids::bigint[], :root_ids::bigint[],
                         :child_names::text[], :trace_contexts::text[], :tenant_ids::bigint[])
        WITH ORDINALITY AS i(job_ref, definition_id, dedup_key, correlation_key, concurrency_key,
                             input_codec, input, priority, run_at, delay_ms, audit, deadline_at,
                             deadline_strict, parent_id, root_id, child_name, trace_context,
                             tenant_id, ord)
),
retired AS (
    SELECT d.id FROM {schema}.definitions d
    WHERE d.id IN (SELECT i.definition_id FROM input i) AND d.retired
),
inserted AS (
    INSERT INTO {schema}.jobs
        (job_ref, namespace_id, definition_id, dedup_key, correlation_key, concurrency_key,
         input_codec, input, created_at, deadline_at, deadline_strict, parent_id, root_id,
         child_name, trace_context, tenant_id)
    SELECT i.job_ref, :namespace_id, i.definition_id, i.dedup_key, i.correlation_key,
           i.concurrency_key, i.input_codec, i.input, COALESCE(:now::timestamptz, now()),
           i.deadline_at, COALESCE(i.deadline_strict, false), i.parent_id, i.root_id,
           i.child_name, i.trace_context,
           COALESCE(i.tenant_id,
                    (SELECT pj.tenant_id FROM {schema}.jobs pj WHERE pj.id = i.parent_id))
    FROM input i
    WHERE NOT EXISTS (SELECT 1 FROM retired)
    ORDER BY i.ord
    ON CONFLICT DO NOTHING
    RETURNING id, job_ref
),
made AS (
    INSERT INTO {schema}.runtime
        (job_id, namespace_id, definition_id, status, priority, next_run_at, updated_at, gated)
    SELECT n.id, :namespace_id, i.definition_id, 10,
           -- an operator's priority override of the definition beats the asked-for priority
           COALESCE((SELECT (o.policy ->> 'priority')::smallint
                     FROM {schema}.policy_overrides o
                     WHERE o.definition_id = i.definition_id), i.priority),
           COALESCE(i.run_at,
                    COALESCE(:now::timestamptz, now()) + i.delay_ms * interval '1 millisecond'),
           COALESCE(:now::timestamptz, now()), i.concurrency_key IS NOT NULL
    FROM inserted n
    JOIN input i ON i.job_ref = n.job_ref
),
tagged AS (
    INSERT INTO {schema}.job_tags (job_id, tag)
    SELECT n.id, t.tag
    FROM unnest(:tag_refs::text[], :tags::text[]) AS t(job_ref, tag)
    JOIN inserted n ON n.job_ref = t.job_ref
),
logged AS (
    INSERT INTO {schema}.events (at, namespace_id, job_id, job_ref, code)
    SELECT COALESCE(:now::timestamptz, now()), :namespace_id, n.id, n.job_ref, 1
    FROM inserted n
    JOIN input i ON i.job_ref = n.job_ref
    WHERE i.audit
),
-- The bell: NOTIFY (delivered on commit, so a rolled-back enqueue wakes nobody) when a job due
-- now was written and a :channel is given. The payload names the namespace.
rang AS (
    SELECT pg_notify(:channel, :namespace)
    WHERE :channel::text IS NOT NULL
      AND EXISTS (SELECT 1 FROM inserted n JOIN input i ON i.job_ref = n.job_ref
                  WHERE i.run_at IS NULL AND i.delay_ms = 0)
)
SELECT i.ord, i.job_ref, n.id AS job_id, (SELECT count(*) FROM rang) AS rang,
       i.definition_id IN (SELECT id FROM retired) AS retired
FROM input i
LEFT JOIN inserted n ON n.job_ref = i.job_ref
ORDER BY i.ord;

-- name: fused_enqueue_one
-- fused_enqueue for the commonest call, one job without a lane: the same rows and rules, run
-- by the function enqueue_one (migration 0016), with one value per column instead of an array
-- per column. The server keeps the function's plans, so a call costs this short text's parse
-- and the inserts, not the planning of a five-insert statement every time.
SELECT e.o_job_id AS job_id, e.o_rang AS rang, e.o_retired AS retired
FROM {schema}.enqueue_one(
    p_now => :now::timestamptz,
    p_namespace => :namespace::text,
    p_channel => :channel::text,
    p_namespace_id => :namespace_id::bigint,
    p_definition_id => :definition_id::bigint,
    p_job_ref => :job_ref::text,
    p_dedup_key => :dedup_key::text,
    p_correlation_key => :correlation_key::text,
    p_concurrency_key => :concurrency_key::text,
    p_codec => :codec::smallint,
    p_input => :input::bytea,
    p_priority => :priority::smallint,
    p_run_at => :run_at::timestamptz,
    p_delay => :delay::bigint,
    p_audit => :audit::boolean,
    p_deadline_at => :deadline_at::timestamptz,
    p_deadline_strict => :deadline_strict::boolean,
    p_parent_id => :parent_id::bigint,
    p_root_id => :root_id::bigint,
    p_child_name => :child_name::text,
    p_trace_context => :trace_context::text,
    p_tenant_id => :tenant_id::bigint,
    p_tags => :tags::text[]
) e;

-- name: jobs_by_ref_or_dedup
-- After fused_enqueue: who holds the keys that refused some rows (a ref, a deduplication key,
-- or a child's name under its parent).
SELECT id AS job_id, job_ref, dedup_key, parent_id, child_name
FROM {schema}.jobs
WHERE job_ref = ANY (:job_refs::text[])
   OR (namespace_id = :namespace_id AND dedup_key = ANY (:dedup_keys::text[]))
   OR (parent_id = ANY (:parent_ids::bigint[]) AND child_name = ANY (:child_names::text[]));

-- name: lanes_lock
-- Lock the lanes of a batch in id order (so two batches sharing lanes cannot deadlock), by a
-- statement of its own: fused_promote, which runs next, then reads under a snapshot taken
-- after every enqueue that held one of these locks has committed its members.
SELECT l.id FROM {schema}.lanes l WHERE l.id = ANY (:lane_ids::bigint[]) ORDER BY l.id
FOR UPDATE;

-- name: fused_promote
-- For each (lane, job) whose run just ended for good (or, with a NULL job, a lane that may have
-- no head): if that job was the lane's head, or the lane has none, its blocked member with the
-- lowest position becomes ready and the head, with its promoted event (definitions auditing
-- in full); a lane with nobody left gets no head. The lanes must be locked (lanes_lock).
WITH ended AS (
    SELECT * FROM unnest(:lane_ids::bigint[], :job_ids::bigint[]) AS e(lane_id, job_id)
),
vacant AS (
    SELECT DISTINCT l.id
    FROM {schema}.lanes l
    JOIN ended e ON e.lane_id = l.id
    WHERE l.head_job_id IS NULL OR l.head_job_id = e.job_id
),
next AS (
    SELECT v.id AS lane_id, m.job_id
    FROM vacant v
    LEFT JOIN LATERAL (
        SELECT r.job_id FROM {schema}.runtime r
        WHERE r.lane_id = v.id AND r.status = 11
        ORDER BY r.lane_seq
        LIMIT 1
    ) m ON true
),
promoted AS (
    UPDATE {schema}.runtime r
    SET status = 10, version = r.version + 1, updated_at = COALESCE(:now::timestamptz, now())
    FROM next n
    WHERE r.job_id = n.job_id AND r.status = 11
    RETURNING r.job_id, r.namespace_id, r.definition_id
),
heads AS (
    UPDATE {schema}.lanes l
    SET head_job_id = n.job_id
    FROM next n
    WHERE l.id = n.lane_id
),
logged AS (
    INSERT INTO {schema}.events (at, namespace_id, job_id, job_ref, code)
    SELECT COALESCE(:now::timestamptz, now()), p.namespace_id, p.job_id, j.job_ref, 17
    FROM promoted p
    JOIN {schema}.jobs j        ON j.id = p.job_id
    JOIN {schema}.definitions d ON d.id = p.definition_id
    WHERE d.audit_level = 2
)
SELECT job_id FROM promoted;
