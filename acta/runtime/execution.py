"""One claimed job, from dispatched to settled: start, decode, run the handler, settle.

The run races three things (``acta.runtime.handler``): the handler, its timeout (judged by the
clock, so the test clock can expire it), and a stop request from the worker (lease lost, cancel
asked, shutdown, kill). Whatever ends it, the outcome becomes one guarded settle.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta
from typing import Any, TypeVar

from acta.context import JobContext, job_logger
from acta.definition import JobDefinition
from acta.errors import (
    DatabaseUnavailableError,
    InputDecodeError,
    PayloadError,
    StepInterruptedError,
)
from acta.ids import JobRef
from acta.model.codes import Control, EventCode, JobStatus, Outcome, Reason, audited
from acta.model.rows import Bounced, Started, Transition
from acta.outcome import Cancel, Directive, Fail, Pause, Reschedule
from acta.policy import settlement
from acta.policy.gate import NO_GATES
from acta.runtime.durable import DurablePort
from acta.runtime.environment import RunEnv
from acta.runtime.handler import (
    Interrupted,
    decode_input,
    describe,
    encode_result,
    invoke,
)
from acta.runtime.port import NO_TIMER, EndRun, Suspend
from acta.runtime.run import Run, RunEnd, Stop
from acta.runtime.system_jobs import SYSTEM_JOBS, SystemJob
from acta.sync_context import SyncJobContext

# A start or settle the database could not take is tried again, backing off up to this.
SETTLE_RETRY_FIRST = timedelta(milliseconds=200)
SETTLE_RETRY_MAX = timedelta(seconds=10)

log = logging.getLogger("acta.worker")
T = TypeVar("T")


async def execute(env: RunEnv, run: Run) -> RunEnd:
    """Carry one claimed job to a settled state (or drop it if this worker lost it)."""
    job = run.job
    system = SYSTEM_JOBS.get(job.name)
    definition = env.definition(job.name) if system is None else system.definition
    if definition is None or (definition.handler is None and system is None):
        env.skip_definition(job.definition_id, job.name)
        plan = settlement.handed_back(
            job,
            run.started.execution if run.started else None,
            env.identity.worker_id,
            None,
            Reason.NO_HANDLER,
            f"worker {env.identity.incarnation} has no handler for {job.name!r}",
        )
        return await _settle(env, run, plan, RunEnd.REARMED)
    policy = definition.policy
    if run.stop_reason is not None:
        execution = run.started.execution if run.started else None
        return await _interrupted(env, run, definition, execution, None)
    started = run.started
    if started is None:
        gates = NO_GATES if system is not None else definition.gates(job.concurrency_key)
        if gates.any:
            admitted = await _kept(env, run, lambda: env.admit(job, gates, policy.audit), "admit")
            if isinstance(admitted, Bounced):
                run.back_at = admitted.until
                return RunEnd.BOUNCED  # no attempt spent; the executor goes back to the pool
            kept: Started | RunEnd | None = admitted
        else:
            audit_started = audited(policy.audit, EventCode.EXECUTION_STARTED)
            kept = await _kept(env, run, lambda: env.committer.start(job, audit_started), "start")
        if isinstance(kept, RunEnd):
            return kept
        started = kept
    if env.killed:
        return RunEnd.KILLED
    if started is None:
        return RunEnd.LEASE_LOST
    execution = started.execution
    if started.cancel_requested:
        plan = settlement.cancelled(
            job, execution, env.identity.worker_id, policy, 0, **_cancel(started.cancel_requested)
        )
        return await _settle(env, run, plan, RunEnd.CANCELLED)
    attempt = _Attempt(env, run, definition, execution)
    if system is not None:
        return await _run_system(attempt, system)
    if attempt.past_deadline():
        return await attempt.end(Fail("its strict deadline passed"), Reason.DEADLINE)
    try:
        value = decode_input(definition, job)
    except InputDecodeError as exc:
        return await attempt.fail(
            Outcome.FAILED,
            Reason.INPUT_UNDECODABLE,
            f"stored input does not decode: {exc}",
            final=True,
        )
    try:
        try:
            returned = await invoke(env, run, definition, attempt.context, attempt.limit(), value)
        finally:
            env.slots.give_back(run)  # the next run may start while this one settles
    except Suspend as wait:
        return await attempt.suspend(wait)
    except EndRun as ended:
        return await attempt.end(ended.directive, ended.reason)
    except StepInterruptedError as exc:
        return await attempt.fail(Outcome.FAILED, Reason.STEP_INTERRUPTED, str(exc), final=True)
    except Interrupted as stop:
        if stop.reason is Stop.TIMEOUT and attempt.past_deadline():
            return await attempt.end(Fail("its strict deadline passed"), Reason.DEADLINE)
        if stop.reason is Stop.TIMEOUT:
            if run.thread_running and not attempt.is_last:
                # A retry must not start beside a thread still running this job (Python cannot
                # stop it): keep the lease, renewed by heartbeats, until the thread returns.
                await run.thread_or_stop()
                # A shutdown that came meanwhile changes nothing if the thread is back: the run
                # timed out, and that is what is recorded.
                if run.stop_reason is not None and (
                    run.stop_reason is not Stop.SHUTDOWN or run.thread_running
                ):
                    return await _interrupted(env, run, definition, execution, attempt.elapsed())
            limit = policy.timeout.total_seconds() if policy.timeout else 0
            message = f"execution timed out after {limit:g} s"
            return await attempt.fail(Outcome.TIMED_OUT, Reason.TIMEOUT, message)
        return await _interrupted(env, run, definition, execution, attempt.elapsed())
    except Exception as exc:
        return await attempt.fail(Outcome.FAILED, Reason.HANDLER_ERROR, describe(exc))
    if isinstance(returned, Directive):
        return await attempt.end(returned, Reason.HANDLER_DECIDED)
    try:
        result = encode_result(definition, returned, env.registry.payload_cap)
    except PayloadError as exc:
        # The same code returns the same value: retrying cannot help.
        message = f"the return value cannot be stored: {exc}"
        return await attempt.fail(Outcome.FAILED, Reason.RESULT_UNENCODABLE, message, final=True)
    plan = settlement.succeeded(
        job, execution, env.identity.worker_id, policy, attempt.elapsed(), result
    )
    return await _settle(env, run, plan, RunEnd.COMPLETED)


class _Attempt:
    """One started run: its clock, its context, and the ways it can end."""

    def __init__(
        self, env: RunEnv, run: Run, definition: JobDefinition[Any, Any], execution: int
    ) -> None:
        self.env, self.run, self.definition, self.execution = env, run, definition, execution
        self.started = env.clock.monotonic()

    @property
    def is_last(self) -> bool:
        """Whether a failure of this run fails the job for good."""
        return self.run.job.attempts + 1 >= self.definition.policy.max_attempts

    def elapsed(self) -> int:
        return max(0, int((self.env.clock.monotonic() - self.started) * 1000))

    def past_deadline(self) -> bool:
        job = self.run.job
        return (
            job.deadline_strict
            and job.deadline_at is not None
            and self.env.clock.now() >= job.deadline_at
        )

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
            "max_attempts": definition.policy.max_attempts,
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
            self.definition.policy,
            wait=wait.wait,
            until=self.wake_at(wait.until),
            what=wait.what,
            duration_ms=self.elapsed(),
        )
        return await _settle(self.env, self.run, plan, RunEnd.SUSPENDED)

    async def end(self, directive: Directive, reason: Reason) -> RunEnd:
        """End the run as a directive says (the handler's, or acta's for the job)."""
        job = self.run.job
        status, outcome, ended = _DIRECTED[type(directive)]
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
            self.definition.policy,
            status=status,
            outcome=outcome,
            reason=reason,
            message=directive.reason,
            duration_ms=self.elapsed(),
            run_at=run_at,
            delay_ms=delay_ms,
        )
        return await _settle(self.env, self.run, plan, ended)

    async def fail(
        self, outcome: Outcome, reason: Reason, message: str, final: bool = False
    ) -> RunEnd:
        plan = settlement.failed(
            self.run.job,
            self.execution,
            self.env.identity.worker_id,
            self.definition.policy,
            outcome=outcome,
            reason=reason,
            message=message,
            duration_ms=self.elapsed(),
            rng=self.env.rng,
            final=final,
        )
        return await _settle(self.env, self.run, plan, _retry_or_fail(plan))

    async def rearm(self, every: timedelta, error: str | None = None) -> RunEnd:
        plan = settlement.rearmed(
            self.run.job,
            self.execution,
            self.env.identity.worker_id,
            self.definition.policy,
            every,
            self.elapsed(),
            error,
        )
        return await _settle(self.env, self.run, plan, RunEnd.REARMED)


async def _run_system(attempt: _Attempt, system: SystemJob) -> RunEnd:
    """A recurring system job: whatever its run does, the slot re-arms for the next one."""
    env, run = attempt.env, attempt.run
    try:
        await invoke(env, run, None, attempt.context, None, system.run)
    except Interrupted:
        return await _interrupted(
            env, run, attempt.definition, attempt.execution, attempt.elapsed()
        )
    except Exception as exc:
        return await attempt.rearm(system.every(env), describe(exc))
    return await attempt.rearm(system.every(env))


_DIRECTED: dict[type[Directive], tuple[JobStatus, Outcome, RunEnd]] = {
    Reschedule: (JobStatus.READY, Outcome.RESCHEDULED, RunEnd.RESCHEDULED),
    Fail: (JobStatus.FAILED, Outcome.FAILED, RunEnd.FAILED),
    Cancel: (JobStatus.CANCELLED, Outcome.CANCELLED, RunEnd.CANCELLED),
    Pause: (JobStatus.PAUSED, Outcome.PAUSED, RunEnd.PAUSED),
}


def _cancel(control: int) -> dict[str, Any]:
    """The reason and message of a cancel that a control request asked for."""
    if control == Control.PARENT_GAVE_UP:
        return {"reason": Reason.PARENT_GAVE_UP, "message": "cancelled: its parent stopped waiting"}
    return {}


def _retry_or_fail(plan: Transition) -> RunEnd:
    return RunEnd.FAILED if plan.status.terminal else RunEnd.REARMED


async def _interrupted(
    env: RunEnv,
    run: Run,
    definition: JobDefinition[Any, Any],
    execution: int | None,
    duration_ms: int | None,
) -> RunEnd:
    reason = run.stop_reason
    if reason is Stop.KILLED:
        return RunEnd.KILLED
    if reason is Stop.LEASE_LOST:
        return RunEnd.LEASE_LOST  # someone else owns the row now: write nothing
    policy = definition.policy
    if reason is Stop.CANCEL:
        plan = settlement.cancelled(
            run.job,
            execution,
            env.identity.worker_id,
            policy,
            duration_ms,
            **_cancel(run.cancel_control),
        )
        return await _settle(env, run, plan, RunEnd.CANCELLED)
    if run.thread_running and run.thread is not None:
        # A handler that honours its cancellation returns within moments: give it those.
        # The stop's grace, if the handler race already began it; otherwise it begins now.
        since = run.grace_from or env.clock.now()
        await env.within_grace(asyncio.wrap_future(run.thread), since)
    if run.thread_running:
        # Handing the job back would let a peer run it beside this thread. Leave it leased:
        # once this worker stops renewing, recovery takes it back and records the lease loss.
        log.warning(
            "job %s stays leased: its handler thread is still running at shutdown; recovery "
            "takes it back when the lease lapses",
            run.job.job_ref,
        )
        return RunEnd.LEFT_LEASED
    plan = settlement.handed_back(
        run.job,
        execution,
        env.identity.worker_id,
        policy,
        Reason.SHUTDOWN,
        f"worker {env.identity.incarnation} shut down before the run finished",
        duration_ms,
    )
    return await _settle(env, run, plan, RunEnd.REARMED)


async def _settle(env: RunEnv, run: Run, plan: Transition, outcome: RunEnd) -> RunEnd:
    if env.killed:
        return RunEnd.KILLED
    if run.stop_reason is Stop.LEASE_LOST:
        return RunEnd.LEASE_LOST
    written = await _kept(env, run, lambda: env.committer.settle(plan), "settle")
    if isinstance(written, RunEnd):
        return written
    if env.killed:
        return RunEnd.KILLED
    if written is None:
        return RunEnd.LEASE_LOST
    if written is JobStatus.CANCELLED:
        return RunEnd.CANCELLED
    return outcome


async def _kept(env: RunEnv, run: Run, write: Callable[[], Awaitable[T]], what: str) -> T | RunEnd:
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
