-- I1 nothing lost: every job the producer enqueued and committed has its row in the ledger.
--
-- Returns one row per missing job (no rows: it holds); portable SQL, one text for every
-- dialect. No parameters.
--
-- What it reads. A certification run records each job it enqueued in the expected table
-- ({schema}.expected, kept by anvil/certify beside the ledger, not part of acta's schema):
-- the ref enqueue handed back, the workload and the terminal status the job must reach.
-- Outcome 0 marks an enqueue made inside a transaction the producer rolled back: that job
-- must NOT exist, which certify_unexpected.sql checks. Every other expected ref must be a
-- row of jobs. A ref enqueue returned with no row behind it is an acknowledged enqueue lost.
SELECT x.job_ref,
       x.workload,
       x.outcome AS expected_status
FROM {schema}.expected x
WHERE x.outcome <> 0
  AND NOT EXISTS (SELECT 1 FROM {schema}.jobs j WHERE j.job_ref = x.job_ref)
ORDER BY x.job_ref
