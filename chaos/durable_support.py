"""Shared by the durable-execution chaos tests: a ledger of the test's own, and bounded waits.

``Ledger`` is where a run's ledger lives plus a connection of the test's own to read it (never
through acta). ``pump`` reads what worker processes print so their pipes never fill up, and
``wait_until`` polls the ledger between reads until a condition holds or a deadline passes;
neither sleeps blindly: the wait is select() on the children's pipes.
"""

from __future__ import annotations

import os
import selectors
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from acta import Acta
from acta.clock import SystemClock
from acta.provider.testing import LedgerLocation
from anvil.checks import qualifier
from chaos.process import Child

clock = SystemClock()


@dataclass
class Ledger:
    """Where the run's ledger is, and a connection of the test's own to read it."""

    database: str
    location: LedgerLocation
    conn: Any

    @property
    def dialect(self) -> str:
        return self.location.dialect

    @property
    def schema(self) -> str:
        return self.location.schema

    def rows(self, text: str, **params: Any) -> list[tuple[Any, ...]]:
        """Rows of ``text`` (``{schema}.`` tokens, ``:name`` parameters)."""
        return list(self.conn.execute(self.location.prepare(text), params).fetchall())

    def value(self, text: str, **params: Any) -> Any:
        [[found]] = self.rows(text, **params)
        return found


@contextmanager
def open_ledger(request: pytest.FixtureRequest, tmp_path: Path, dialect: str) -> Iterator[Ledger]:
    """A migrated, empty ledger: a SQLite file under ``tmp_path``, or a PostgreSQL schema from
    the session's pool (skipped without PostgreSQL, as the ``pg_ledger`` fixture does)."""
    if dialect == "sqlite":
        path = tmp_path / "ledger.sqlite3"
        Acta(str(path), apply_migrations=True).migrate()
        location = LedgerLocation("sqlite", "acta", qualifier("sqlite", "acta"), path=path)
        # A long busy timeout: the workers hold the file's write lock in short bursts.
        lite = sqlite3.connect(path, isolation_level=None, timeout=30)
        try:
            yield Ledger(str(path), location, lite)
        finally:
            lite.close()
        return
    import psycopg

    dsn, schema = request.getfixturevalue("pg_ledger")
    location = LedgerLocation(
        "postgres", schema, qualifier("postgres", schema), dsn=dsn, paramstyle="pyformat"
    )
    with psycopg.connect(dsn, autocommit=True) as conn:
        yield Ledger(dsn, location, conn)


def pump(children: list[Child], seconds: float) -> None:
    """Read what the children print for ``seconds`` (their pipes must never fill up); fails
    when none of them is left to read from, since every test here keeps workers running."""
    until = clock.monotonic() + seconds
    with selectors.DefaultSelector() as selector:
        for child in children:
            if child.process.stdout is not None and not child.closed:
                selector.register(child.process.stdout, selectors.EVENT_READ, child)
        while True:
            if not selector.get_map():
                raise AssertionError(f"every worker exited; last output:\n{tail(children)}")
            left = until - clock.monotonic()
            for key, _ in selector.select(timeout=max(left, 0)):
                child = key.data
                chunk = os.read(child.process.stdout.fileno(), 65536)
                if not chunk:
                    child.closed = True
                    selector.unregister(key.fileobj)
                    continue
                child.partial += chunk.decode("utf-8", "replace")
                *complete, child.partial = child.partial.split("\n")
                child.lines.extend(complete)
            if left <= 0:
                return


def tail(children: list[Child], lines: int = 10) -> str:
    """The last ``lines`` lines each child printed, for a failure message."""
    return "\n".join(f"[{c.name} {c.pid}] {line}" for c in children for line in c.lines[-lines:])


def wait_until(
    children: list[Child],
    what: str,
    ready: Callable[[], Any],
    deadline: float,
    every: float = 0.05,
    diagnose: Callable[[], str] | None = None,
) -> Any:
    """Poll ``ready`` (a ledger query) between reads of the children's output until it answers
    something true; fail at ``deadline`` (a monotonic instant) saying what was awaited, what
    ``diagnose`` reports about the ledger, and what the children printed last."""
    while True:
        found = ready()
        if found:
            return found
        if clock.monotonic() > deadline:
            state = diagnose() if diagnose is not None else ""
            raise AssertionError(
                f"timed out waiting for {what}\n{state}\nrecent output:\n{tail(children)}"
            )
        pump(children, every)


def registered(child: Child) -> bool:
    """Whether the worker logged its registration (its signal handlers are in place by then)."""
    return any("registered in namespace" in line for line in child.lines)


def reap(children: list[Child]) -> None:
    """Kill whatever child is still running (a failed test must not leave workers behind)."""
    for child in children:
        if child.process.poll() is None:
            child.process.kill()
            child.process.wait(timeout=10)
