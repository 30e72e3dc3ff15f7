"""The committer: a worker's starts, admissions and settles, group-committed.

Runs whose writes of one kind are ready together share one transaction: runs that finish while
a settle transaction is in flight queue up and go together in the next one. On the ``buffered``
and ``direct`` profiles nothing waits for a timer: an idle worker commits a lone write at once,
and a busy one amortises each commit over everything that finished meanwhile. Every write is
still committed before its run counts as done, so durability is the same as one transaction per
write.

The ``bulk`` profile gives settles a flush window: a settle waits up to ``flush`` for others to
join it (or until ``flush_max`` are waiting) and they all go in one fenced transaction. The run
still counts as done only once its settle is committed, and its lease is renewed meanwhile; what
changes is that a crash loses the settles of the open window, whose jobs then run again after
recovery. A settle marked urgent (a run that used durable state, a schedule firing, acta's own
jobs, a shutdown) cuts the window short.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from datetime import timedelta
from typing import Generic, TypeVar

from acta.clock import Clock
from acta.ledger.admission import Admission, admit
from acta.ledger.claim import start_many
from acta.ledger.facade import Ledger
from acta.ledger.transition import apply_transitions
from acta.model.codes import JobStatus
from acta.model.rows import Bounced, Claimed, Started, Transition
from acta.runtime.identity import Identity
from acta.runtime.settings import WorkerSettings

C = TypeVar("C")
R = TypeVar("R")


class GroupCommit(Generic[C, R]):
    """Submit items one by one; ``commit`` receives them in batches and answers each.

    Without a ``window`` a batch is committed as soon as the previous one is done. With one,
    the first item of a batch waits up to ``window`` on ``clock`` for others, unless an urgent
    item arrives or ``limit`` are waiting. ``halted`` is asked before every commit: once it
    says so (the worker died) nothing more is written, and each waiting item is answered
    ``None`` (its caller sees the worker is gone)."""

    def __init__(
        self,
        commit: Callable[[Sequence[C]], Awaitable[Sequence[R]]],
        limit: int = 500,
        *,
        window: timedelta | None = None,
        clock: Clock | None = None,
        halted: Callable[[], bool] = lambda: False,
    ) -> None:
        if window is not None and clock is None:
            raise ValueError("a flush window needs a clock")
        self._commit = commit
        self._limit = limit
        self._window = window
        self._clock = clock
        self._halted = halted
        self._hurry: asyncio.Event | None = None
        self._pending: list[tuple[C, asyncio.Future[R | None]]] = []
        self._flushing: asyncio.Task[None] | None = None

    @property
    def waiting(self) -> int:
        """Items submitted and not yet committed (the open window, on a windowed commit)."""
        return len(self._pending)

    def hurry(self) -> None:
        """Commit what is waiting now rather than at the end of the window (on the loop)."""
        if self._hurry is not None:
            self._hurry.set()

    def drain(self) -> None:
        """From now on commit at once, as an unwindowed commit does (a shutdown)."""
        self._window = None
        self.hurry()

    async def submit(self, item: C, urgent: bool = False) -> R | None:
        future: asyncio.Future[R | None] = asyncio.get_running_loop().create_future()
        if self._hurry is None:
            self._hurry = asyncio.Event()
        self._pending.append((item, future))
        if urgent or len(self._pending) >= self._limit:
            self._hurry.set()
        if self._flushing is None or self._flushing.done():
            self._flushing = asyncio.ensure_future(self._flush())
        return await future

    async def _flush(self) -> None:
        hurry = self._hurry
        assert hurry is not None
        while self._pending:
            if self._window is not None and self._clock is not None and not hurry.is_set():
                await self._clock.sleep_until(self._clock.now() + self._window, hurry)
            hurry.clear()  # an urgent item that comes during this commit hurries the next one
            batch, self._pending = self._pending[: self._limit], self._pending[self._limit :]
            if self._halted():
                # The process is gone: what waited in the window is lost, as in a crash.
                for _, future in batch + self._pending:
                    if not future.done():
                        future.set_result(None)
                self._pending = []
                return
            try:
                answers = await self._commit([item for item, _ in batch])
            except BaseException as exc:
                for _, future in batch:
                    if not future.done():
                        future.set_exception(exc)
                if isinstance(exc, asyncio.CancelledError):
                    raise
                continue
            for (_, future), answer in zip(batch, answers, strict=True):
                if not future.done():
                    future.set_result(answer)


class Committer:
    """Starts (dispatched -> executing) and settles (a run's final transition) of one worker,
    each kind group-committed."""

    def __init__(
        self,
        ledger: Ledger,
        identity: Identity,
        settings: WorkerSettings | None = None,
        halted: Callable[[], bool] = lambda: False,
        ready: Callable[[], None] | None = None,
    ) -> None:
        self.ledger = ledger
        self.identity = identity
        self._ready = ready
        """Rung after a settle commit that made work due now (the process bell's ring_all)."""
        self._starts: GroupCommit[tuple[Claimed, bool], Started | None] = GroupCommit(
            self._start_batch
        )
        self.windowed = settings is not None and settings.profile == "bulk"
        """Whether settles wait for a flush window (the bulk profile)."""
        self._settles: GroupCommit[Transition, JobStatus | None] = (
            GroupCommit(
                self._settle_batch,
                settings.flush_max,
                window=settings.flush,
                clock=ledger.clock,
                halted=halted,
            )
            if settings is not None and self.windowed
            else GroupCommit(self._settle_batch)
        )
        self._admissions: GroupCommit[Admission, Started | Bounced | None] = GroupCommit(
            self._admit_batch
        )

    async def start(self, job: Claimed, audit_started: bool) -> Started | None:
        """Start one run; None when its lease is gone (the refused write is recorded)."""
        return await self._starts.submit((job, audit_started))

    async def admit(self, item: Admission) -> Started | Bounced | None:
        """Pass one claimed job through its gates and start it: Bounced if a gate turned it
        away, None when its lease is gone. Jobs waiting for admission together share one
        transaction: one lock and one commit per gate and meter for all of them."""
        return await self._admissions.submit(item)

    async def settle(self, plan: Transition, urgent: bool = False) -> JobStatus | None:
        """Apply one run's final transition; the status written, or None when fenced (or, on
        a windowed committer, when the worker died before the window was flushed). ``urgent``
        cuts a flush window short."""
        return await self._settles.submit(plan, urgent)

    @property
    def unflushed(self) -> int:
        """Settles waiting for the flush window (always 0 off the bulk profile, or nearly)."""
        return self._settles.waiting

    def flush(self) -> None:
        """Commit the waiting settles now (on the loop)."""
        self._settles.hurry()

    def drain(self) -> None:
        """Shutdown: commit the waiting settles now, and every later one at once."""
        self._settles.drain()

    async def _start_batch(self, items: Sequence[tuple[Claimed, bool]]) -> list[Started | None]:
        ledger = self.ledger
        worker_id, now, fused = self.identity.worker_id, ledger.now(), ledger.fused
        return await ledger.run_async(
            lambda: start_many(items, worker_id, now, fused), name="start"
        )

    async def _admit_batch(self, items: Sequence[Admission]) -> list[Started | Bounced | None]:
        ledger = self.ledger
        worker_id, now = self.identity.worker_id, ledger.now()
        return await ledger.run_async(lambda: admit(items, worker_id, now), name="admit")

    async def _settle_batch(self, plans: Sequence[Transition]) -> list[JobStatus | None]:
        ledger = self.ledger
        now, fused = ledger.now(), ledger.fused
        written = await ledger.run_async(
            lambda: apply_transitions(plans, now, fused), name="settle"
        )
        if self._ready is not None and any(map(made_due, plans, written)):
            self._ready()  # committed: idle workers elsewhere may take what it made ready
        return written


def made_due(plan: Transition, status: JobStatus | None) -> bool:
    """Whether a committed settle may have made a job due now for some other worker: the end
    of a lane's head (its next member is promoted), of a child (its parent's latch may open),
    or a job back to ready at once (handed back, released, retried without delay). A retry
    due later rings nothing: the poll finds it when it is due."""
    if status is None:
        return False
    if status.terminal:
        return plan.lane_id is not None or plan.parent_id is not None
    return status is JobStatus.READY and plan.run_at is None and not plan.delay_ms
