"""Test support of the PostgreSQL provider: a pool of migrated schemas, emptied between tests.

``PostgresSchemas`` migrates a schema once per test process and hands it from test to test,
deleting its rows in between; the operator connection (``Ledger`` in the conformance suite) is
one psycopg connection per test session, shared by the session's tests, each of which names its
own schema in every statement. psycopg is imported when first needed.
"""

from __future__ import annotations

import contextlib
import secrets
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from acta.about import install_hint
from acta.provider.protocol import Provider
from acta.provider.testing import (
    LedgerLocation,
    Params,
    ProviderUnavailable,
    keep_for_session,
)

if TYPE_CHECKING:
    import psycopg

    from acta.provider.postgres.provider import PostgresProvider


class PostgresUnavailable(ProviderUnavailable):
    """PostgreSQL cannot be used for this session (driver missing, server unreachable)."""


def _admin_connection(dsn: str) -> psycopg.Connection[Any]:
    """An autocommit connection for the test machinery itself; PostgresUnavailable if none."""
    try:
        import psycopg
    except ImportError as exc:
        raise PostgresUnavailable(
            f"psycopg is not installed ({install_hint('postgres')}): {exc}"
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
    tables before each reuse: one round trip that deletes every row (children first, codes and
    migrations kept) and restarts the identity sequences. On these small tables DELETE costs
    about a millisecond where TRUNCATE cost tens (it swaps every table's and index's files).
    A schema still in use (a test holding two ledgers) makes the pool migrate another; so does
    one a test changed beyond its rows (a trigger added, a migration record edited): its shape
    no longer matches the one recorded after its migration, so it is dropped rather than
    handed on. The random token keeps
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
        self._emptying: dict[str, Any] = {}  # schema -> its DELETE statements, made once
        self._kept: set[str] = set()  # schemas --acta-keep keeps: never reused or dropped
        # One provider per schema for the whole session: its statements parsed once and its
        # pools' connections reused by the schema's next test instead of opened again.
        self._providers: dict[str, PostgresProvider] = {}
        self._operator: psycopg.Connection[Any] | None = None
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
                elif self._empty(name):
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
            if name not in self._kept:
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
            # Prepared: the same few schemas come back all session, and planning this query
            # cost more than running it.
            row = self._admin.execute(query, {"schema": name}, prepare=True).fetchone()
        except Exception:  # gone or unreadable: it cannot match the recorded shape
            return None
        return str(row[0]) if row else None

    def _discard(self, name: str) -> None:
        # The caller holds the lock; the name stays in _made so finish() drops it if this fails.
        provider = self._providers.pop(name, None)
        if provider is not None:
            provider.close()
        with contextlib.suppress(Exception):
            self.drop(name)
            self._made.remove(name)
        self._shapes.pop(name, None)

    def _empty(self, name: str) -> bool:
        """Delete every row of the ledger tables and restart their identities, in one
        transaction of one round trip; False if a leaked connection's lock blocks it."""
        import psycopg

        statement = self._emptying.get(name)
        if statement is None:
            statement = self._emptying[name] = self._emptying_sql(name)
        try:
            self._admin.execute(statement)
        except psycopg.errors.LockNotAvailable:
            return False  # still held by a leaked connection: leave it, migrate a new one
        return True

    def _emptying_sql(self, name: str) -> Any:
        from psycopg import sql

        rows = self._admin.execute(_TABLES_AND_PARENTS, {"schema": name}).fetchall()
        parents = {table: set(refs) - {table} for table, refs in rows}
        ordered: list[str] = []
        while parents:  # children first: a table goes once no remaining table refers to it
            free = sorted(t for t in parents if not any(t in refs for refs in parents.values()))
            if not free:
                raise RuntimeError(f"cannot order the tables of {name} for deletion: {parents}")
            ordered.extend(free)
            for table in free:
                del parents[table]
        deletes = [sql.SQL("DELETE FROM {}").format(sql.Identifier(name, t)) for t in ordered]
        restart = sql.SQL(_RESTART).format(schema=sql.Literal(name))
        return sql.SQL("; ").join([*deletes, restart])

    # -- what the test plugin asks of a provider's test ledgers (acta.provider.testing) --------

    @contextlib.contextmanager
    def ledger(self, folder: Path) -> Iterator[Provider]:
        """The schema's session provider (``keep_for_session``): a test host leaves its pools
        open, and the schema's next test finds them connected."""
        from acta.provider.postgres import PostgresProvider

        name = self.take()
        provider = self._providers.get(name)
        if provider is None:
            provider = PostgresProvider(self.dsn, schema=name, max_connections=4)
            self._providers[name] = provider
            keep_for_session(provider)
        try:
            yield provider
        finally:
            if name in self._kept:
                self._providers.pop(name, None)
                provider.close()
            else:
                self.give_back(name)

    def keep(self, provider: Provider) -> str:
        with self._lock:
            self._kept.add(provider.schema)
        return f"{provider.where}, kept: drop it with DROP SCHEMA {provider.schema} CASCADE"

    def operator(self, location: LedgerLocation) -> PostgresOperator:
        return PostgresOperator(location, self._operator_connection)

    def _operator_connection(self) -> psycopg.Connection[Any]:
        """One autocommit connection for every test's operator reads of this session (each
        statement names its test's schema); reopened if a test broke it."""
        if self._operator is None or self._operator.closed or self._operator.broken:
            import psycopg

            self._operator = psycopg.connect(
                self.dsn,
                autocommit=True,
                application_name="acta-test-operator",
                connect_timeout=10,
                # A statement stuck behind a lock the code under test leaked fails, not hangs.
                options="-c lock_timeout=10s",
            )
        return self._operator

    def fresh_database(self, folder: Path) -> PostgresFresh:
        return PostgresFresh(self.dsn)

    def finish(self) -> list[str]:
        """Drop every schema this process made; return what leaked outside them."""
        problems: list[str] = []
        for provider in self._providers.values():
            with contextlib.suppress(Exception):
                provider.close()
        self._providers.clear()
        for name in self._made:
            if name in self._kept:
                continue
            try:
                self.drop(name)
            except Exception as exc:
                problems.append(f"could not drop test schema {name}: {exc}")
        leaked = sorted(self._outside() - self._baseline)
        problems.extend(f"a test left {item} behind" for item in leaked)
        if self._operator is not None:
            self._operator.close()
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

# Each ledger table of a schema (codes and migrations aside) with the tables it refers to.
_TABLES_AND_PARENTS = """
SELECT c.relname::text,
       ARRAY(SELECT DISTINCT p.relname::text FROM pg_constraint k
               JOIN pg_class p ON p.oid = k.confrelid
              WHERE k.conrelid = c.oid AND k.contype = 'f')
  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
 WHERE n.nspname = %(schema)s AND c.relkind IN ('r', 'p')
   AND c.relname NOT IN ('codes', 'migrations')
"""

# What RESTART IDENTITY did: every sequence of the schema back to its start value.
_RESTART = """
SELECT setval(c.oid, s.seqstart, false)
  FROM pg_sequence s JOIN pg_class c ON c.oid = s.seqrelid
  JOIN pg_namespace n ON n.oid = c.relnamespace
 WHERE n.nspname = {schema}
"""


class PostgresOperator:
    """The test's operator access to its schema, on the session's shared connection."""

    def __init__(self, location: LedgerLocation, connect: Any) -> None:
        import psycopg

        self.location = location
        self.integrity_error: type[Exception] = psycopg.IntegrityError
        self._connect = connect

    def rows(self, text: str, params: Params) -> list[tuple[Any, ...]]:
        return list(self._connect().execute(text, dict(params)).fetchall())

    def execute(self, text: str, params: Params) -> int:
        conn = self._connect()
        with conn.transaction():
            return int(conn.execute(text, dict(params)).rowcount)

    def refuse_inserts(self, table: str, name: str, when: str, message: str) -> list[str]:
        prepare = self.location.prepare
        self.execute(
            prepare(
                f"CREATE FUNCTION {{schema}}.{name}() RETURNS trigger LANGUAGE plpgsql AS $body$ "
                f"BEGIN IF {when} THEN "
                f"RAISE EXCEPTION '{message}' USING ERRCODE = 'check_violation'; "
                "END IF; RETURN NEW; END $body$"
            ),
            {},
        )
        undo = [f"DROP FUNCTION IF EXISTS {{schema}}.{name}() CASCADE"]
        self.execute(
            prepare(
                f"CREATE TRIGGER {name} BEFORE INSERT ON {{schema}}.{table} "
                f"FOR EACH ROW EXECUTE FUNCTION {{schema}}.{name}()"
            ),
            {},
        )
        return undo

    def close(self) -> None:
        pass  # the connection is the session's


class PostgresFresh:
    """The server, with schemas the test may create under unique names, dropped afterwards."""

    def __init__(self, dsn: str) -> None:
        from acta.provider.postgres.connect import Target

        self.target = dsn
        self._dsn = Target(dsn).dsn  # what libpq accepts, whatever scheme was given
        self._made: list[str] = []

    def schema(self, name: str) -> str:
        made = f"acta_t_{secrets.token_hex(3)}_{name}"
        self._made.append(made)
        return made

    def qualified(self, schema: str, name: str) -> str:
        return f"{schema}.{name}"

    def tables(self, schema: str) -> set[str]:
        rows = self._query("SELECT tablename FROM pg_tables WHERE schemaname = %s", [schema])
        return {name for (name,) in rows}

    def contents(self) -> frozenset[str]:
        """The server's schemas, but the test and benchmark schemas concurrent sessions come
        and go with."""
        rows = self._query(
            "SELECT nspname FROM pg_namespace WHERE nspname NOT LIKE 'acta\\_t\\_%' "
            "AND nspname NOT LIKE 'acta\\_bench\\_%' AND nspname NOT LIKE 'pg\\_temp\\_%' "
            "AND nspname NOT LIKE 'pg\\_toast\\_temp\\_%'"
        )
        return frozenset(name for (name,) in rows)

    def _query(self, text: str, params: list[Any] | None = None) -> list[tuple[Any, ...]]:
        import psycopg

        with psycopg.connect(
            self._dsn, autocommit=True, application_name="acta-test-operator"
        ) as conn:
            return conn.execute(text, params).fetchall()

    def close(self) -> None:
        if self._made:
            import psycopg
            from psycopg import sql

            with psycopg.connect(self._dsn, autocommit=True) as conn:
                for name in self._made:
                    conn.execute(
                        sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(name))
                    )


