"""One started run of a handler: its clock, its context, every way it can end, and the settle
that writes the end.

``execute`` (``acta.runtime.execution``) starts the run and races the handler; the ``Attempt``
builds the handler's context (with its durable port), and turns how the handler ended into a
settle: a failure (retry or not), a suspension on a durable wait, or a directive the handler
returned (or acta decided for the job: a strict deadline, a signal wait that timed out). A
settle the database cannot take is kept and tried again with backoff rather than left for
recovery, which would run the job again; every try is fenced, so a late one changes nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any, TypeVar

from acta.context import JobContext, job_logger
from acta.definition import JobDefinition
from acta.errors import DatabaseUnavailableError
from acta.ids import JobRef
from acta.instant import NO_TIMER
from acta.model.codes import JobStatus, Outcome, Reason
from acta.model.rows import Claimed, Transition
from acta.outcome import Cancel, Directive, Fail, Pause, Reschedule
from acta.policy import settlement
from acta.runtime.durable import DurablePort
from acta.runtime.environment import RunEnv
from acta.runtime.port import Suspend
from acta.runtime.run import Run, RunEnd, Stop
from acta.runtime.system_jobs import SYSTEM_JOBS
from acta.sync_context import SyncJobContext

# A start or settle the database could not take is tried again, backing off up to this.
SETTLE_RETRY_FIRST = timedelta(milliseconds=200)
SETTLE_RETRY_MAX = timedelta(seconds=10)

log = logging.getLogger("acta.worker")
T = TypeVar("T")

DIRECTED: dict[type[Directive], tuple[JobStatus, Outcome, RunEnd]] = {
    Reschedule: (JobStatus.READY, Outcome.RESCHEDULED, RunEnd.RESCHEDULED),
    Fail: (JobStatus.FAILED, Outcome.FAILED, RunEnd.FAILED),
    Cancel: (JobStatus.CANCELLED, Outcome.CANCELLED, RunEnd.CANCELLED),
    Pause: (JobStatus.PAUSED, Outcome.PAUSED, RunEnd.PAUSED),
}


class Attempt:
    """One started run: its clock, its context, and the ways it can end."""

    def __init__(
        self, env: RunEnv, run: Run, definition: JobDefinition[Any, Any], execution: int
    ) -> None:
        self.env, self.run, self.definition, self.execution = env, run, definition, execution
        # An operator may have given this job its own attempt limit (amend): it wins.
        limit = run.job.max_attempts
        self.policy = (
            definition.policy if limit is None else replace(definition.policy, max_attempts=limit)
        )
        self.started = env.clock.monotonic()

    @property
    def is_last(self) -> bool:
        """Whether a failure of this run fails the job for good."""
        return self.run.job.attempts + 1 >= self.policy.max_attempts

    def elapsed(self) -> int:
        return max(0, int((self.env.clock.monotonic() - self.started) * 1000))

    def past_deadline(self) -> bool:
        return past_deadline(self.env, self.run.job)

    def limit(self) -> timedelta | None:
        """The run's time limit: its definition's timeout, or less if a strict deadline is
        nearer."""
        timeout, job = self.definition.policy.timeout, self.run.job
        if not job.deadline_strict or job.deadline_at is None:
            return timeout
        left = max(job.deadline_at - self.env.clock.now(), timedelta(0))
        return left if timeout is None else min(timeout, left)

    def context(self) -> JobContext:
        job, ref = self.run.job, JobRef.parse(self.run.job.job_ref)
        env, definition = self.env, self.definition
        fields: dict[str, Any] = {
            "job": ref,
            "name": job.name,
            "attempt": job.attempts + 1,
            "max_attempts": self.policy.max_attempts,
            "execution": self.execution,
            "created_at": job.created_at,
            "correlation_key": job.correlation_key,
            "logger": job_logger(job.name, ref, self.execution),
            "cancellation": self.run.cancellation,
            "parent": None,
            "root": None,
            "deadline": job.deadline_at,
            "deadline_policy": None
            if job.deadline_at is None
            else ("strict" if job.deadline_strict else "advisory"),
            "ops": DurablePort(env, self.run, definition, self.execution),
            "now": env.clock.now,
            "firing": self.run.firing,
        }
        if job.parent_ref is not None:
            fields["parent"] = JobRef.parse(job.parent_ref)
        if job.root_ref is not None:
            fields["root"] = JobRef.parse(job.root_ref)
        if definition.is_async:
            return JobContext(**fields)
        return SyncJobContext(loop=self.run.loop, **fields)

    def wake_at(self, until: datetime | None) -> datetime:
        """When a suspended job comes back by time: its wait's instant, or its strict
        deadline if that is sooner (it is then failed on the claim)."""
        job, wake = self.run.job, until or NO_TIMER
        if job.deadline_strict and job.deadline_at is not None:
            wake = min(wake, job.deadline_at)
        return wake

    async def suspend(self, wait: Suspend) -> RunEnd:
        plan = settlement.suspended(
            self.run.job,
            self.execution,
            self.env.identity.worker_id,
            self.policy,
            wait=wait.wait,
            until=self.wake_at(wait.until),
            what=wait.what,
            duration_ms=self.elapsed(),
        )
        return await settle(self.env, self.run, plan, RunEnd.SUSPENDED)

    async def end(self, directive: Directive, reason: Reason) -> RunEnd:
        """End the run as a directive says (the handler's, or acta's for the job)."""
        job = self.run.job
        status, outcome, ended = DIRECTED[type(directive)]
        run_at: datetime | None = None
        delay_ms: int | None = None
        if isinstance(directive, Reschedule):
            if directive.at is not None:
                run_at = directive.at
            else:
                delay_ms = -(-(directive.delay or timedelta(0)) // timedelta(milliseconds=1))
        plan = settlement.directed(
            job,
            self.execution,
            self.env.identity.worker_id,
            self.policy,
            status=status,
            outcome=outcome,
            reason=reason,
            message=directive.reason,
            duration_ms=self.elapsed(),
            run_at=run_at,
            delay_ms=delay_ms,
        )
        return await settle(self.env, self.run, plan, ended)

    async def fail(
        self, outcome: Outcome, reason: Reason, message: str, final: bool = False
    ) -> RunEnd:
        plan = settlement.failed(
            self.run.job,
            self.execution,
            self.env.identity.worker_id,
            self.policy,
            outcome=outcome,
            reason=reason,
            message=message,
            duration_ms=self.elapsed(),
            rng=self.env.rng,
            final=final,
        )
        return await settle(self.env, self.run, plan, retry_or_fail(plan))

    async def rearm(self, every: timedelta, error: str | None = None) -> RunEnd:
        plan = settlement.rearmed(
            self.run.job,
            self.execution,
            self.env.identity.worker_id,
            self.policy,
            every,
            self.elapsed(),
            error,
        )
        return await settle(self.env, self.run, plan, RunEnd.REARMED)


def past_deadline(env: RunEnv, job: Claimed) -> bool:
    """Whether the job's strict deadline has passed, by the worker's clock."""
    return (
        job.deadline_strict and job.deadline_at is not None and env.clock.now() >= job.deadline_at
    )


async def settle(env: RunEnv, run: Run, plan: Transition, outcome: RunEnd) -> RunEnd:
    if env.killed:
        return RunEnd.KILLED
    if run.stop_reason is Stop.LEASE_LOST:
        return RunEnd.LEASE_LOST
    if run.slot:
        plan = replace(plan, slot=True)  # its settle closes the firing: never the fused path
    urgent = _urgent(run)
    if env.committer.windowed and not urgent:
        # Bulk: the settle waits in the flush window; the run frees its executor meanwhile
        # (the claim loop may fill it) and keeps its lease until the settle is committed.
        run.settling = True
        env.slots.announce()
    written = await keep_trying(env, run, lambda: env.committer.settle(plan, urgent), "settle")
    if isinstance(written, RunEnd):
        return written
    if env.killed:
        return RunEnd.KILLED
    if written is None:
        return RunEnd.LEASE_LOST
    if env.ledger.telemetry is not None:
        # The settle's transaction reported the failure to alerting (acta.ledger.alerting)
        # with the severity record_failure gives it.
        cause = plan.alert
        alerted = None if cause is None else ("critical" if cause.final else "warning")
        env.ledger.telemetry.settled(env.namespace, run.job.name, written, alerted)
    if written is JobStatus.CANCELLED:
        return RunEnd.CANCELLED
    return outcome


def _urgent(run: Run) -> bool:
    """Whether a settle must not wait for a bulk flush window: the run is not safely run again
    from the start after a crash, or is driven one at a time.

    A run that used durable state (steps, variables, waits, children) has recorded progress an
    at-most-once step may depend on; a schedule slot's run fires its schedule; acta's own jobs
    (recovery, retention) keep the fleet healthy. Losing their settle would re-run more than
    plain work, so the bulk profile commits them at once."""
    return run.urgent or run.durable or run.slot or run.job.name in SYSTEM_JOBS


async def keep_trying(
    env: RunEnv, run: Run, write: Callable[[], Awaitable[T]], what: str
) -> T | RunEnd:
    """Run a start or settle until the database takes it. The decision is made; only the
    database is missing, so keep it and try again with backoff rather than let recovery run
    the job again. Every try is fenced (and an in-doubt earlier try is recognised as this
    worker's own write), so a try that lands after the lease moved on changes nothing. When the
    worker dies or its shutdown gives up, the job is left for recovery: that RunEnd is
    returned instead."""
    wait = SETTLE_RETRY_FIRST
    while True:
        try:
            return await write()
        except DatabaseUnavailableError as exc:
            if not env.retry_settles:
                raise
            if env.killed or env.giving_up.is_set():
                log.warning(
                    "job %s is left for recovery: could not %s it (%s)", run.job.job_ref, what, exc
                )
                return RunEnd.KILLED if env.killed else RunEnd.LEFT_LEASED
            log.warning(
                "could not %s job %s (%s); trying again in %g s",
                what,
                run.job.job_ref,
                exc,
                wait.total_seconds(),
            )
            await env.clock.sleep_until(env.clock.now() + wait, env.giving_up)
            wait = min(wait * 2, SETTLE_RETRY_MAX)


def retry_or_fail(plan: Transition) -> RunEnd:
    return RunEnd.FAILED if plan.status.terminal else RunEnd.REARMED
