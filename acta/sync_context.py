"""The job context of a sync handler: the same durable operations, blocking.

A sync handler runs in a worker thread; the ledger work of each call runs on the worker's
event loop and the thread waits for it (``asyncio.run_coroutine_threadsafe``). Step bodies run
in the handler's own thread, so thread-local state and blocking libraries behave as they do
in the rest of the handler.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime, timedelta
from typing import Any, TypeVar, Unpack

from acta.backoff import Backoff
from acta.context import _MISSING, JobContext, child_names, step_options
from acta.ids import JobRef
from acta.lock_context import SyncLock
from acta.option_types import EnqueueOptions
from acta.outcome import ChildOutcome, SignalResult

T = TypeVar("T")


class SyncJobContext(JobContext):
    """``JobContext`` for sync handlers (annotate the parameter with this class): every
    durable method has the same name and arguments and blocks until done."""

    __slots__ = ("_loop",)

    def __init__(self, *, loop: asyncio.AbstractEventLoop, **fields: Any) -> None:
        super().__init__(**fields)
        self._loop = loop

    def _wait(self, awaitable: Awaitable[T]) -> T:
        async def run() -> T:
            return await awaitable

        return asyncio.run_coroutine_threadsafe(run(), self._loop).result()

    def step(
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
        """Blocking ``JobContext.step``; ``fn`` runs in this (the handler's) thread."""
        options = step_options(at_most_once, attempts, backoff, returns)
        ops = self.ops
        found, value = self._wait(ops.step_begin(name, fn, options))
        if found:
            return value
        failures = 0
        while True:
            try:
                value = fn(*args, **kwargs)
                if inspect.isawaitable(value):
                    value = self._wait(value)
            except Exception as exc:
                failures += 1
                if options.at_most_once or failures >= options.attempts:
                    self._wait(ops.step_failed(name, exc, options))
                    raise
                self._wait(ops.step_pause(options, failures))
                continue
            return self._wait(ops.step_finish(name, value, options))

    def get(self, name: str, default: Any = None, *, type: Any = None) -> Any:
        return self._wait(self.ops.get(name, type, default))

    def set(self, name: str, value: Any, *, type: Any = None) -> None:  # type: ignore[override]
        self._wait(self.ops.set(name, value, type))

    def get_or_set(self, name: str, compute: Callable[[], Any], *, type: Any = None) -> Any:
        found = self._wait(self.ops.get(name, type, _MISSING))
        if found is not _MISSING:
            return found
        value = compute()
        self._wait(self.ops.set(name, value, type))
        return value

    def set_progress(  # type: ignore[override]
        self, done: float, total: float | None = None, message: str | None = None
    ) -> None:
        self._wait(self.ops.progress(done, total, message))

    def sleep(  # type: ignore[override]
        self, duration: timedelta | str | float, *, name: str | None = None
    ) -> None:
        self._wait(self.ops.sleep(name, None, duration))

    def sleep_until(self, instant: datetime, *, name: str | None = None) -> None:  # type: ignore[override]
        self._wait(self.ops.sleep(name, instant, None))

    def wait_signal(
        self, name: str, *, type: Any = None, timeout: timedelta | str | float | None = None
    ) -> Any:
        return self._wait(self.ops.wait_signal(name, type, timeout, False))

    def try_wait_signal(  # type: ignore[override]
        self, name: str, *, timeout: timedelta | str | float, type: Any = None
    ) -> SignalResult[Any]:
        result: SignalResult[Any] = self._wait(self.ops.wait_signal(name, type, timeout, True))
        return result

    def spawn(  # type: ignore[override]
        self, job: Any, input: Any = None, *, name: str, **options: Unpack[EnqueueOptions]
    ) -> JobRef:
        return self._wait(self.ops.spawn(job, [input], [name], options))[0]

    def spawn_many(  # type: ignore[override]
        self, job: Any, inputs: Sequence[Any], *, group: str, **options: Unpack[EnqueueOptions]
    ) -> list[JobRef]:
        names = child_names(group, inputs)
        return self._wait(self.ops.spawn(job, list(inputs), names, options))

    def wait_children(  # type: ignore[override]
        self, *, timeout: timedelta | str | float | None = None
    ) -> list[ChildOutcome]:
        return self._wait(self.ops.wait_children(timeout))

    def note(self, text: str) -> None:  # type: ignore[override]
        self._wait(self.ops.note(text))

    def alert(  # type: ignore[override]
        self, title: str, detail: str | None = None, *, severity: str = "warning"
    ) -> None:
        self._wait(self.ops.alert(title, detail, severity))

    def lock(  # type: ignore[override]
        self, key: str, *, timeout: timedelta | str | float | None = None
    ) -> SyncLock:
        """``with ctx.lock(key, timeout="5s"):``, blocking (see ``JobContext.lock``)."""
        return SyncLock(lambda: self.ops, self._wait, key, timeout)
