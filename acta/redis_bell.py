"""The Redis bell: wakes idle workers in other processes on databases without NOTIFY.

PostgreSQL rings its own bell (NOTIFY, delivered on commit). SQLite shared by several
processes, MariaDB and SQL Server have none, so their idle workers learn of new work only at
their next poll (1 s by default). With ``Acta(..., bell="redis://host:6379/0")`` (or the
``ACTA_BELL`` environment variable) acta rings a Redis channel itself, after a transaction of
its own commits and made work due now (an enqueue, a signal releasing a job, a lane promoting
its next member, a job handed back or retried without delay), and every worker of that
application subscribes to it.

The bell carries no truth. A message says only "look now": the claim that follows reads the
ledger, and the poll runs whether or not Redis answers. So losing Redis costs pickup latency,
down to the poll, never a job. Both sides log one warning per outage (no traceback) and come
back by themselves. Ringing never blocks the caller: a daemon thread publishes, coalescing
rings that arrive while it is busy, and an exiting process gives it a moment to finish.
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
from collections.abc import Callable
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from acta.about import install_hint
from acta.clock import Clock
from acta.errors import ConfigurationError

log = logging.getLogger("acta.bell")

ENV = "ACTA_BELL"
"""The environment variable naming the bell when ``Acta(bell=...)`` is not given."""
SCHEMES = ("redis", "rediss", "unix")
FIRST_RETRY = timedelta(milliseconds=200)
MAX_RETRY = timedelta(seconds=30)
SOCKET_TIMEOUT = 2.0
"""Seconds a connect or a publish may take before Redis counts as away (the ringing side)."""
IDLE_CHECK = 30.0
"""Seconds a subscriber waits for a message before checking its connection is alive."""
EXIT_FLUSH = 1.0
"""Seconds an exiting process waits for its last rings to reach Redis."""


def scrub(url: str) -> str:
    """``url`` without its password, for messages."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    user = f"{parts.username}:***@" if parts.username else ":***@"
    netloc = f"{user}{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def wire_from(setting: str | None, *, schema: str, namespace: str) -> RedisWire | None:
    """The bell an application rings: ``setting`` (``Acta(bell=...)``), else ``$ACTA_BELL``;
    None when neither names one ("" turns the variable off). A typed error for anything that
    is not a Redis URL, or when redis-py is not installed."""
    chosen = os.environ.get(ENV, "") if setting is None else setting
    if not isinstance(chosen, str):
        raise ConfigurationError(
            f"bell={chosen!r}: give a Redis URL such as 'redis://127.0.0.1:6379/0', "
            "or '' for no bell"
        )
    chosen = chosen.strip()
    if not chosen:
        return None
    origin = "bell=" if setting is not None else f"${ENV}="
    if urlsplit(chosen).scheme not in SCHEMES:
        raise ConfigurationError(
            f"{origin}{scrub(chosen)!r} is not a Redis URL: use redis://host:port/db, "
            "rediss:// (TLS) or unix:///path/to/redis.sock, or '' for no bell"
        )
    try:
        import redis
    except ImportError as exc:
        raise ConfigurationError(
            f"the Redis bell needs the redis extra: {install_hint('redis')} ({exc})"
        ) from exc
    try:
        redis.ConnectionPool.from_url(chosen)  # parses only: nothing connects here
    except ValueError as exc:
        raise ConfigurationError(f"{origin}{scrub(chosen)!r}: {exc}") from exc
    return RedisWire(chosen, f"acta:bell:{schema}:{namespace}")


class RedisWire:
    """One application's Redis bell: ``announce`` rings it, ``listener`` hears it."""

    def __init__(self, url: str, channel: str) -> None:
        self.url = url
        self.channel = channel
        self._lock = threading.Lock()
        self._publisher: _Publisher | None = None

    def __repr__(self) -> str:
        return f"RedisWire({scrub(self.url)!r}, {self.channel!r})"

    def announce(self) -> None:
        """Tell idle workers everywhere to look now. Returns at once and never raises."""
        self._ringer().ring()

    def flush(self, timeout: float = EXIT_FLUSH) -> bool:
        """Wait until every ring so far was published or given up; False on timeout."""
        publisher = self._publisher
        return publisher is None or publisher.flush(timeout)

    def listener(self, clock: Clock) -> RedisListener:
        """The subscribing side, for one worker (``Bell``)."""
        return RedisListener(self, clock)

    def _ringer(self) -> _Publisher:
        with self._lock:
            # A forked child inherits the object but not its thread: it starts its own.
            if self._publisher is None or self._publisher.pid != os.getpid():
                self._publisher = _Publisher(self.url, self.channel)
            return self._publisher


