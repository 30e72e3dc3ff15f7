"""Group commit: many runs' writes of the same kind share one transaction.

Runs that finish while a settle transaction is in flight queue up and go together in the next
one. Nothing waits for a timer: an idle worker commits a lone write at once, and a busy one
amortises each commit over everything that finished meanwhile. Every write is still committed
before its run counts as done, so durability is the same as one transaction per write.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Generic, TypeVar

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
