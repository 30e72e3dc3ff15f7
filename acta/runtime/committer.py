"""The committer: a worker's starts, admissions and settles, group-committed.

Runs whose writes of one kind are ready together share one transaction: runs that finish while
a settle transaction is in flight queue up and go together in the next one. Nothing waits for a
timer: an idle worker commits a lone write at once, and a busy one amortises each commit over
everything that finished meanwhile. Every write is still committed before its run counts as
done, so durability is the same as one transaction per write.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Generic, TypeVar

from acta.ledger.admission import Admission, admit
from acta.ledger.claim import start_many
from acta.ledger.facade import Ledger
from acta.ledger.transition import apply_transitions
from acta.model.codes import JobStatus
from acta.model.rows import Bounced, Claimed, Started, Transition
from acta.runtime.identity import Identity

C = TypeVar("C")
R = TypeVar("R")


class GroupCommit(Generic[C, R]):
    """Submit items one by one; ``commit`` receives them in batches and answers each."""

    def __init__(
        self, commit: Callable[[Sequence[C]], Awaitable[Sequence[R]]], limit: int = 500
    ) -> None:
        self._commit = commit
        self._limit = limit
        self._pending: list[tuple[C, asyncio.Future[R]]] = []
        self._flushing: asyncio.Task[None] | None = None

    async def submit(self, item: C) -> R:
        future: asyncio.Future[R] = asyncio.get_running_loop().create_future()
        self._pending.append((item, future))
        if self._flushing is None or self._flushing.done():
            self._flushing = asyncio.ensure_future(self._flush())
        return await future

    async def _flush(self) -> None:
        while self._pending:
            batch, self._pending = self._pending[: self._limit], self._pending[self._limit :]
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

    def __init__(self, ledger: Ledger, identity: Identity) -> None:
        self.ledger = ledger
        self.identity = identity
        self._starts: GroupCommit[tuple[Claimed, bool], Started | None] = GroupCommit(
            self._start_batch
        )
        self._settles: GroupCommit[Transition, JobStatus | None] = GroupCommit(self._settle_batch)
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

    async def settle(self, plan: Transition) -> JobStatus | None:
        """Apply one run's final transition; the status written, or None when fenced."""
        return await self._settles.submit(plan)

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
        return await ledger.run_async(lambda: apply_transitions(plans, now, fused), name="settle")
