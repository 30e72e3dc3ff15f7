"""A TCP proxy that loses traffic on purpose, to test what acta does when replies go missing.

It sits between acta and a database server (``127.0.0.1:<ephemeral>`` -> ``upstream``) and,
under the test's control, it can:

- drop server replies at a rate, with a seeded RNG: instead of forwarding a server->client chunk
  it closes both sides. The server has done the work (a COMMIT included); the client only sees a
  dropped connection, so the outcome is in doubt for it;
- drop the reply to the next client message containing a byte pattern (``drop_reply_to``): the
  deterministic form of the same fault, e.g. aimed at one named statement's SQL text;
- reset every connection now, refuse new ones ("the database is down") and accept them again;
- add latency to every forwarded chunk.

``counts`` says what it did. It runs on an event loop of its own in a background thread, so
sync tests use it as ``with postgres_proxy(dsn) as proxy: ... proxy.dsn(dsn)``; async tests
may also run it on their own loop (``await proxy.listen()`` ... ``await proxy.aclose()``).
Only chaos tests and this proxy's own tests may run it with latency or a drop rate (real time).
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import timedelta
from types import TracebackType

from acta.clock import SystemClock

_CHUNK = 65536
_clock = SystemClock()


class FaultProxy:
    """One listening proxy to ``upstream_host:upstream_port`` (see the module docstring)."""

    def __init__(
        self,
        upstream_host: str,
        upstream_port: int,
        *,
        drop_rate: float = 0.0,
        seed: int = 0,
        latency: float = 0.0,
    ) -> None:
        self.upstream = (upstream_host, upstream_port)
        self.drop_rate = drop_rate
        self.latency = latency
        self.rng = random.Random(seed)
        self.refusing = False
        self.counts: Counter[str] = Counter()
        self.port = 0
        self._patterns: list[bytes] = []
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.Server | None = None
        self._thread: threading.Thread | None = None
        self._links: set[_Link] = set()

    # -- control (any thread) -------------------------------------------------------------

    def drop_reply_to(self, pattern: bytes, times: int = 1) -> None:
        """Drop the reply to the next ``times`` client messages that contain ``pattern``."""
        with self._lock:
            self._patterns.extend([pattern] * times)

    @property
    def armed(self) -> int:
        """Pattern drops still waiting for their message."""
        with self._lock:
            return len(self._patterns)

    def reset_all(self) -> None:
        """Close every open connection now (both sides)."""
        self._call(self._reset_all)

    def refuse(self) -> None:
        """Refuse new connections (accept and close at once) until ``accept``."""
        self.refusing = True

    def accept(self) -> None:
        self.refusing = False

    def dsn(self, upstream_dsn: str) -> str:
        """``upstream_dsn`` (a PostgreSQL DSN) pointed at this proxy instead, as a URL (the form
        ``Acta(database=...)`` recognises as PostgreSQL)."""
        from urllib.parse import quote

        from psycopg.conninfo import conninfo_to_dict

        params = {k: str(v) for k, v in conninfo_to_dict(upstream_dsn).items()}
        user = quote(params.pop("user", "postgres"), safe="")
        password = params.pop("password", None)
        auth = f"{user}:{quote(password, safe='')}" if password else user
        dbname = quote(params.pop("dbname", "postgres"), safe="")
        params.pop("host", None), params.pop("hostaddr", None), params.pop("port", None)
        query = "&".join(f"{k}={quote(v, safe='')}" for k, v in params.items())
        url = f"postgresql://{auth}@127.0.0.1:{self.port}/{dbname}"
        return f"{url}?{query}" if query else url

    # -- lifecycle ------------------------------------------------------------------------

    def start(self) -> FaultProxy:
        """Start on a background thread (for sync tests); returns once it listens."""
        ready = threading.Event()

        def main() -> None:
            loop = asyncio.new_event_loop()
            asyncio.set_event_loop(loop)  # this thread's own loop
            self._loop = loop
            loop.run_until_complete(self.listen())
            ready.set()
            loop.run_forever()
            loop.run_until_complete(self._close())
            pending = asyncio.all_tasks(loop)
            for task in pending:
                task.cancel()
            loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            loop.close()

        self._thread = threading.Thread(target=main, name="acta-faultproxy", daemon=True)
        self._thread.start()
        ready.wait()
        return self

    def stop(self) -> None:
        if self._loop is not None and self._thread is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join()
            self._thread = None

    def __enter__(self) -> FaultProxy:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    async def listen(self) -> None:
        """Listen on the running loop (for async tests; pair with ``aclose``)."""
        self._loop = asyncio.get_running_loop()
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def aclose(self) -> None:
        await self._close()

    async def _close(self) -> None:
        if self._server is not None:
            self._server.close()
            self._reset_all()
            await self._server.wait_closed()
            self._server = None

    def _call(self, fn: Callable[[], None]) -> None:
        loop = self._loop
        assert loop is not None, "the proxy is not running"
        if self._thread is not None and threading.current_thread() is not self._thread:
            done = threading.Event()

            def run() -> None:
                try:
                    fn()
                finally:
                    done.set()

            loop.call_soon_threadsafe(run)
            done.wait()
        else:
            fn()

    def _reset_all(self) -> None:
        for link in list(self._links):
            link.close()
        self.counts["resets"] += 1

    # -- forwarding -----------------------------------------------------------------------

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.refusing:
            self.counts["refused"] += 1
            writer.close()
            return
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.upstream)
        except OSError:
            self.counts["upstream_errors"] += 1
            writer.close()
            return
        self.counts["connections"] += 1
        link = _Link(writer, up_writer)
        self._links.add(link)
        try:
            await asyncio.gather(
                self._pump(reader, up_writer, link, upstream=True),
                self._pump(up_reader, writer, link, upstream=False),
            )
        finally:
            self._links.discard(link)
            link.close()

    async def _pump(
        self,
        source: asyncio.StreamReader,
        sink: asyncio.StreamWriter,
        link: _Link,
        *,
        upstream: bool,
    ) -> None:
        with contextlib.suppress(OSError, asyncio.IncompleteReadError):
            while not link.closed:
                chunk = await source.read(_CHUNK)
                if not chunk:
                    break
                if self.latency:
                    # Real time (the latency is on the wire), through the clock module.
                    await _clock.sleep_until(_clock.now() + timedelta(seconds=self.latency))
                if upstream:
                    self._watch(chunk, link)
                elif self._drop_reply(link):
                    self.counts["dropped_replies"] += 1
                    link.close()  # the server did the work; the client never hears of it
                    break
                sink.write(chunk)
                await sink.drain()
                self.counts["to_server" if upstream else "to_client"] += 1
        link.close()

    def _watch(self, chunk: bytes, link: _Link) -> None:
        with self._lock:
            for index, pattern in enumerate(self._patterns):
                if pattern in chunk:
                    del self._patterns[index]
                    link.drop_next_reply = True
                    self.counts["pattern_hits"] += 1
                    return

    def _drop_reply(self, link: _Link) -> bool:
        if link.drop_next_reply:
            return True
        return bool(self.drop_rate) and self.rng.random() < self.drop_rate


class _Link:
    """One proxied connection: its two writers, closed together."""

    def __init__(self, client: asyncio.StreamWriter, server: asyncio.StreamWriter) -> None:
        self.client, self.server = client, server
        self.closed = False
        self.drop_next_reply = False

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            for writer in (self.client, self.server):
                with contextlib.suppress(Exception):
                    writer.close()


@contextlib.contextmanager
def postgres_proxy(
    dsn: str, *, drop_rate: float = 0.0, seed: int = 0, latency: float = 0.0
) -> Iterator[FaultProxy]:
    """A running proxy in front of the PostgreSQL server that ``dsn`` names."""
    from acta.provider.postgres.connect import Target

    target = Target(dsn)
    proxy = FaultProxy(
        target.host, int(target.port), drop_rate=drop_rate, seed=seed, latency=latency
    )
    with proxy:
        yield proxy