class PostgresSupport:
    server = True

    def open_session(self, dsn: str, worker: str, base: Path) -> PostgresSchemas:
        return PostgresSchemas(dsn, worker)

    def location(self, provider: Provider) -> LedgerLocation:
        from acta.provider.postgres.catalog import qualifier
        from acta.provider.postgres.provider import PostgresProvider

        assert isinstance(provider, PostgresProvider)
        return LedgerLocation(
            "postgres",
            provider.schema,
            qualifier(provider.schema),
            dsn=provider.target.dsn,
            paramstyle="pyformat",
        )

    @contextlib.contextmanager
    def caller_transaction(self, provider: Provider) -> Iterator[psycopg.Connection[Any]]:
        import psycopg

        dsn = self.location(provider).dsn
        assert dsn is not None
        with psycopg.connect(dsn) as conn:
            yield conn
            conn.commit()

    def snapshot_dump(self, dsn: str) -> str:
        """Migrate a new schema on ``dsn``, dump it, and drop it again."""
        return postgres_dump(dsn)


def postgres_dump(dsn: str, schema: str | None = None) -> str:
    """Migrate ``schema`` (a new random one by default) on ``dsn``, dump it, drop it."""
    import psycopg
    from psycopg import sql

    from acta.provider.postgres.provider import PostgresProvider

    name = schema or f"acta_t_snapshot_{secrets.token_hex(4)}"
    provider = PostgresProvider(dsn, schema=name, max_connections=1)
    try:
        provider.migrate()
        return provider.dump_schema()
    finally:
        provider.close()
        with psycopg.connect(provider.target.dsn, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(name)))


SUPPORT = PostgresSupport()
