"""Executor slots: how many runs a worker may have in its handlers at once.

A run takes a slot before its handler starts and gives it back the moment the handler ends,
so the next run starts while the previous one's settle commits. A sync handler that outlives
its run (Python cannot stop a thread) keeps its slot until the thread returns, and counts
against claims meanwhile, so new runs never queue behind a wedged thread unseen.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
from collections.abc import Callable, Collection
from typing import Any

from acta.runtime.run import Run


class Slots:
    """``size`` executor slots; ``on_free`` is called (on the loop) when a thread gives one
    back, so the worker can claim again."""

    def __init__(self, size: int, on_free: Callable[[], None]) -> None:
        self.size = size
        self._on_free = on_free
        self._semaphore: asyncio.Semaphore | None = None  # made on the loop that uses it
        self.abandoned: set[concurrent.futures.Future[Any]] = set()

    def free(self, held: Collection[Run]) -> int:
        """Slots for new claims: neither held by a run nor by an abandoned thread (a thread
        whose run is still held counts once, with its run)."""
        self.abandoned = {f for f in self.abandoned if not f.done()}
        threads = {run.thread for run in held if run.thread is not None}
        return self.size - len(held) - len(self.abandoned - threads)

    async def take(self, run: Run) -> None:
        """Wait for a slot, unless the run is stopped first (then it goes on without one, only
        to hand its job back)."""
        if self._semaphore is None:
            self._semaphore = asyncio.Semaphore(self.size)
        semaphore = self._semaphore
        if not semaphore.locked():
            await semaphore.acquire()
            run.holds_slot = True
            return
        acquiring = asyncio.ensure_future(semaphore.acquire())
        stopping = asyncio.ensure_future(run.stopped.wait())
        await asyncio.wait({acquiring, stopping}, return_when=asyncio.FIRST_COMPLETED)
        stopping.cancel()
        if not acquiring.done():
            acquiring.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await acquiring
        if acquiring.done() and not acquiring.cancelled():
            run.holds_slot = True

    def announce(self) -> None:
        """Say an executor is free for new claims without a slot changing hands (a bulk run
        whose settle waits for its flush window no longer counts against the executors)."""
        self._on_free()

    def give_back(self, run: Run) -> None:
        """The run's handler is done. Safe to call more than once."""
        if run.holds_slot and self._semaphore is not None:
            run.holds_slot = False
            self._semaphore.release()

    def abandon(self, thread: concurrent.futures.Future[Any], run: Run) -> None:
        """The run is over but its sync handler's thread is not: the thread keeps the run's
        slot until it returns."""
        self.abandoned.add(thread)
        loop = asyncio.get_running_loop()
        keeps_slot, run.holds_slot = run.holds_slot, False  # the thread frees it, not the run

        def freed() -> None:
            self.abandoned.discard(thread)  # on the loop: the set is only touched there
            if keeps_slot and self._semaphore is not None:
                self._semaphore.release()
            self._on_free()

        def returned(_: object) -> None:
            if not loop.is_closed():
                loop.call_soon_threadsafe(freed)

        thread.add_done_callback(returned)
