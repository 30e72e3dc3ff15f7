"""Shared by the in-doubt tests: a write whose COMMIT reply is lost, aimed at one statement.

``lossy_ledger`` (a fixture the test modules take as their ``acta_provider``) runs each test on
both dialects. ``lose_commit(statement)`` arms the fault for the next transaction that runs the
named statement (acta's name, from the dialect's .sql files):

- PostgreSQL, for real: a ``CommitLosingProxy`` between acta and the server lets that
  transaction's COMMIT through and drops its reply, so the server has committed and the client
  sees a dropped connection. The provider then runs the whole verb again in a new transaction,
  as it does for any lost connection.
- SQLite has no link to lose, so the same sequence is played in process: the verb runs and
  commits, then the provider is asked to run it once more from the top, which is exactly what
  the PostgreSQL provider does after a lost COMMIT reply (a new ``make()`` in a new
  transaction).

Either way the ledger must read as if the reply had arrived: one row, one event, and the
caller's answer the one the first attempt would have given.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from acta.provider.protocol import Provider, VerbFactory
from acta.provider.sqlite import SqliteProvider
from acta.provider.verb import Op, Verb
from acta_testing.faultproxy import FaultProxy, _Link
from acta_testing.schemas import sqlite_copy

T = TypeVar("T")


class CommitLosingProxy(FaultProxy):
    """A fault proxy that can drop the reply to the COMMIT following a message carrying a
    pattern, on the same connection (the pattern's own reply arrives)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._after: list[bytes] = []
        self._armed_links: set[_Link] = set()

    def lose_commit_after(self, pattern: bytes) -> None:
        with self._lock:
            self._after.append(pattern)

    def _watch(self, chunk: bytes, link: _Link) -> None:
        with self._lock:
            if link in self._armed_links and b"COMMIT" in chunk:
                self._armed_links.discard(link)
                link.drop_next_reply = True
                self.counts["lost_commits"] += 1
                return
            for index, pattern in enumerate(self._after):
                if pattern in chunk:
                    del self._after[index]
                    self._armed_links.add(link)
                    break
        super()._watch(chunk, link)


def _watched(verb: Verb[T], seen: set[str]) -> Generator[Op, Any, T]:
    """``verb``, noting the name of every statement it runs."""
    try:
        op = next(verb)
        while True:
            seen.add(op.statement)
            op = verb.send((yield op))
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]


class InDoubt:
    """A provider whose next transaction running an armed statement loses its COMMIT reply
    (see the module docstring). Everything else is the wrapped provider's."""

    def __init__(self, inner: Provider, proxy: CommitLosingProxy | None = None) -> None:
        self._inner = inner
        self._proxy = proxy
        self._armed: list[str] = []
        self.replays = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    @property
    def inner(self) -> Provider:
        return self._inner

    def lose_commit(self, statement: str) -> None:
        """Lose the COMMIT reply of the next transaction that runs ``statement``."""
        if self._proxy is not None:
            text = self._inner.statements[statement].numbered  # type: ignore[attr-defined]
            self._proxy.lose_commit_after(text.encode())
        else:
            self._armed.append(statement)

    @property
    def lost(self) -> int:
        """Commits whose reply was lost so far."""
        if self._proxy is not None:
            return int(self._proxy.counts["lost_commits"])
        return self.replays

    def _hit(self, seen: set[str]) -> bool:
        for statement in self._armed:
            if statement in seen:
                self._armed.remove(statement)
                self.replays += 1
                return True
        return False

    def _watch(self, make: VerbFactory[T], seen: set[str]) -> Callable[[], Verb[T]]:
        return lambda: _watched(make(), seen)

    def run(self, make: VerbFactory[T], *, tx: object | None = None) -> T:
        if tx is not None or not self._armed:
            return self._inner.run(make, tx=tx)
        seen: set[str] = set()
        answer = self._inner.run(self._watch(make, seen))
        if self._hit(seen):  # committed; the reply "never came": the whole verb again
            return self._inner.run(make)
        return answer

    async def run_async(self, make: VerbFactory[T], *, tx: object | None = None) -> T:
        if tx is not None or not self._armed:
            return await self._inner.run_async(make, tx=tx)
        seen: set[str] = set()
        answer = await self._inner.run_async(self._watch(make, seen))
        if self._hit(seen):
            return await self._inner.run_async(make)
        return answer


@pytest.fixture(params=["sqlite", "postgres"])
def lossy_ledger(
    request: pytest.FixtureRequest, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[InDoubt]:
    """A fresh ledger on each dialect in turn that can lose a COMMIT reply on purpose."""
    if request.param == "sqlite":
        provider = SqliteProvider(
            sqlite_copy(tmp_path_factory.getbasetemp(), tmp_path / "ledger.sqlite3")
        )
        yield InDoubt(provider)
        provider.close()
        return
    from acta.provider.postgres import PostgresProvider
    from acta.provider.postgres.connect import Target

    schemas = request.getfixturevalue("_acta_postgres_schemas")
    target = Target(schemas.dsn)
    with CommitLosingProxy(target.host, int(target.port)) as proxy:
        name = schemas.take()
        provider = PostgresProvider(proxy.dsn(schemas.dsn), schema=name, max_connections=4)
        try:
            yield InDoubt(provider, proxy)
        finally:
            provider.close()
            schemas.give_back(name)
