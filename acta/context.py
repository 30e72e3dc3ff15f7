"""What a running handler receives: the job's identity, its run counters, a logger, a
cancellation signal it can poll (sync handlers) or that interrupts it (async handlers), and the
durable operations (steps, variables, progress, sleeps, signals, children, notes, alerts).

The context performs no I/O itself: its durable calls go through a port the worker gives it
(``DurableOps``, implemented in ``acta.runtime.durable``), so this module stays below the
ledger. ``acta.sync_context`` has the blocking twin for sync handlers.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Protocol, Unpack

from acta.backoff import Backoff
from acta.errors import ValidationError
from acta.ids import JobRef
from acta.lock_context import AsyncLock
from acta.names import validate_key
from acta.option_types import EnqueueOptions
from acta.outcome import ChildOutcome, Firing, SignalResult


class JobCancelledError(Exception):
    """Raised by ``raise_if_cancelled`` when the run must stop (cancel, timeout, shutdown)."""


class Cancellation:
    """A one-way flag shared by the worker and a handler run.

    Async handlers are also interrupted with ``asyncio.CancelledError``; sync handlers, which
    Python cannot interrupt, should poll ``cancelled`` or call ``raise_if_cancelled`` between
    units of work.
    """

    def __init__(self) -> None:
        # A plain flag under a lock; the threading.Event that blocking waiters need is made
        # only when one waits (most runs never do, and an Event costs a Condition).
        self._lock = threading.Lock()
        self._set = False
        self._event: threading.Event | None = None
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = []
        self.reason: str | None = None

    @property
    def cancelled(self) -> bool:
        return self._set

    def cancel(self, reason: str) -> None:
        with self._lock:
            if self._set:
                return
            self.reason = reason
            self._set = True
            event = self._event
            waiters, self._waiters = self._waiters, []
        if event is not None:
            event.set()
        for loop, waiter in waiters:
            loop.call_soon_threadsafe(waiter.set)

    def raise_if_cancelled(self) -> None:
        if self._set:
            raise JobCancelledError(self.reason or "cancelled")

    def wait(self, timeout: float | None = None) -> bool:
        """Block a sync handler until cancelled or ``timeout`` seconds pass; True if cancelled."""
        with self._lock:
            if self._set:
                return True
            if self._event is None:
                self._event = threading.Event()
            event = self._event
        return event.wait(timeout)  # wall-clock wait: the handler's own, in its own thread

    async def wait_async(self) -> None:
        """Wait (async) until the run is cancelled."""
        event = asyncio.Event()
        with self._lock:
            if self._set:
                return
            self._waiters.append((asyncio.get_running_loop(), event))
        await event.wait()


class DurableOps(Protocol):
    """The port a context's durable calls go through (``acta.runtime.durable``)."""

    async def step_begin(
        self, name: str, fn: Callable[..., Any], options: StepOptions
    ) -> tuple[bool, Any]: ...
    async def step_finish(self, name: str, value: Any, options: StepOptions) -> Any: ...
    async def step_failed(self, name: str, error: BaseException, options: StepOptions) -> None: ...
    async def step_pause(self, options: StepOptions, failures: int) -> None: ...

    async def get(self, name: str, tp: Any, default: Any) -> Any: ...
    async def set(self, name: str, value: Any, tp: Any) -> None: ...
    async def progress(self, done: float, total: float | None, message: str | None) -> None: ...
    async def sleep(self, name: str | None, until: datetime | None, delay: Any) -> None: ...
    async def wait_signal(self, name: str, tp: Any, timeout: Any, try_form: bool) -> Any: ...
    async def spawn(
        self, job: Any, inputs: list[Any], names: list[str], options: EnqueueOptions
    ) -> list[JobRef]: ...
    async def wait_children(self, timeout: Any) -> list[ChildOutcome]: ...
    async def note(self, text: str) -> None: ...
    async def alert(self, title: str, detail: str | None, severity: str) -> None: ...
    async def lock_acquire(self, key: str, limit: timedelta | None) -> None: ...
    async def lock_release(self, key: str) -> None: ...


@dataclass(frozen=True, slots=True)
class StepOptions:
    """How a durable step runs: at most once, or with its own retries."""

    at_most_once: bool = False
    attempts: int = 1
    backoff: Backoff | None = None
    returns: Any = None


