-- The outbox relay's statements on MariaDB, run in the application's database.
--
-- {table} is acta_outbox (qualified by its database when one was named), {quarantine}
-- acta_outbox_quarantine beside it. Claims lock the one row of the claim lock table first, so
-- two relays never claim at the same time. Lists of ids come as JSON arrays. Comments here
-- avoid colons (named parameters are rewritten for PyMySQL).

-- name: lock
-- One claim at a time per outbox table, released at commit or rollback.
SELECT id FROM {table}_claim_lock WHERE id = 1 FOR UPDATE;

-- name: namespaces
-- The namespaces that have staged rows, so the relay can spot names that are not valid.
SELECT DISTINCT namespace FROM {table};

-- name: candidates
-- Rows of one namespace the relay may claim, oldest first: not held by a live claim, and (for
-- a row naming a lane) no older row of the same lane held by a live claim.
SELECT o.id, o.namespace, o.job_name, o.input_codec, o.input, o.priority, o.run_at,
       o.dedup_key, o.correlation_key, o.tags, o.lane, o.concurrency_key, o.deadline_at,
       o.deadline_strict, o.staged_at, o.attempts
FROM {table} o
WHERE o.namespace = :namespace
  AND (o.claimed_until IS NULL OR o.claimed_until <= :now)
  AND (o.lane IS NULL OR NOT EXISTS (
        SELECT 1 FROM {table} p
        WHERE p.namespace = o.namespace AND p.lane = o.lane AND p.id < o.id
          AND p.claimed_until > :now))
ORDER BY o.id
LIMIT :batch;

-- name: hold
-- Claim the batch's rows for a while.
UPDATE {table} SET claimed_by = :me, claimed_until = :until
WHERE id IN (SELECT value FROM JSON_TABLE(:ids, '$[*]' COLUMNS (value BIGINT PATH '$')) AS i);

-- name: remove
-- Delivered (or quarantined) rows leave the outbox, whoever holds them now.
DELETE FROM {table}
WHERE id IN (SELECT value FROM JSON_TABLE(:ids, '$[*]' COLUMNS (value BIGINT PATH '$')) AS i);

-- name: release
-- A delivery that failed: the rows stay, first in their lanes' lines, claimable at once.
UPDATE {table}
SET claimed_by = NULL, claimed_until = NULL, attempts = attempts + 1, last_error = :error
WHERE id IN (SELECT value FROM JSON_TABLE(:ids, '$[*]' COLUMNS (value BIGINT PATH '$')) AS i)
  AND claimed_by = :me;

-- name: quarantine
-- Copy a row into quarantine with the reason (nothing if an undecided entry exists already:
-- the unique key over open_outbox_id refuses it, and IGNORE keeps that refusal quiet; the row
-- comes from the outbox table, whose columns fit the quarantine's, so nothing is truncated).
INSERT IGNORE INTO {quarantine}
    (outbox_id, namespace, job_name, input_codec, input, priority, run_at, dedup_key,
     correlation_key, tags, lane, concurrency_key, deadline_at, deadline_strict, staged_at,
     attempts, reason, message, quarantined_at, quarantined_by)
SELECT id, namespace, job_name, input_codec, input, priority, run_at, dedup_key,
       correlation_key, tags, lane, concurrency_key, deadline_at, deadline_strict, staged_at,
       attempts, :reason, :message, :now, :me
FROM {table}
WHERE id = :id;

-- name: quarantined
-- Quarantine entries, oldest first; undecided ones only unless everything is asked for.
SELECT id, outbox_id, namespace, job_name, input_codec, input, priority, run_at, dedup_key,
       correlation_key, tags, lane, concurrency_key, deadline_at, deadline_strict, staged_at,
       attempts, reason, message, quarantined_at, quarantined_by, decided_at, decision, actor,
       decision_reason
FROM {quarantine}
WHERE :everything = 1 OR decided_at IS NULL
ORDER BY id;

-- name: quarantine_entries
-- Every entry of one outbox row, the newest (the undecided one, if any) first.
SELECT id, outbox_id, namespace, job_name, input_codec, input, priority, run_at, dedup_key,
       correlation_key, tags, lane, concurrency_key, deadline_at, deadline_strict, staged_at,
       attempts, reason, message, quarantined_at, quarantined_by, decided_at, decision, actor,
       decision_reason
FROM {quarantine}
WHERE outbox_id = :outbox_id
ORDER BY decided_at IS NULL DESC, id DESC;

-- name: decide
-- Record an operator's decision on an undecided entry; a discard drops the payload.
UPDATE {quarantine}
SET decided_at = :now, decision = :decision, actor = :actor, decision_reason = :reason,
    input = CASE WHEN :decision = 'discard' THEN NULL ELSE input END
WHERE id = :entry AND decided_at IS NULL;

-- name: requeue
-- Put an entry's row back in the outbox under its old id, unclaimed and untried.
INSERT INTO {table}
    (id, namespace, job_name, input_codec, input, priority, run_at, dedup_key,
     correlation_key, tags, lane, concurrency_key, deadline_at, deadline_strict, staged_at)
SELECT outbox_id, namespace, job_name, input_codec, input, priority, run_at, dedup_key,
       correlation_key, tags, lane, concurrency_key, deadline_at, deadline_strict, staged_at
FROM {quarantine}
WHERE id = :entry;
