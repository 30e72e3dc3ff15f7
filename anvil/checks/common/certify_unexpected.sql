-- I1 none unexpected: the ledger holds no job the producer did not enqueue, and none whose
-- enqueue was rolled back with the producer's transaction.
--
-- Returns one row per unexpected job (no rows: it holds); portable SQL. No parameters.
--
-- What it reads. Every job of an application definition (names not starting with "sys.":
-- acta's own recurring jobs are expected to exist) that was enqueued from outside a handler
-- (parent_id NULL: children are their parents' business), and that is no recurring slot
-- (the fleet's workers make those when they declare a schedule; a row of schedules names it), must have a row in the expected
-- table (see certify_lost.sql) with an outcome other than 0. A job with no such row was
-- written by nobody the run knows of; one whose expected outcome is 0 survived a rollback.
SELECT j.job_ref,
       d.name,
       CASE WHEN x.job_ref IS NULL THEN 'never enqueued by the run'
            ELSE 'its enqueue was rolled back' END AS problem
FROM {schema}.jobs j
JOIN {schema}.definitions d ON d.id = j.definition_id
LEFT JOIN {schema}.expected x ON x.job_ref = j.job_ref
WHERE d.name NOT LIKE 'sys.%'
  AND j.parent_id IS NULL
  AND NOT EXISTS (SELECT 1 FROM {schema}.schedules s WHERE s.slot_id = j.id)
  AND (x.job_ref IS NULL OR x.outcome = 0)
ORDER BY j.job_ref
