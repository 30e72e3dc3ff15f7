"""Test support of the SQLite provider: a migrated template file copied per test.

The template is migrated once per test process (pytest-xdist worker) and checkpointed; each
test gets its own copy, so tests never share a ledger and never pay for migrations twice. The
operator connection is plain sqlite3 on the test's file, one per test, opened on first use.
"""

from __future__ import annotations

import contextlib
import copy
import shutil
import sqlite3
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from acta.provider.protocol import Provider
from acta.provider.sqlite.provider import SqliteProvider
from acta.provider.testing import LEDGER_TABLES, LedgerLocation, Params

_lock = threading.Lock()
_templates: dict[Path, Path] = {}


def sqlite_template(base: Path) -> Path:
    """A migrated, checkpointed SQLite file under ``base`` (created on first call)."""
    with _lock:
        found = _templates.get(base)
        # A nested session (pytester) may reuse a base folder an earlier one already removed.
        if found is not None and found.exists():
            return found
        path = base / "acta-template.sqlite3"
        provider = SqliteProvider(path)
        provider.migrate()
        provider.close()  # closing the last connection checkpoints the WAL into the file
        _templates[base] = path
        return path


def sqlite_copy(base: Path, target: Path) -> Path:
    """A fresh ledger file at ``target``, copied from the template (the file alone: the
    template has no WAL left to copy)."""
    shutil.copyfile(sqlite_template(base), target)
    return target


class SqliteOperator:
    """One sqlite3 connection of the test's own to its ledger file, in autocommit mode: each
    read sees what is committed when it runs, each write is its own transaction."""

    integrity_error: type[Exception] = sqlite3.IntegrityError

    def __init__(self, location: LedgerLocation) -> None:
        assert location.path is not None
        self.location = location
        self.path = location.path
        self._conn: sqlite3.Connection | None = None

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            self._conn = sqlite3.connect(self.path, isolation_level=None)
            self._conn.execute("PRAGMA foreign_keys = ON")  # as acta's own connections have it
        return self._conn

    def rows(self, text: str, params: Params) -> list[tuple[Any, ...]]:
        return self._connection().execute(text, dict(params)).fetchall()

    def execute(self, text: str, params: Params) -> int:
        conn = self._connection()
        conn.execute("BEGIN IMMEDIATE")
        try:
            changed = conn.execute(text, dict(params)).rowcount
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
        return changed

    def refuse_inserts(self, table: str, name: str, when: str, message: str) -> list[str]:
        statement = (
            f"CREATE TRIGGER {name} BEFORE INSERT ON {{schema}}.{table} WHEN {when} "
            f"BEGIN SELECT RAISE(ABORT, '{message}'); END"
        )
        self.execute(self.location.prepare(statement), {})
        return [f"DROP TRIGGER IF EXISTS {name}"]

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


class SqliteFresh:
    """A folder of the test's own; the ledger file is ``jobs.sqlite3`` in it, not made yet."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.target = str(folder / "jobs.sqlite3")

    def schema(self, name: str) -> str:
        return name  # the file is the test's own: any name is free

    def qualified(self, schema: str, name: str) -> str:
        return f"{schema}_{name}"

    def tables(self, schema: str) -> set[str]:
        with contextlib.closing(sqlite3.connect(self.target)) as conn:
            rows = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            prefix = f"{schema}_"
            return {n.removeprefix(prefix) for (n,) in rows if n.startswith(prefix)}

    def contents(self) -> frozenset[str]:
        return frozenset(p.name for p in self.folder.iterdir())

    def close(self) -> None:
        pass


# What a SqliteProvider holds: the parsed statements may be shared between providers, the rest
# is set afresh for each copy. A provider that grows other state is built the ordinary way.
_SHARED_STATE = {"schema", "_durability", "_busy_ms", "_prefix", "statements"}
_OWN_STATE = {"path", "_lock", "_conn", "_thread"}


def _provider_like(prototype: SqliteProvider, path: Path) -> SqliteProvider:
    """A provider on ``path`` like ``prototype`` (never connected), sharing its parsed
    statements instead of reading and parsing every statement file again (about a third of
    what a test's ledger cost on SQLite)."""
    if set(vars(prototype)) != _SHARED_STATE | _OWN_STATE or prototype._conn is not None:
        return SqliteProvider(path)
    provider = copy.copy(prototype)
    provider.path = path
    provider._lock = threading.RLock()
    provider._conn = None
    provider._thread = None
    return provider


class SqliteLedgers:
    """The ledgers of one test process: copies of one template under ``base``."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self._prototype: SqliteProvider | None = None

    @contextlib.contextmanager
    def ledger(self, folder: Path) -> Iterator[Provider]:
        path = sqlite_copy(self.base, folder / "ledger.sqlite3")
        if self._prototype is None:
            self._prototype = SqliteProvider(path)
        provider = _provider_like(self._prototype, path)
        try:
            yield provider
        finally:
            provider.close()

    def operator(self, location: LedgerLocation) -> SqliteOperator:
        return SqliteOperator(location)

    def keep(self, provider: Provider) -> str:
        # The copy lives in the test's temporary folder, which pytest keeps after the run.
        return provider.where

    def fresh_database(self, folder: Path) -> SqliteFresh:
        fresh = folder / "fresh"
        fresh.mkdir()
        return SqliteFresh(fresh)

    def finish(self) -> list[str]:
        return []


class SqliteSupport:
    server = False

    def open_session(self, dsn: str, worker: str, base: Path) -> SqliteLedgers:
        return SqliteLedgers(base)

    def location(self, provider: Provider) -> LedgerLocation:
        assert isinstance(provider, SqliteProvider)
        return LedgerLocation("sqlite", provider.schema, provider.qualify(""), path=provider.path)

    @contextlib.contextmanager
    def caller_transaction(self, provider: Provider) -> Iterator[sqlite3.Connection]:
        where = self.location(provider)
        conn = sqlite3.connect(str(where.path), isolation_level=None)
        conn.execute("BEGIN")
        try:
            yield conn
            conn.execute("COMMIT")
        finally:
            conn.close()

    def snapshot_dump(self, dsn: str) -> str:
        with tempfile.TemporaryDirectory(prefix="acta-snapshot-") as folder:
            provider = SqliteProvider(Path(folder) / "ledger.sqlite3")
            try:
                provider.migrate()
                return provider.dump_schema()
            finally:
                provider.close()


SUPPORT = SqliteSupport()
__all__ = ["LEDGER_TABLES", "SUPPORT", "sqlite_copy", "sqlite_template"]
