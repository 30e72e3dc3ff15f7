-- I2 nothing stuck: after the drain no application job holds a lease or waits, and no lane
-- still has members.
--
-- Returns one row per stuck job (no rows: it holds); portable SQL. No parameters.
--
-- What it reads. runtime only. A job still ready, blocked, dispatched, executing, suspended
-- or paused (statuses below 100), or any row with a lease owner, after every worker stopped
-- gracefully, is work the fleet left behind: a lease that recovery never took back, a lane
-- that never promoted its next member, a wait nobody released. acta's own "sys." jobs are
-- recurring and always waiting; they are left out, and so are recurring slots (a row of
-- schedules names them), which never end either: the schedule checks judge those.
SELECT j.job_ref,
       d.name,
       r.status,
       r.lease_owner,
       r.lane_id
FROM {schema}.runtime r
JOIN {schema}.jobs j ON j.id = r.job_id
JOIN {schema}.definitions d ON d.id = j.definition_id
WHERE d.name NOT LIKE 'sys.%'
  AND NOT EXISTS (SELECT 1 FROM {schema}.schedules s WHERE s.slot_id = j.id)
  AND (r.status < 100 OR r.lease_owner IS NOT NULL)
ORDER BY j.job_ref
