"""One claimed job, from dispatched to settled: start, decode, run the handler, settle.

The run races three things (``acta.runtime.handler``): the handler, its timeout (judged by the
clock, so the test clock can expire it), and a stop request from the worker (lease lost, cancel
asked, shutdown, kill). Whatever ends it, the outcome becomes one guarded settle.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from acta.context import JobContext, job_logger
from acta.errors import DatabaseUnavailableError, InputDecodeError, PayloadError
from acta.ids import JobRef
from acta.model.codes import EventCode, JobStatus, Outcome, Reason, audited
from acta.model.rows import Transition
from acta.runtime import settler
from acta.runtime.handler import (
    CANCEL_GRACE_SECONDS,
    Interrupted,
    decode_input,
    describe,
    encode_result,
    invoke,
)
from acta.runtime.run import Run, Stop, TickOutcome

if TYPE_CHECKING:
    from acta.job import JobDefinition
    from acta.runtime.system_jobs import SystemJob
    from acta.runtime.worker import Worker

# A settle the database could not take is tried again, backing off up to this.
SETTLE_RETRY_FIRST = timedelta(milliseconds=200)
SETTLE_RETRY_MAX = timedelta(seconds=10)

log = logging.getLogger("acta.worker")


async def execute(worker: Worker, run: Run) -> TickOutcome:
    """Carry one claimed job to a settled state (or drop it if this worker lost it)."""
    job = run.job
    system = worker.system_job(job.name)
    definition = worker.app.definitions.get(job.name) if system is None else system.definition
    if definition is None or (definition.handler is None and system is None):
        worker.skip_definition(job.definition_id, job.name)
        plan = settler.handed_back(
            job,
            run.started.execution if run.started else None,
            worker.worker_id,
            None,
            Reason.NO_HANDLER,
            f"worker {worker.incarnation} has no handler for {job.name!r}",
        )
        return await _settle(worker, run, plan, TickOutcome.REARMED)
    policy = definition.policy
    if run.stop_reason is not None:
        execution = run.started.execution if run.started else None
        return await _interrupted(worker, run, definition, execution, None)
    started = run.started or await worker.start(
        job, audited(policy.audit, EventCode.EXECUTION_STARTED)
    )
    if worker.killed:
        return TickOutcome.KILLED
    if started is None:
        return TickOutcome.LEASE_LOST
    execution = started.execution
    if started.cancel_requested:
        plan = settler.cancelled(job, execution, worker.worker_id, policy, 0)
        return await _settle(worker, run, plan, TickOutcome.CANCELLED)
    attempt = _Attempt(worker, run, definition, execution)
    if system is not None:
        return await _run_system(attempt, system)
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
            returned = await invoke(worker, run, definition, attempt.context, policy.timeout, value)
        finally:
            worker.slots.give_back(run)  # the next run may start while this one settles
    except Interrupted as stop:
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
                    return await _interrupted(worker, run, definition, execution, attempt.elapsed())
            limit = policy.timeout.total_seconds() if policy.timeout else 0
            message = f"execution timed out after {limit:g} s"
            return await attempt.fail(Outcome.TIMED_OUT, Reason.TIMEOUT, message)
        return await _interrupted(worker, run, definition, execution, attempt.elapsed())
    except Exception as exc:
        return await attempt.fail(Outcome.FAILED, Reason.HANDLER_ERROR, describe(exc))
    try:
        result = encode_result(definition, returned)
    except PayloadError as exc:
        # The same code returns the same value: retrying cannot help.
        message = f"the return value cannot be stored: {exc}"
        return await attempt.fail(Outcome.FAILED, Reason.RESULT_UNENCODABLE, message, final=True)
    plan = settler.succeeded(job, execution, worker.worker_id, policy, attempt.elapsed(), result)
    return await _settle(worker, run, plan, TickOutcome.COMPLETED)


class _Attempt:
    """One started run: its clock, its context, and the ways it can end."""

    def __init__(
        self, worker: Worker, run: Run, definition: JobDefinition[Any, Any], execution: int
    ) -> None:
        self.worker, self.run, self.definition, self.execution = worker, run, definition, execution
        self.started = worker.clock.monotonic()

    @property
    def is_last(self) -> bool:
        """Whether a failure of this run fails the job for good."""
        return self.run.job.attempts + 1 >= self.definition.policy.max_attempts

    def elapsed(self) -> int:
        return max(0, int((self.worker.clock.monotonic() - self.started) * 1000))

    def context(self) -> JobContext:
        job, ref = self.run.job, JobRef.parse(self.run.job.job_ref)
        return JobContext(
            job=ref,
            name=job.name,
            attempt=job.attempts + 1,
            max_attempts=self.definition.policy.max_attempts,
            execution=self.execution,
            created_at=job.created_at,
            correlation_key=job.correlation_key,
            logger=job_logger(job.name, ref, self.execution),
            cancellation=self.run.cancellation,
        )

    async def fail(
        self, outcome: Outcome, reason: Reason, message: str, final: bool = False
    ) -> TickOutcome:
        plan = settler.failed(
            self.run.job,
            self.execution,
            self.worker.worker_id,
            self.definition.policy,
            outcome=outcome,
            reason=reason,
            message=message,
            duration_ms=self.elapsed(),
            rng=self.worker.rng,
            final=final,
        )
        return await _settle(self.worker, self.run, plan, _retry_or_fail(plan))

    async def rearm(self, every: timedelta, error: str | None = None) -> TickOutcome:
        plan = settler.rearmed(
            self.run.job,
            self.execution,
            self.worker.worker_id,
            self.definition.policy,
            every,
            self.elapsed(),
            error,
        )
        return await _settle(self.worker, self.run, plan, TickOutcome.REARMED)


async def _run_system(attempt: _Attempt, system: SystemJob) -> TickOutcome:
    """A recurring system job: whatever its run does, the slot re-arms for the next one."""
    worker, run = attempt.worker, attempt.run
    try:
        await invoke(worker, run, None, attempt.context, None, system.run)
    except Interrupted:
        return await _interrupted(
            worker, run, attempt.definition, attempt.execution, attempt.elapsed()
        )
    except Exception as exc:
        return await attempt.rearm(system.every(worker), describe(exc))
    return await attempt.rearm(system.every(worker))


def _retry_or_fail(plan: Transition) -> TickOutcome:
    return TickOutcome.FAILED if plan.status.terminal else TickOutcome.REARMED


async def _interrupted(
    worker: Worker,
    run: Run,
    definition: JobDefinition[Any, Any],
    execution: int | None,
    duration_ms: int | None,
) -> TickOutcome:
    reason = run.stop_reason
    if reason is Stop.KILLED:
        return TickOutcome.KILLED
    if reason is Stop.LEASE_LOST:
        return TickOutcome.LEASE_LOST  # someone else owns the row now: write nothing
    policy = definition.policy
    if reason is Stop.CANCEL:
        plan = settler.cancelled(run.job, execution, worker.worker_id, policy, duration_ms)
        return await _settle(worker, run, plan, TickOutcome.CANCELLED)
    if run.thread_running and run.thread is not None:
        # A handler that honours its cancellation returns within moments: give it those.
        await asyncio.wait({asyncio.wrap_future(run.thread)}, timeout=CANCEL_GRACE_SECONDS)
    if run.thread_running:
        # Handing the job back would let a peer run it beside this thread. Leave it leased:
        # once this worker stops renewing, recovery takes it back and records the lease loss.
        log.warning(
            "job %s stays leased: its handler thread is still running at shutdown; recovery "
            "takes it back when the lease lapses",
            run.job.job_ref,
        )
        return TickOutcome.LEFT_LEASED
    plan = settler.handed_back(
        run.job,
        execution,
        worker.worker_id,
        policy,
        Reason.SHUTDOWN,
        f"worker {worker.incarnation} shut down before the run finished",
        duration_ms,
    )
    return await _settle(worker, run, plan, TickOutcome.REARMED)


async def _settle(worker: Worker, run: Run, plan: Transition, outcome: TickOutcome) -> TickOutcome:
    if worker.killed:
        return TickOutcome.KILLED
    if run.stop_reason is Stop.LEASE_LOST:
        return TickOutcome.LEASE_LOST
    wait = SETTLE_RETRY_FIRST
    while True:
        try:
            written = await worker.settle(plan)
            break
        except DatabaseUnavailableError as exc:
            # The outcome is known; only the database is missing. Keep it and try again rather
            # than let recovery run the job again: the write stays fenced, so if the lease
            # moved on meanwhile it changes nothing. Stop trying only when the worker dies or
            # its shutdown gives up on unfinished runs; recovery then takes the job back.
            if worker.killed or worker.giving_up.is_set() or not worker.retry_settles:
                raise
            log.warning(
                "could not settle job %s (%s); trying again in %g s",
                run.job.job_ref,
                exc,
                wait.total_seconds(),
            )
            await worker.clock.sleep_until(worker.clock.now() + wait, worker.giving_up)
            wait = min(wait * 2, SETTLE_RETRY_MAX)
            if worker.killed:
                return TickOutcome.KILLED
    if worker.killed:
        return TickOutcome.KILLED
    if written is None:
        return TickOutcome.LEASE_LOST
    if written is JobStatus.CANCELLED:
        return TickOutcome.CANCELLED
    return outcome
