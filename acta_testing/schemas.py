"""Throwaway ledgers for tests: migrated once per test process, then one per test.

SQLite: the template file is migrated once per pytest (xdist) worker; each test gets its own
copy, so tests never share a ledger and never pay for migrations twice. PostgreSQL: see
``PostgresSchemas``.
"""

from __future__ import annotations

import contextlib
import secrets
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from acta.provider.sqlite import SqliteProvider

if TYPE_CHECKING:
    from acta.provider.postgres import PostgresProvider

_lock = threading.Lock()
_templates: dict[Path, Path] = {}


def sqlite_template(base: Path) -> Path:
    """A migrated, checkpointed SQLite file under ``base`` (created on first call)."""
    with _lock:
        found = _templates.get(base)
        if found is not None:
            return found
        path = base / "acta-template.sqlite3"
        provider = SqliteProvider(path)
        provider.migrate()
        provider.close()  # closing the last connection checkpoints the WAL into the file
        _templates[base] = path
        return path


def sqlite_copy(base: Path, target: Path) -> Path:
    """A fresh ledger file at ``target``, copied from the template."""
    shutil.copyfile(sqlite_template(base), target)
    return target


class PostgresUnavailable(Exception):
    """PostgreSQL cannot be used for this session (driver missing, server unreachable)."""


class PostgresSchemas:
    """Migrated schemas for one test process, handed to one test at a time.

    PostgreSQL: each pytest (xdist) worker migrates a schema named
    ``acta_t_<worker>_<token>_<n>`` once, then hands it from test to test, emptying the ledger
    tables (``TRUNCATE ... RESTART IDENTITY``, codes and migrations kept) before each reuse.
    That costs a few milliseconds instead of a migration per test. A schema still in use (a test
    holding two ledgers) makes the pool migrate another. The random token keeps concurrent
    sessions on one database apart. At session end every schema is dropped and the database is
    checked for objects tests left outside acta's test schemas.
    """

    PREFIX = "acta_t_"

    def __init__(self, dsn: str, worker: str) -> None:
        try:
            import psycopg
        except ImportError as exc:
            raise PostgresUnavailable(
                f"psycopg is not installed (pip install 'acta[postgres]'): {exc}"
            ) from None
        from acta.errors import ConfigurationError
        from acta.provider.postgres.connect import Target

        try:
            target = Target(dsn, "acta-test-admin")
        except ConfigurationError as exc:
            raise PostgresUnavailable(str(exc)) from None
        try:
            self._admin = psycopg.connect(
                target.dsn, **(target.connect_kwargs(5) | {"autocommit": True})
            )
        except psycopg.Error as exc:
            raise PostgresUnavailable(str(target.unavailable(exc))) from None
        # A test that leaked a connection holding locks must not hang the session.
        self._admin.execute("SET lock_timeout = '10s'")
        self.dsn = dsn
        self._lock = threading.Lock()
        self._prefix = f"{self.PREFIX}{worker}_{secrets.token_hex(3)}_"
        self._made: list[str] = []
        self._free: list[str] = []
        self._baseline = self._outside()

    def _outside(self) -> set[str]:
        """Schemas and relations a test could leak: everything in ``public`` and every schema
        that is neither a system schema nor one of acta's test schemas."""
        rows = self._admin.execute(
            "SELECT 'schema ' || nspname FROM pg_namespace "
            "WHERE nspname NOT LIKE 'pg\\_%%' AND nspname <> 'information_schema' "
            "  AND nspname NOT LIKE %s "
            "UNION ALL "
            "SELECT 'relation public.' || c.relname FROM pg_class c "
            "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public'",
            [self.PREFIX.replace("_", "\\_") + "%"],
        ).fetchall()
        return {r[0] for r in rows}

    def take(self) -> str:
        """A migrated, empty schema for one test."""
        with self._lock:
            while self._free:
                name = self._free.pop()
                if self._truncate(name):
                    return name
            name = f"{self._prefix}{len(self._made) + 1}"
            self._made.append(name)
        from acta.provider.postgres import PostgresProvider

        provider = PostgresProvider(self.dsn, schema=name, min_connections=1, max_connections=1)
        try:
            provider.migrate()
        finally:
            provider.close()
        return name

    def give_back(self, name: str) -> None:
        with self._lock:
            self._free.append(name)

    @contextlib.contextmanager
    def provider(self, **options: Any) -> Iterator[PostgresProvider]:
        """A provider on a schema of its own for the duration of the block."""
        from acta.provider.postgres import PostgresProvider

        name = self.take()
        provider = PostgresProvider(self.dsn, schema=name, **options)
        try:
            yield provider
        finally:
            provider.close()
            self.give_back(name)

    def drop(self, name: str) -> None:
        """Drop a schema a test made itself (use the ``acta_t_`` prefix for such schemas)."""
        from psycopg import sql

        self._admin.execute(
            sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(name))
        )

    def _truncate(self, name: str) -> bool:
        import psycopg
        from psycopg import sql

        tables = self._admin.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = %s "
            "AND tablename NOT IN ('codes', 'migrations') ORDER BY tablename",
            [name],
        ).fetchall()
        statement = sql.SQL("TRUNCATE {} RESTART IDENTITY").format(
            sql.SQL(", ").join(sql.Identifier(name, t[0]) for t in tables)
        )
        try:
            self._admin.execute(statement)
        except psycopg.errors.LockNotAvailable:
            return False  # still held by a leaked connection: leave it, migrate a new one
        return True

    def finish(self) -> list[str]:
        """Drop every schema this process made; return what leaked outside them."""
        problems: list[str] = []
        for name in self._made:
            try:
                self.drop(name)
            except Exception as exc:
                problems.append(f"could not drop test schema {name}: {exc}")
        leaked = sorted(self._outside() - self._baseline)
        problems.extend(f"a test left {item} behind" for item in leaked)
        self._admin.close()
        return problems