class _Publisher:
    """A daemon thread publishing rings. Rings asked while a publish is under way are answered
    by the next one: a burst of enqueues costs one or two messages, not one each."""

    def __init__(self, url: str, channel: str) -> None:
        self.url = url
        self.channel = channel
        self.pid = os.getpid()
        self._cond = threading.Condition()
        self._asked = 0
        self._answered = 0
        self._client: Any = None
        self._away = False
        thread = threading.Thread(target=self._loop, name="acta-redis-bell", daemon=True)
        thread.start()
        atexit.register(self.flush, EXIT_FLUSH)

    def ring(self) -> None:
        with self._cond:
            self._asked += 1
            self._cond.notify_all()

    def flush(self, timeout: float) -> bool:
        with self._cond:
            return self._cond.wait_for(lambda: self._answered >= self._asked, timeout)

    def _loop(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._asked > self._answered)
                asked = self._asked
            self._publish()
            with self._cond:
                self._answered = asked
                self._cond.notify_all()

    def _publish(self) -> None:
        import redis

        try:
            if self._client is None:
                self._client = redis.Redis.from_url(
                    self.url,
                    socket_timeout=SOCKET_TIMEOUT,
                    socket_connect_timeout=SOCKET_TIMEOUT,
                )
            self._client.publish(self.channel, b"")
        except (redis.RedisError, OSError) as exc:
            if not self._away:
                self._away = True
                log.warning(
                    "acta bell cannot ring Redis at %s (%s); other processes' workers pick "
                    "new work up at their next poll until it answers",
                    scrub(self.url),
                    _first_line(exc),
                )
            return
        if self._away:
            self._away = False
            log.info("acta bell rings Redis at %s again", scrub(self.url))


class RedisListener:
    """Subscribes one worker to its application's channel (a ``Bell``)."""

    def __init__(self, wire: RedisWire, clock: Clock) -> None:
        self.wire = wire
        self.clock = clock
        self.connected = False
        """Subscribed right now (tests and operators watch it)."""
        self._away = False

    async def run(self, ring: Callable[[], None]) -> None:
        """Call ``ring()`` on every message, until cancelled; through outages, reconnect
        with backoff while the worker polls."""
        import redis

        wait = FIRST_RETRY
        while True:
            try:
                await self._listen(ring)
            except (redis.RedisError, OSError) as exc:  # TimeoutError is an OSError
                self._lost(exc)
            if self.connected:
                wait = FIRST_RETRY  # it was listening: a new outage starts at the first retry
            self.connected = False
            await self.clock.sleep_until(self.clock.now() + wait)
            wait = min(wait * 2, MAX_RETRY)

    def _lost(self, exc: BaseException) -> None:
        if self._away:
            return  # one warning per outage, however many retries it takes
        self._away = True
        log.warning(
            "acta bell cannot hear Redis at %s (%s); this worker polls every poll interval "
            "until it is back",
            scrub(self.wire.url),
            _first_line(exc),
        )

    async def _listen(self, ring: Callable[[], None]) -> None:
        import redis.asyncio

        client = redis.asyncio.Redis.from_url(
            self.wire.url,
            socket_connect_timeout=SOCKET_TIMEOUT,
            health_check_interval=IDLE_CHECK,
        )
        try:
            pubsub = client.pubsub()
            try:
                await pubsub.subscribe(self.wire.channel)
                self.connected = True
                if self._away:
                    self._away = False
                    log.info("acta bell hears Redis at %s again", scrub(self.wire.url))
                # Rings sent while nobody listened are lost: look once now.
                ring()
                while True:
                    message = await pubsub.get_message(
                        ignore_subscribe_messages=True, timeout=IDLE_CHECK
                    )
                    if message is not None:
                        ring()
            finally:
                await pubsub.aclose()
        finally:
            await client.aclose()