class JobContext:
    """The handler's view of the job it is running, and its durable operations.

    Async handlers ``await`` the durable methods; sync handlers receive a ``SyncJobContext``,
    whose same-named methods block instead. Every durable name (steps, variables, sleeps,
    signals, children) is a stored key: keep it stable across deploys.
    """

    __slots__ = (
        "_now",
        "_ops",
        "attempt",
        "cancellation",
        "correlation_key",
        "created_at",
        "deadline",
        "deadline_policy",
        "execution",
        "firing",
        "job",
        "logger",
        "max_attempts",
        "name",
        "parent",
        "root",
    )

    def __init__(
        self,
        *,
        job: JobRef,
        name: str,
        attempt: int,
        max_attempts: int,
        execution: int,
        created_at: datetime,
        correlation_key: str | None,
        logger: logging.LoggerAdapter[logging.Logger],
        cancellation: Cancellation | None = None,
        parent: JobRef | None = None,
        root: JobRef | None = None,
        deadline: datetime | None = None,
        deadline_policy: str | None = None,
        ops: DurableOps | None = None,
        now: Callable[[], datetime] | None = None,
        firing: Firing | None = None,
    ) -> None:
        self.job = job
        self.name = name
        self.attempt = attempt
        """1-based: the attempt this run would spend if it fails."""
        self.max_attempts = max_attempts
        self.execution = execution
        """1-based count of handler runs of this job, including this one."""
        self.created_at = created_at
        self.correlation_key = correlation_key
        self.logger = logger
        self.cancellation = cancellation or Cancellation()
        self.parent = parent
        """The job that spawned this one, for a child job."""
        self.root = root
        """The first ancestor of this job's family, for a child job."""
        self.deadline = deadline
        self.deadline_policy = deadline_policy
        """``"strict"`` (the job is failed when the deadline passes) or ``"advisory"``."""
        self._ops = ops
        self._now = now
        self.firing = firing
        """For a run a schedule fired: the scheduled instant and which schedules fired."""

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name} {self.job} execution {self.execution}>"

    @property
    def cancelled(self) -> bool:
        """True once the worker asked this run to stop."""
        return self.cancellation.cancelled

    def raise_if_cancelled(self) -> None:
        """Raise JobCancelledError if the worker asked this run to stop."""
        self.cancellation.raise_if_cancelled()

    @property
    def is_last_attempt(self) -> bool:
        return self.attempt >= self.max_attempts

    def now(self) -> datetime:
        """The current instant by the runtime's clock, timezone-aware UTC: the worker's clock
        in production, the test host's manual clock under the host. Use it rather than the
        system time so a handler's time is the one its job's instants are judged by."""
        if self._now is None:  # a context made by hand, outside any worker
            from acta.clock import SystemClock

            return SystemClock().now()
        return self._now()

    @property
    def is_overdue(self) -> bool:
        """Whether the job's deadline has passed (by the worker's clock)."""
        if self.deadline is None or self._now is None:
            return False
        return self._now() >= self.deadline

    @property
    def ops(self) -> DurableOps:
        if self._ops is None:
            raise RuntimeError("this context has no ledger behind it (it was built by hand)")
        return self._ops

    # -- durable operations (async) ----------------------------------------------------------

    async def step(
        self,
        name: str,
        fn: Callable[..., Any],
        /,
        *args: Any,
        at_most_once: bool = False,
        attempts: int = 1,
        backoff: Backoff | str | None = None,
        returns: Any = None,
        **kwargs: Any,
    ) -> Any:
        """Run ``fn(*args, **kwargs)`` once as the step ``name`` and store its result; on
        re-entry return the stored result without calling ``fn``. ``fn`` may be a coroutine
        function. ``at_most_once`` records the intent first and never calls ``fn`` again after
        a crash (StepInterruptedError instead); ``attempts``/``backoff`` retry ``fn`` in place.
        ``returns`` is the result's type (default: ``fn``'s return annotation)."""
        options = step_options(at_most_once, attempts, backoff, returns)
        ops = self.ops
        found, value = await ops.step_begin(name, fn, options)
        if found:
            return value
        failures = 0
        while True:
            try:
                value = fn(*args, **kwargs)
                if inspect.isawaitable(value):
                    value = await value
            except Exception as exc:
                failures += 1
                if options.at_most_once or failures >= options.attempts:
                    await ops.step_failed(name, exc, options)
                    raise
                await ops.step_pause(options, failures)
                continue
            return await ops.step_finish(name, value, options)

    async def get(self, name: str, default: Any = None, *, type: Any = None) -> Any:
        """The durable variable ``name`` (decoded as ``type``), or ``default`` if never set."""
        return await self.ops.get(name, type, default)

    async def set(self, name: str, value: Any, *, type: Any = None) -> None:
        """Store ``value`` as the durable variable ``name`` (it outlives crashes and waits)."""
        await self.ops.set(name, value, type)

    async def get_or_set(self, name: str, compute: Callable[[], Any], *, type: Any = None) -> Any:
        """The variable ``name``; computed by ``compute()`` (sync or async) and stored the first
        time, so every later execution sees the same value."""
        missing = _MISSING
        found = await self.ops.get(name, type, missing)
        if found is not missing:
            return found
        value = compute()
        if inspect.isawaitable(value):
            value = await value
        await self.ops.set(name, value, type)
        return value

    async def set_progress(
        self, done: float, total: float | None = None, message: str | None = None
    ) -> None:
        """Write the job's progress slot ("43,000 of 90,000"), readable by SQL, CLI and API."""
        await self.ops.progress(done, total, message)

    async def sleep(self, duration: timedelta | str | float, *, name: str | None = None) -> None:
        """Leave the worker until ``duration`` has passed, counted from the first time this
        sleep was reached (re-entry does not restart it). Unnamed sleeps are told apart by
        their order in the execution: name them when that order can change."""
        await self.ops.sleep(name, None, duration)

    async def sleep_until(self, instant: datetime, *, name: str | None = None) -> None:
        """Leave the worker until ``instant``."""
        await self.ops.sleep(name, instant, None)

    async def wait_signal(
        self, name: str, *, type: Any = None, timeout: timedelta | str | float | None = None
    ) -> Any:
        """Wait (suspended, no lease held) until ``app.signal(ref, name, payload)``; returns the
        payload. A timeout is armed once; when it passes, the job is cancelled."""
        return await self.ops.wait_signal(name, type, timeout, False)

    async def try_wait_signal(
        self, name: str, *, timeout: timedelta | str | float, type: Any = None
    ) -> SignalResult[Any]:
        """Like ``wait_signal``, but a timeout answers ``SignalResult(received=False)``."""
        result: SignalResult[Any] = await self.ops.wait_signal(name, type, timeout, True)
        return result

    async def spawn(
        self, job: Any, input: Any = None, *, name: str, **options: Unpack[EnqueueOptions]
    ) -> JobRef:
        """Enqueue a child job named ``name`` (unique under this job: a re-entry finds it
        instead of spawning it again). Options are those of ``enqueue``."""
        refs = await self.ops.spawn(job, [input], [name], options)
        return refs[0]

    async def spawn_many(
        self, job: Any, inputs: Sequence[Any], *, group: str, **options: Unpack[EnqueueOptions]
    ) -> list[JobRef]:
        """Enqueue one child per input, named ``{group}-{index}``, in one transaction."""
        names = child_names(group, inputs)
        return await self.ops.spawn(job, list(inputs), names, options)

    async def wait_children(
        self, *, timeout: timedelta | str | float | None = None
    ) -> list[ChildOutcome]:
        """Wait (suspended, no lease held) until every child spawned so far has finished;
        their outcomes in spawn order. With ``timeout``, armed once, the children still
        unfinished when it passes are cancelled and reported ``timed_out``."""
        return await self.ops.wait_children(timeout)

    async def note(self, text: str) -> None:
        """Append ``text`` to the job's timeline (written whatever the audit level)."""
        await self.ops.note(text)

    async def alert(
        self, title: str, detail: str | None = None, *, severity: str = "warning"
    ) -> None:
        """Open an alert row for operators (``alerts_view``)."""
        await self.ops.alert(title, detail, severity)

    def lock(self, key: str, *, timeout: timedelta | str | float | None = None) -> AsyncLock:
        """``async with ctx.lock(key, timeout="5s"):`` holds the lock ``key`` (across every
        worker) for the block, waiting for it first. The lock rides this run's lease: it is
        released when the block exits, and if the worker dies, when recovery takes the lease
        back. A wait longer than ``timeout`` raises ``LockTimeoutError``; ``None`` waits until
        the run ends."""
        return AsyncLock(lambda: self.ops, key, timeout)


