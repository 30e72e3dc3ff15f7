"""The event-loop thread a sync test host runs the async host on, and the host's error.

``Portal`` is an event loop on a thread of its own, so sync code (a test, a sync handler) can
call async code and be called back. ``Portal.take()`` reuses a loop an earlier host gave back:
a test session starts a few threads, not one per test.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Coroutine
from typing import Any, ClassVar, TypeVar

T = TypeVar("T")


class HostError(AssertionError):
    """The host could not do what the test asked (stuck work, too many ticks)."""


class Portal:
    """An event loop on its own thread, so sync code can call async code and be called back.

    ``Portal.take()`` hands out one kept from an earlier host, and ``give_back`` keeps it for
    the next (its tasks finished first): a test session starts one thread, not one per test,
    and a session provider's async pool, which belongs to the loop, stays open with it."""

    _free: ClassVar[list[Portal]] = []
    _free_lock = threading.Lock()

    @classmethod
    def take(cls) -> Portal:
        with cls._free_lock:
            return cls._free.pop() if cls._free else cls()

    def give_back(self) -> None:
        # The host's leftover tasks go; a provider's (an async pool's guard) stay with the loop.
        asyncio.run_coroutine_threadsafe(_settle_tasks(keep=_provider_task), self.loop).result()
        with self._free_lock:
            self._free.append(self)

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(
            target=self.loop.run_forever, name="acta-test-host", daemon=True
        )
        self.thread.start()

    def call(self, coro: Coroutine[Any, Any, T]) -> T:
        if threading.current_thread() is self.thread:
            coro.close()
            raise HostError(
                "the sync test host was called from an async handler; use the async host "
                "(acta_async_host) when handlers are async and call back into the host"
            )
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    def close(self) -> None:
        # Tasks still on the loop (a sleeper's waiters a shutdown cancelled, say) get to finish
        # their cancellation first: a loop closed under a pending task logs "Task was
        # destroyed but it is pending!" when the task is collected.
        asyncio.run_coroutine_threadsafe(_settle_tasks(), self.loop).result()
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join()
        self.loop.close()


def _provider_task(task: asyncio.Task[Any]) -> bool:
    """Whether ``task`` runs a provider's code (a pool's own task, which lives with its loop)."""
    code = getattr(task.get_coro(), "cr_code", None)
    return code is not None and "/acta/provider/" in code.co_filename.replace("\\", "/")


async def _settle_tasks(keep: Callable[[asyncio.Task[Any]], bool] = lambda t: False) -> None:
    """Cancel every other task on the running loop (but those ``keep`` spares) and wait until
    each has finished."""
    for _ in range(10):  # a cancelled task may start another on its way out
        current = asyncio.current_task()
        others = [
            t for t in asyncio.all_tasks() if t is not current and not t.done() and not keep(t)
        ]
        if not others:
            return
        for task in others:
            task.cancel()
        await asyncio.gather(*others, return_exceptions=True)
