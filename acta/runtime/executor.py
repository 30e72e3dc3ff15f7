"""One claimed job, from dispatched to settled: start, decode, run the handler, settle.

Async handlers run on the event loop; plain functions run in the worker's bounded thread pool.
The run races three things: the handler, its timeout (judged by the clock, so the test clock
can expire it), and a stop request from the worker (lease lost, cancel asked, shutdown, kill).
Python cannot interrupt a thread, so a sync handler that overstays is flagged through its
cancellation and abandoned; its late result is dropped, never written.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import os
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from acta.context import Cancellation, JobCancelledError, JobContext, job_logger
from acta.errors import DatabaseUnavailableError, InputDecodeError, PayloadError
from acta.ids import JobRef
from acta.model.codes import EventCode, JobStatus, Outcome, Reason, audited
from acta.model.rows import Claimed, Started, Transition
from acta.runtime import settler
from acta.shape import from_data, to_data

if TYPE_CHECKING:
    from acta.job import JobDefinition
    from acta.runtime.system_jobs import SystemJob
    from acta.runtime.worker import Worker

# How long a cancelled async handler gets to unwind before the worker settles without it.
CANCEL_GRACE_SECONDS = 1.0
# A settle the database could not take is tried again, backing off up to this.
SETTLE_RETRY_FIRST = timedelta(milliseconds=200)
SETTLE_RETRY_MAX = timedelta(seconds=10)

log = logging.getLogger("acta.worker")


class TickOutcome(StrEnum):
    """What one claim-and-run did to the job."""

    NOTHING_CLAIMED = "nothing-claimed"
    COMPLETED = "completed"
    FAILED = "failed"
    REARMED = "rearmed"
    CANCELLED = "cancelled"
    LEASE_LOST = "lease-lost"
    KILLED = "killed"


class Stop(StrEnum):
    """Why the worker stopped a run before its handler returned."""

    TIMEOUT = "timeout"
    CANCEL = "cancel"
    LEASE_LOST = "lease-lost"
    SHUTDOWN = "shutdown"
    KILLED = "killed"


@dataclass(eq=False)
class Run:
    """A job this worker holds, from claim to settle; the heartbeat renews its lease.

    Create it on the event loop; ``stop`` may be called from any thread (a sync handler in the
    test host can kill its own worker)."""

    job: Claimed
    loop: asyncio.AbstractEventLoop
    started: Started | None = None
    """Set when the claim already started the run (the direct profile)."""
    holds_slot: bool = False
    """Whether the run occupies one of the worker's executors right now."""
    cancellation: Cancellation = field(default_factory=Cancellation)
    stop_reason: Stop | None = None
    stopped: asyncio.Event = field(default_factory=asyncio.Event)
    _on_stop: Callable[[], None] | None = None

    def stop(self, reason: Stop) -> None:
        if self.stop_reason is None:
            self.stop_reason = reason
            self.cancellation.cancel(reason.value)
            self.loop.call_soon_threadsafe(self._stopped)

    def _stopped(self) -> None:
        self.stopped.set()
        if self._on_stop is not None:
            self._on_stop()

    def watch(self, callback: Callable[[], None] | None) -> None:
        """Call ``callback`` on the loop once the run is stopped (now, if it already is);
        None forgets it. One watcher at a time: the run's handler race."""
        self._on_stop = callback
        if callback is not None and self.stopped.is_set():
            callback()


class HandlerMisbehaved(Exception):
    """A handler ended in a way a run cannot: it raised SystemExit, or cancelled itself
    (raised asyncio.CancelledError without being asked to stop). Recorded as its failure."""


async def _contained(awaitable: Any) -> Any:
    try:
        return await awaitable
    except SystemExit as exc:  # would stop the whole event loop, and every other run with it
        raise HandlerMisbehaved(f"the handler raised SystemExit({exc.code!r})") from None


def _call_contained(target: Callable[..., Any], args: list[Any], kwargs: dict[str, Any]) -> Any:
    try:
        return target(*args, **kwargs)
    except SystemExit as exc:
        raise HandlerMisbehaved(f"the handler raised SystemExit({exc.code!r})") from None


class Interrupted(Exception):
    def __init__(self, reason: Stop) -> None:
        super().__init__(reason.value)
        self.reason = reason


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
            returned = await _invoke(
                worker, run, definition, attempt.context, policy.timeout, value
            )
        finally:
            worker.free_slot(run)  # the next run may start while this one settles
    except Interrupted as stop:
        if stop.reason is Stop.TIMEOUT:
            limit = policy.timeout.total_seconds() if policy.timeout else 0
            message = f"execution timed out after {limit:g} s"
            return await attempt.fail(Outcome.TIMED_OUT, Reason.TIMEOUT, message)
        return await _interrupted(worker, run, definition, execution, attempt.elapsed())
    except Exception as exc:
        return await attempt.fail(Outcome.FAILED, Reason.HANDLER_ERROR, _describe(exc))
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
        await _invoke(worker, run, None, attempt.context, None, system.run)
    except Interrupted:
        return await _interrupted(
            worker, run, attempt.definition, attempt.execution, attempt.elapsed()
        )
    except Exception as exc:
        return await attempt.rearm(system.every(worker), _describe(exc))
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
            if worker.killed or worker.giving_up.is_set():
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


