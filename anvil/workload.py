"""Ledgers and worker processes for the benchmarks.

Every measured run gets a fresh ledger: a new PostgreSQL schema or MariaDB database
(``acta_bench_<random>``) or a new SQLite file, migrated, and dropped afterwards. Worker
processes are real children running ``python -m anvil.bench_app``. Their output is read from
the raw pipe with ``select`` and split into lines here, so a line that arrives together with
another is never left in a buffer that ``select`` cannot see. Waiting is always a ``select``
with a deadline, never a sleep.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import secrets
import selectors
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

from acta import Acta
from acta.clock import SystemClock
from acta.provider import registry
from anvil import bench_app

clock = SystemClock()
REPO = Path(__file__).resolve().parent.parent
PR_SET_PDEATHSIG = 1


class BenchError(RuntimeError):
    """A benchmark could not be carried out (a worker died, a deadline passed)."""


@dataclass(frozen=True)
class Target:
    """Where to benchmark: ``sqlite`` (files in ``workdir``), or ``postgres`` or ``mariadb``
    (the server at ``dsn``)."""

    provider: str
    workdir: Path
    dsn: str = ""


@dataclass
class Ledger:
    """One fresh, migrated ledger; ``sql`` reads it directly, as an operator would."""

    target: Target
    database: str
    schema: str
    _conn: Any = None

    @property
    def postgres(self) -> bool:
        return self.target.provider == "postgres"

    @property
    def mariadb(self) -> bool:
        return self.target.provider == "mariadb"

    def table(self, name: str) -> str:
        """The table as the dialect qualifies it (the registry's ``{schema}.`` token)."""
        return registry.entry(self.target.provider).qualifier(self.schema) + name

    def app(self, report: bench_app.Report = bench_app.print_report) -> Acta:
        return bench_app.build(self.database, self.schema, report)

    def worker_env(self, **settings: Any) -> dict[str, str]:
        return bench_app.worker_env(self.database, self.schema, **settings)

    def sql(self, text: str) -> list[tuple[Any, ...]]:
        """Run ``text`` with ``{runtime}``-style table names filled in; returns all rows."""
        names = ("jobs", "runtime", "events", "definitions", "workers")
        query = text.format(**{name: self.table(name) for name in names})
        if self._conn is None:
            if self.postgres:
                self._conn = psycopg.connect(self.target.dsn, autocommit=True)
            elif self.mariadb:
                self._conn = _mariadb(self.target.dsn)
            else:
                self._conn = sqlite3.connect(self.database, isolation_level=None)
        if self.mariadb:  # PyMySQL connections have no execute; autocommit: each read is fresh
            with self._conn.cursor() as cur:
                cur.execute(query)
                return list(cur.fetchall())
        return list(self._conn.execute(query).fetchall())

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


def instant(value: object) -> datetime:
    """A ledger timestamp as an aware datetime (SQLite stores UTC text)."""
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    return datetime.fromisoformat(str(value)).replace(tzinfo=UTC)


@contextlib.contextmanager
def fresh_ledger(target: Target) -> Iterator[Ledger]:
    """A new migrated ledger for one run, removed afterwards."""
    token = secrets.token_hex(4)
    if target.provider in ("postgres", "mariadb"):
        ledger = Ledger(target, target.dsn, f"acta_bench_{token}")
    else:
        path = target.workdir / f"ledger-{token}.sqlite3"
        ledger = Ledger(target, str(path), "acta")
    app = Acta(ledger.database, schema=ledger.schema)
    try:
        app.migrate()
        app.close()
        yield ledger
    finally:
        app.close()
        ledger.close()
        _drop(ledger)


def _drop(ledger: Ledger) -> None:
    if ledger.postgres:
        with psycopg.connect(ledger.target.dsn, autocommit=True) as conn:
            conn.execute(
                sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(ledger.schema))
            )
        return
    if ledger.mariadb:
        conn = _mariadb(ledger.target.dsn)
        try:
            with conn.cursor() as cur:
                cur.execute(f"DROP DATABASE IF EXISTS `{ledger.schema}`")
        finally:
            conn.close()
        return
    for suffix in ("", "-wal", "-shm"):
        Path(ledger.database + suffix).unlink(missing_ok=True)


def _mariadb(dsn: str) -> Any:
    """An autocommit PyMySQL connection in acta's session settings (UTC, strict)."""
    import pymysql

    from acta.provider.mariadb.connect import Target as Server

    kwargs = Server.parse(dsn).connect_kwargs(10) | {"autocommit": True}
    return pymysql.connect(**kwargs)