_MISSING: Any = object()


def step_options(
    at_most_once: bool, attempts: int, backoff: Backoff | str | None, returns: Any
) -> StepOptions:
    """Check a step's options at the call site."""
    if isinstance(attempts, bool) or not isinstance(attempts, int) or not 1 <= attempts <= 100:
        raise ValidationError("attempts", f"got {attempts!r}", "an int from 1 to 100")
    if at_most_once and (attempts != 1 or backoff is not None):
        raise ValidationError(
            "at_most_once",
            "an at-most-once step cannot be retried",
            "leave attempts at 1 and backoff unset",
        )
    parsed = Backoff.parse(backoff) if isinstance(backoff, str) else backoff
    if parsed is not None and not isinstance(parsed, Backoff):
        raise ValidationError("backoff", f"got {backoff!r}", "a Backoff or a backoff expression")
    return StepOptions(bool(at_most_once), attempts, parsed, returns)


CHILD_NAME_MAX = 200
"""The longest name a child may have (the durable port checks every child's name too)."""


def child_names(group: object, inputs: object) -> list[str]:
    """The names ``spawn_many`` gives its children, ``{group}-{index}``, checked at the call
    site: ``group`` is a name of its own (room left for the longest ``-{index}``), and
    ``inputs`` a sequence of inputs (a str is one input, not many), so a slip is refused by
    its argument's name."""
    if not isinstance(inputs, Sequence) or isinstance(inputs, (str, bytes, bytearray)):
        raise ValidationError(
            "inputs", f"got {type(inputs).__name__} {inputs!r:.60}", "a list or tuple of inputs"
        )
    suffix = len(f"-{max(len(inputs) - 1, 0)}")
    validate_key(group, field="group", max_length=CHILD_NAME_MAX - suffix)  # type: ignore[arg-type]
    return [f"{group}-{index}" for index in range(len(inputs))]


def job_logger(name: str, ref: JobRef, execution: int) -> logging.LoggerAdapter[logging.Logger]:
    """A logger named ``acta.job.<name>`` whose records carry the job ref and execution."""
    return logging.LoggerAdapter(
        logging.getLogger(f"acta.job.{name}"),
        {"job_ref": str(ref), "execution": execution},
    )
