"""LISTEN/NOTIFY as a bell: an idle worker claims as soon as another process enqueues.

One dedicated autocommit connection per worker LISTENs on the ledger's channel; the enqueue
transaction NOTIFYs on commit with the namespace as payload. The bell carries no truth: a
notification only makes the claim loop look now, and the safety poll goes on regardless. When
the listening connection drops, the worker keeps polling and the bell reconnects with backoff.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import timedelta

import psycopg
from psycopg import sql

from acta.clock import Clock
from acta.provider.postgres.connect import Target

log = logging.getLogger("acta.bell")

FIRST_RETRY = timedelta(milliseconds=200)
MAX_RETRY = timedelta(seconds=30)


class PostgresBell:
    """Rings when a job due now is committed in ``namespace`` (any process)."""

    def __init__(self, target: Target, channel: str, namespace: str, clock: Clock) -> None:
        self.target = target
        self.channel = channel
        self.namespace = namespace
        self.clock = clock
        self.connected = False
        self.backend_pid: int | None = None  # the listening session, for operators and tests

    async def run(self, ring: Callable[[], None]) -> None:
        wait = FIRST_RETRY
        while True:
            try:
                await self._listen(ring)
            except psycopg.Error as exc:
                if self.connected:
                    wait = FIRST_RETRY  # it was listening: this is a new outage, not the last one
                self.connected = False
                log.warning(
                    "acta bell lost its PostgreSQL connection (%s); polling until it is back",
                    self.target.scrub(str(exc).splitlines()[0] if str(exc) else type(exc).__name__),
                )
            await self.clock.sleep_until(self.clock.now() + wait)
            wait = min(wait * 2, MAX_RETRY)

    async def _listen(self, ring: Callable[[], None]) -> None:
        kwargs = self.target.connect_kwargs(10)
        kwargs["autocommit"] = True  # LISTEN takes effect at once; no transaction stays open
        async with await psycopg.AsyncConnection.connect(self.target.dsn, **kwargs) as conn:
            await conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(self.channel)))
            self.connected = True
            self.backend_pid = conn.info.backend_pid
            # Anything committed while we were away would have been missed: look once now.
            ring()
            async for note in conn.notifies():
                if note.payload == self.namespace:
                    ring()
