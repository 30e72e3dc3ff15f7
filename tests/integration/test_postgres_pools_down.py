"""PostgreSQL going away under an open pool: sync and async callers fail fast alike.

The shared test server must never be stopped, so each test talks to it through a small TCP
relay of its own on a loopback port. The pools open (and serve an enqueue) through the relay;
then the relay closes its listening socket and every connection it carried, which is what a
client sees when the server goes down: pooled connections break, new ones are refused.

The bound asserted is the one the provider promises: with the server down, a caller gets
``DatabaseUnavailableError`` after about ``connect_timeout``, not after ``pool_timeout``. The
pool timeout is kept large (30 s) so that the bound (half of it) cannot be met by accident.
Measuring with ``time.monotonic`` is deliberate here: the bound is on real waiting.
"""

from __future__ import annotations

import asyncio
import contextlib
import selectors
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import pytest

from acta import Acta, JobContext
from acta.errors import DatabaseUnavailableError

if TYPE_CHECKING:
    from acta_testing.schemas import PostgresSchemas

pytest.importorskip("psycopg")

POOL_TIMEOUT = 30.0
CONNECT_TIMEOUT = 2.0  # libpq's smallest useful value (it counts whole seconds, at least 2)


class Relay:
    """Forwards loopback connections to the server until ``shut_down`` (then refuses them)."""

    def __init__(self, upstream: tuple[str, int], port: int = 0) -> None:
        self.upstream = upstream
        self.listener = socket.create_server(("127.0.0.1", port))  # SO_REUSEADDR is set
        self.port: int = self.listener.getsockname()[1]
        self._carried: list[socket.socket] = []
        self._lock = threading.Lock()
        self._down = threading.Event()
        self._threads = [threading.Thread(target=self._accept, daemon=True)]
        self._threads[0].start()

    def _accept(self) -> None:
        while not self._down.is_set():
            try:
                client, _ = self.listener.accept()
            except OSError:
                return  # the listener was closed: the "server" is down
            try:
                server = socket.create_connection(self.upstream)
            except OSError:
                client.close()
                continue
            with self._lock:
                if self._down.is_set():
                    client.close()
                    server.close()
                    return
                self._carried += [client, server]
            pump = threading.Thread(target=self._pump, args=(client, server), daemon=True)
            self._threads.append(pump)
            pump.start()

    def _pump(self, client: socket.socket, server: socket.socket) -> None:
        peer = {client: server, server: client}
        with selectors.DefaultSelector() as sel:
            sel.register(client, selectors.EVENT_READ)
            sel.register(server, selectors.EVENT_READ)
            while not self._down.is_set():
                try:
                    ready = sel.select(timeout=0.05)
                except (OSError, ValueError):
                    return  # shut_down closed the sockets under the selector
                for key, _ in ready:
                    sock: socket.socket = key.fileobj  # type: ignore[assignment]
                    try:
                        data = sock.recv(65536)
                        if not data:
                            return
                        peer[sock].sendall(data)
                    except OSError:
                        return

    def shut_down(self) -> None:
        """Refuse new connections and cut every carried one, as a dead server would."""
        self._down.set()
        with contextlib.suppress(OSError):
            self.listener.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept() on Linux
        self.listener.close()
        with self._lock:
            carried, self._carried = self._carried, []
        for sock in carried:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()
        for thread in self._threads:
            thread.join(timeout=5)


@dataclass
class Down:
    app: Acta
    relay: Relay


@pytest.fixture
def through_relay(request: pytest.FixtureRequest) -> Iterator[Down]:
    schemas: PostgresSchemas = request.getfixturevalue("_acta_postgres_schemas")
    parts = urlsplit(schemas.dsn)
    relay = Relay((parts.hostname or "127.0.0.1", parts.port or 5432))
    dsn = schemas.dsn.replace(parts.netloc, f"{parts.username}@127.0.0.1:{relay.port}")
    name = schemas.take()
    app = Acta(
        dsn,
        schema=name,
        connect_timeout=CONNECT_TIMEOUT,
        pool_timeout=POOL_TIMEOUT,
        min_connections=1,
        max_connections=2,
    )

    @app.job("pools.ping")
    def ping(ctx: JobContext, n: int) -> None:  # pragma: no cover - never run here
        del ctx, n

    try:
        yield Down(app, relay)
    finally:
        relay.shut_down()
        app.close()
        schemas.give_back(name)


def test_sync_enqueue_fails_fast_when_the_server_goes_down(through_relay: Down) -> None:
    app, relay = through_relay.app, through_relay.relay
    app.enqueue("pools.ping", 1)  # the sync pool is open and holds a live connection
    relay.shut_down()

    started = time.monotonic()
    with pytest.raises(DatabaseUnavailableError) as caught:
        app.enqueue("pools.ping", 2)
    waited = time.monotonic() - started
    assert waited < POOL_TIMEOUT / 2, f"waited {waited:.1f}s for a server that is down"
    assert f"127.0.0.1:{relay.port}" in str(caught.value)

    # And again, now that the pool has nothing left and keeps failing to reconnect.
    started = time.monotonic()
    with pytest.raises(DatabaseUnavailableError):
        app.enqueue("pools.ping", 3)
    assert time.monotonic() - started < POOL_TIMEOUT / 2


def test_async_enqueue_fails_fast_when_the_server_goes_down(through_relay: Down) -> None:
    app, relay = through_relay.app, through_relay.relay

    async def scenario() -> list[float]:
        await app.enqueue_async("pools.ping", 1)  # this loop's pool is open and used
        relay.shut_down()
        waits = []
        for n in (2, 3):
            started = time.monotonic()
            with pytest.raises(DatabaseUnavailableError) as caught:
                await app.enqueue_async("pools.ping", n)
            waits.append(time.monotonic() - started)
            assert f"127.0.0.1:{relay.port}" in str(caught.value)
        await app.provider.aclose()  # type: ignore[attr-defined]
        return waits

    for waited in asyncio.run(scenario()):
        assert waited < POOL_TIMEOUT / 2, f"waited {waited:.1f}s for a server that is down"


def test_sync_pool_serves_again_once_the_server_is_back(through_relay: Down) -> None:
    app, relay = through_relay.app, through_relay.relay
    app.enqueue("pools.ping", 1)
    relay.shut_down()
    with pytest.raises(DatabaseUnavailableError):
        app.enqueue("pools.ping", 2)
    back = Relay(relay.upstream, relay.port)  # the server is up again, at the same address
    try:
        ref = app.enqueue("pools.ping", 3)  # failing fast must not stick once it answers
        assert app.get(ref).status.label == "ready"
    finally:
        back.shut_down()