@dataclass
class Child:
    """A worker process and the complete lines it has printed so far."""

    process: subprocess.Popen[bytes]
    lines: list[str] = field(default_factory=list)
    _partial: bytes = b""
    closed: bool = False

    def feed(self) -> list[str]:
        """Read what is available on the pipe (the caller saw it readable); new lines."""
        assert self.process.stdout is not None
        chunk = os.read(self.process.stdout.fileno(), 65536)
        if not chunk:
            self.closed = True
            chunk = b"\n" if self._partial else b""
        *complete, self._partial = (self._partial + chunk).split(b"\n")
        new = [line.decode(errors="replace") for line in complete]
        self.lines.extend(new)
        return new

    def alive(self) -> bool:
        return self.process.poll() is None

    def stop(self, timeout: float = 60) -> None:
        """SIGTERM and wait for the graceful shutdown; SIGKILL if it does not come."""
        if self.alive():
            self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        if self.process.stdout is not None:
            self.process.stdout.close()


def _die_with_parent() -> None:
    """In the child, before exec: get SIGTERM when the bench dies (Linux), so an interrupted
    bench never leaves workers behind."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def spawn(env: dict[str, str], module: str = "anvil.bench_app") -> Child:
    """Start one bench worker process (``python -m anvil.bench_app``, or a peer's worker)."""
    pythonpath = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)
    process = subprocess.Popen(
        [sys.executable, "-u", "-m", module],
        cwd=REPO,
        env={**os.environ, **env, "PYTHONPATH": pythonpath},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        preexec_fn=_die_with_parent if sys.platform == "linux" else None,
    )
    return Child(process)


def pump(children: Sequence[Child], seconds: float) -> list[tuple[Child, str]]:
    """Wait up to ``seconds`` for output; returns the lines that arrived (maybe none).

    Returns as soon as at least one complete line arrived, so callers loop on it."""
    open_children = [c for c in children if not c.closed and c.process.stdout is not None]
    if not open_children:
        return []
    with selectors.DefaultSelector() as selector:
        for child in open_children:
            selector.register(child.process.stdout, selectors.EVENT_READ, child)  # type: ignore[arg-type]
        deadline = clock.monotonic() + max(seconds, 0.0)
        while True:
            ready = selector.select(timeout=max(deadline - clock.monotonic(), 0.0))
            got = [(key.data, line) for key, _ in ready for line in key.data.feed()]
            if got or clock.monotonic() >= deadline:
                return got
            for key, _ in ready:
                if key.data.closed:
                    selector.unregister(key.fileobj)


def wait_for(
    children: Sequence[Child],
    done: Callable[[], bool],
    timeout: float,
    what: str,
    *,
    step: float = 0.25,
    on_line: Callable[[Child, str], None] | None = None,
) -> None:
    """Read the children's output until ``done()`` is true; fail if one dies or time runs out.

    ``done`` is checked after every line and at least every ``step`` seconds."""
    deadline = clock.monotonic() + timeout
    while not done():
        for child in children:
            if not child.alive():
                tail = "\n".join(child.lines[-20:])
                raise BenchError(f"a worker exited ({child.process.returncode}) {what}:\n{tail}")
        left = deadline - clock.monotonic()
        if left <= 0:
            tail = "\n".join(line for c in children for line in c.lines[-10:])
            raise BenchError(f"timed out after {timeout} s {what}; recent output:\n{tail}")
        for child, line in pump(children, min(step, left)):
            if on_line is not None:
                on_line(child, line)


def pause(children: Sequence[Child], seconds: float) -> None:
    """Let ``seconds`` pass while still draining the children's output."""
    deadline = clock.monotonic() + seconds
    while (left := deadline - clock.monotonic()) > 0:
        pump(children, left)


@contextlib.contextmanager
def workers(ledger: Ledger, count: int, **settings: Any) -> Iterator[list[Child]]:
    """``count`` registered worker processes on ``ledger`` (listening, on PostgreSQL, when
    ``listen`` is set); stopped gracefully on exit."""
    children = [spawn(ledger.worker_env(**settings)) for _ in range(count)]
    try:
        wait_for(
            children,
            lambda: all(any(bench_app.READY_MARK in line for line in c.lines) for c in children),
            60,
            "while starting",
        )
        if ledger.postgres and settings.get("listen"):
            channel = f"{ledger.schema}_ready"
            query = (
                "SELECT count(*) FROM pg_stat_activity "
                f"WHERE query LIKE 'LISTEN %' AND query LIKE '%{channel}%'"
            )
            wait_for(
                children,
                lambda: ledger.sql(query)[0][0] >= count,
                30,
                "waiting for LISTEN",
                step=0.01,
            )
        yield children
    finally:
        for child in children:
            child.stop()
