"""Throwaway ledgers for tests: migrated once per test process, then one per test.

SQLite: the template file is migrated once per pytest (xdist) worker; each test gets its own
copy, so tests never share a ledger and never pay for migrations twice. PostgreSQL: see
``PostgresSchemas``. ``ledger_location`` tells a test where a provider keeps its ledger, so the
test can read it through a connection of its own, as an operator would.
"""

from __future__ import annotations

import contextlib
import secrets
import shutil
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from acta.provider.sqlite import SqliteProvider
from acta.provider.statements import convert_params, replace_schema

# The ledger's own tables (codes and migrations aside), for tests that count or snapshot rows.
LEDGER_TABLES = (
    "namespaces",
    "definitions",
    "jobs",
    "job_tags",
    "runtime",
    "events",
    "results",
    "workers",
)

if TYPE_CHECKING:
    import psycopg

    from acta.provider.postgres import PostgresProvider
    from acta.provider.protocol import Provider

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
    """A fresh ledger file at ``target``, copied from the template."""
    shutil.copyfile(sqlite_template(base), target)
    return target


@dataclass(frozen=True, slots=True)
class LedgerLocation:
    """Where a provider keeps its ledger: enough to open a connection of one's own to it.

    ``qualifier`` is what the ``{schema}.`` token of acta's SQL files stands for in this ledger
    (``acta_`` on SQLite, ``"acta".`` on PostgreSQL); ``path`` is the SQLite file and ``dsn``
    the PostgreSQL DSN (it may hold a password: do not print it).
    """

    dialect: str
    schema: str
    qualifier: str
    path: Path | None = None
    dsn: str | None = None

    def prepare(self, text: str) -> str:
        """``text`` written once for every provider, made ready for this ledger's driver: each
        ``{schema}.`` token resolved and each ``:name`` placeholder in the driver's style
        (named for sqlite3, pyformat for psycopg, where a literal ``%`` is doubled)."""
        style = "pyformat" if self.dialect == "postgres" else "named"
        sql, _ = convert_params(replace_schema(text, self.qualifier), style)
        return sql


def ledger_location(provider: Provider) -> LedgerLocation:
    """Where ``provider`` (the ``acta_provider`` fixture, say) keeps its ledger."""
    if isinstance(provider, SqliteProvider):
        return LedgerLocation("sqlite", provider.schema, provider.qualify(""), path=provider.path)
    if provider.dialect == "postgres":
        from acta.provider.postgres import PostgresProvider
        from acta.provider.postgres.catalog import qualifier

        assert isinstance(provider, PostgresProvider)
        return LedgerLocation(
            "postgres", provider.schema, qualifier(provider.schema), dsn=provider.target.dsn
        )
    raise TypeError(f"no direct access to a {provider.dialect} ledger")


class PostgresUnavailable(Exception):
    """PostgreSQL cannot be used for this session (driver missing, server unreachable)."""


def _admin_connection(dsn: str) -> psycopg.Connection[Any]:
    """An autocommit connection for the test machinery itself; PostgresUnavailable if none."""
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
        return psycopg.connect(target.dsn, **(target.connect_kwargs(5) | {"autocommit": True}))
    except psycopg.Error as exc:
        raise PostgresUnavailable(str(target.unavailable(exc))) from None


def postgres_unavailable(dsn: str) -> str | None:
    """Why the tests cannot use PostgreSQL at ``dsn``, or None when they can."""
    try:
        _admin_connection(dsn).close()
    except PostgresUnavailable as exc:
        return str(exc)
    return None


