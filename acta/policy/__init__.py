"""Policy: what a job's configuration means and what each way a run can end does to the job.

Pure rules, no I/O and no clock: a definition's policy (attempts, backoff, timeout, priority,
audit), the plans that turn a run's end into a guarded ``Transition`` (settlement), what
recovery does with a lapsed lease, and what an operator's cancel may do. The ledger executes
these plans; the runtime decides which plan applies. Nothing here imports a layer above it.
"""