async def _invoke(
    worker: Worker,
    run: Run,
    definition: JobDefinition[Any, Any] | None,
    context: Callable[[], JobContext],
    limit: Any,
    value: Any,
) -> Any:
    """Run the handler, racing its timeout and the worker's stop request. ``context`` builds
    the JobContext, only for handlers that take one."""
    loop = asyncio.get_running_loop()
    handler: asyncio.Future[Any]
    thread: concurrent.futures.Future[Any] | None = None
    if definition is None:  # a system job: ``value`` is its coroutine function
        handler = asyncio.ensure_future(_contained(value(worker, context())))
    else:
        args, kwargs = _arguments(definition, value, context)
        target: Callable[..., Any] | None = definition.handler
        assert target is not None, "handler-less definitions are handed back before this"
        if definition.is_async:
            handler = asyncio.ensure_future(_contained(target(*args, **kwargs)))
        else:
            thread = worker.threads.submit(_call_contained, target, args, kwargs)
            handler = asyncio.wrap_future(thread, loop=loop)
    # One future that the first finisher completes: the handler, a stop request, the deadline.
    # (Callbacks, not a task per racer: this runs once per job on the hot path.)
    first: asyncio.Future[None] = loop.create_future()

    def wake(_: object = None) -> None:
        if not first.done():
            first.set_result(None)

    handler.add_done_callback(wake)
    run.watch(wake)
    deadline = None if limit is None else worker.clock.now() + limit
    timer = None
    if deadline is not None:
        timer = asyncio.ensure_future(worker.clock.sleep_until(deadline))
        timer.add_done_callback(wake)
    try:
        await first
    finally:
        run.watch(None)
        if timer is not None:
            timer.cancel()
    # The clock decides a timeout, not the order in which the racers' callbacks happened to
    # run: a handler that returns at or after its deadline timed out; its late value is dropped.
    in_time = deadline is None or worker.clock.now() < deadline
    if handler.done() and run.stop_reason is None and in_time:
        if handler.cancelled():  # nobody asked it to stop: the handler cancelled itself
            raise HandlerMisbehaved(
                "the handler raised asyncio.CancelledError without being asked to stop"
            )
        return handler.result()
    reason = run.stop_reason or Stop.TIMEOUT
    run.cancellation.cancel(reason.value)
    if not handler.done():
        if thread is not None:
            worker.abandon(thread, run)
        handler.cancel()  # interrupts async handlers; a thread keeps running, flagged
        await asyncio.wait({handler}, timeout=CANCEL_GRACE_SECONDS)
    if handler.done() and not handler.cancelled():
        handler.exception()  # retrieved so asyncio does not log it as never retrieved
    raise Interrupted(reason)


def _arguments(
    definition: JobDefinition[Any, Any], value: Any, context: Callable[[], JobContext]
) -> tuple[list[Any], dict[str, Any]]:
    args: list[Any] = [value] if definition.takes_input else []
    kwargs = {definition.context_param: context()} if definition.context_param else {}
    return args, kwargs


def decode_input(definition: JobDefinition[Any, Any], job: Claimed) -> Any:
    from acta.codec import codecs

    data = codecs.by_code(job.input_codec).decode(job.input)
    return from_data(data, definition.input_type, "input")


def encode_result(definition: JobDefinition[Any, Any], value: Any) -> tuple[int, bytes] | None:
    if value is None:
        return None
    from acta.codec import check_size

    tp = definition.result_type if definition.result_type is not None else Any
    data = to_data(value, tp, "result")
    codec = (
        definition.result_codec if definition.result_type is not None else _codec_for_value(value)
    )
    body = codec.encode(data)
    return codec.code, check_size(body, definition.app.payload_cap, "result")


def _codec_for_value(value: Any) -> Any:
    from acta.shape import codec_for

    return codec_for(type(value) if isinstance(value, str | bytes) else Any)


# Frames from these places are acta's or the event loop's plumbing, not the user's story.
_PLUMBING = (
    os.path.dirname(__file__) + os.sep,
    os.path.join("concurrent", "futures"),
    os.path.join("asyncio", ""),
)
_FRAMES_KEPT = 8


def _describe(exc: BaseException) -> str:
    """The error for the ledger: its type and message, then the handler's own frames."""
    head = f"{type(exc).__name__}: {exc}"
    if isinstance(exc, JobCancelledError):
        return head
    frames = [
        frame
        for frame in traceback.extract_tb(exc.__traceback__)
        if not any(part in frame.filename for part in _PLUMBING)
    ]
    if not frames:
        return head
    shown = "".join(traceback.format_list(frames[-_FRAMES_KEPT:]))
    return f"{head}\nTraceback (most recent call last):\n{shown}"
