"""Bells: ways to wake an idle worker sooner than its safety poll.

A bell never carries truth. It only says "look now"; the claim that follows reads the ledger,
and the 1 s safety poll keeps running whether or not any bell works. Two bells exist:

* the process bell: an enqueue committed by this process rings every worker of the same
  application in this process (any provider);
* a provider bell: PostgreSQL LISTEN/NOTIFY, for producers in other processes;
* a wire: a bell between processes that acta rings itself after its own commits
  (acta.redis_bell), for databases without NOTIFY; the process bell rings it too.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from acta.clock import Clock


class Bell(Protocol):
    """Something that can wake a worker."""

    async def run(self, ring: Callable[[], None]) -> None:
        """Call ``ring()`` whenever work may be waiting, until cancelled."""
        ...


class Wire(Protocol):
    """A bell between processes that acta rings itself once a write of its own committed."""

    def announce(self) -> None:
        """Wake idle workers in every process; returns at once and never raises."""
        ...

    def listener(self, clock: Clock) -> Bell:
        """The side one worker listens on."""
        ...


class ProcessBell:
    """Rings subscribed workers of one application after this process commits work that is
    due now (an enqueue, a release), and ``wire``, when there is one, for other processes.

    ``ring_all`` may be called from any thread (a web request's thread, say); each subscriber
    is woken on its own event loop.
    """

    def __init__(self, wire: Wire | None = None) -> None:
        self.wire = wire
        self._lock = threading.Lock()
        self._subscribers: dict[int, tuple[asyncio.AbstractEventLoop, Callable[[], None]]] = {}
        self._next = 0

    def subscribe(self, ring: Callable[[], None]) -> int:
        """Subscribe ``ring`` (called on the current event loop); returns a token."""
        loop = asyncio.get_running_loop()
        with self._lock:
            self._next += 1
            self._subscribers[self._next] = (loop, ring)
            return self._next

    def unsubscribe(self, token: int) -> None:
        with self._lock:
            self._subscribers.pop(token, None)

    def ring_all(self) -> None:
        with self._lock:
            subscribers = list(self._subscribers.values())
        for loop, ring in subscribers:
            if not loop.is_closed():
                loop.call_soon_threadsafe(ring)
        if self.wire is not None:
            self.wire.announce()