class PostgresSchemas:
    """Migrated schemas for one test process, handed to one test at a time.

    PostgreSQL: each pytest (xdist) worker migrates a schema named
    ``acta_t_<worker>_<token>_<n>`` once, then hands it from test to test, emptying the ledger
    tables (``TRUNCATE ... RESTART IDENTITY``, codes and migrations kept) before each reuse.
    That costs a few milliseconds instead of a migration per test. A schema still in use (a test
    holding two ledgers) makes the pool migrate another; so does one a test changed beyond its
    rows (a trigger added, a migration record edited): its shape no longer matches the one
    recorded after its migration, so it is dropped rather than handed on. The random token keeps
    concurrent sessions on one database apart. At session end every schema is dropped and the
    database is checked for objects tests left outside acta's test schemas.
    """

    PREFIX = "acta_t_"

    def __init__(self, dsn: str, worker: str) -> None:
        self._admin = _admin_connection(dsn)
        # A test that leaked a connection holding locks must not hang the session.
        self._admin.execute("SET lock_timeout = '10s'")
        self.dsn = dsn
        self._lock = threading.Lock()
        self._prefix = f"{self.PREFIX}{worker}_{secrets.token_hex(3)}_"
        self._made: list[str] = []
        self._free: list[str] = []
        self._shapes: dict[str, str] = {}
        self._serial = 0
        self._baseline = self._outside()

    def _outside(self) -> set[str]:
        """Schemas and relations a test could leak: everything in ``public`` and every schema
        that is neither a system schema nor one of acta's test schemas."""
        rows = self._admin.execute(
            "SELECT 'schema ' || nspname FROM pg_namespace "
            "WHERE nspname NOT LIKE 'pg\\_%%' AND nspname <> 'information_schema' "
            "  AND nspname NOT LIKE %s "
            # anvil's benchmarks make their own schemas and may run beside a test session.
            "  AND nspname NOT LIKE 'acta\\_bench\\_%%' "
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
                shape = self._shape(name)
                if shape is None or shape != self._shapes.get(name):
                    self._discard(name)  # a test changed more than rows: never hand it on
                elif self._truncate(name):
                    return name
            self._serial += 1
            name = f"{self._prefix}{self._serial}"
            self._made.append(name)
        from acta.provider.postgres import PostgresProvider

        provider = PostgresProvider(self.dsn, schema=name, min_connections=1, max_connections=1)
        try:
            provider.migrate()
        finally:
            provider.close()
        shape = self._shape(name)
        if shape is None:
            raise RuntimeError(f"cannot read the catalog of the fresh test schema {name}")
        with self._lock:
            self._shapes[name] = shape
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

    def _shape(self, name: str) -> str | None:
        """A digest of what a test could change in a schema besides its rows: relations,
        columns, constraints, triggers, routines, and the rows of codes and migrations."""
        from psycopg import sql

        query = sql.SQL(_SHAPE).format(
            migrations=sql.Identifier(name, "migrations"), codes=sql.Identifier(name, "codes")
        )
        try:
            row = self._admin.execute(query, {"schema": name}).fetchone()
        except Exception:  # gone or unreadable: it cannot match the recorded shape
            return None
        return str(row[0]) if row else None

    def _discard(self, name: str) -> None:
        # The caller holds the lock; the name stays in _made so finish() drops it if this fails.
        with contextlib.suppress(Exception):
            self.drop(name)
            self._made.remove(name)
        self._shapes.pop(name, None)

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


# One round trip: the catalog of one schema and the rows migrations own, as one digest.
_SHAPE = """
SELECT md5(coalesce(string_agg(item, E'\\n' ORDER BY item), '')) FROM (
    SELECT 'relation ' || c.relname || ' ' || c.relkind::text
      FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE n.nspname = %(schema)s
    UNION ALL
    SELECT 'column ' || c.relname || '.' || a.attname || ' '
           || format_type(a.atttypid, a.atttypmod) || ' ' || a.attnotnull::text
      FROM pg_attribute a
      JOIN pg_class c ON c.oid = a.attrelid
      JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE n.nspname = %(schema)s AND a.attnum > 0 AND NOT a.attisdropped
    UNION ALL
    SELECT 'constraint ' || co.conname || ' ' || pg_get_constraintdef(co.oid)
      FROM pg_constraint co JOIN pg_namespace n ON n.oid = co.connamespace
     WHERE n.nspname = %(schema)s
    UNION ALL
    SELECT 'trigger ' || c.relname || '.' || t.tgname
      FROM pg_trigger t
      JOIN pg_class c ON c.oid = t.tgrelid
      JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE n.nspname = %(schema)s AND NOT t.tgisinternal
    UNION ALL
    SELECT 'routine ' || p.proname
      FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
     WHERE n.nspname = %(schema)s
    UNION ALL
    SELECT 'migration ' || version || ' ' || name || ' ' || checksum FROM {migrations}
    UNION ALL
    SELECT 'code ' || family || ' ' || code || ' ' || name || ' ' || coalesce(description, '')
      FROM {codes}
) AS shape(item)
"""
