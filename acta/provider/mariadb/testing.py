"""Test support of the MariaDB provider: a pool of migrated databases, emptied between tests.

MariaDB's schema is a database: each test process migrates databases named
``acta_t_<worker>_<token>_<n>`` once and hands them from test to test, deleting every row of the
ledger tables in between (codes and migrations kept). A database a test changed beyond its
rows (a trigger left behind) is dropped instead of handed on. The operator connection is one
autocommit PyMySQL connection per session; each statement names its test's database.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from acta.provider.protocol import Provider
from acta.provider.testing import LedgerLocation, Params, ProviderUnavailable

DEFAULT_DSN = "mariadb://root@127.0.0.1:3306/test"
PREFIX = "acta_t_"
_KEPT = ("codes", "migrations", "migration_steps")


class MariadbUnavailable(ProviderUnavailable):
    """MariaDB cannot be used for this session (driver missing, server unreachable)."""


def test_dsn(dsn: str) -> str:
    """``dsn`` when it is a MariaDB URL, else ``$ACTA_TEST_MARIADB_DSN`` or the local default
    (a plugin that passes one DSN to every server provider passes PostgreSQL's)."""
    from acta.provider.mariadb.connect import SCHEMES

    if dsn.startswith(SCHEMES):
        return dsn
    return os.environ.get("ACTA_TEST_MARIADB_DSN") or DEFAULT_DSN


def _connect(dsn: str) -> Any:
    try:
        import pymysql
    except ImportError as exc:
        raise MariadbUnavailable(f"PyMySQL is not installed (the mariadb extra): {exc}") from None
    from acta.provider.mariadb.connect import SESSION, Target

    target = Target.parse(dsn)
    kwargs = target.connect_kwargs(5) | {"autocommit": True, "database": None}
    kwargs["init_command"] = SESSION + ", SESSION lock_wait_timeout = 10"
    try:
        return pymysql.connect(**kwargs)
    except pymysql.err.Error as exc:
        raise MariadbUnavailable(str(target.unavailable(exc))) from None


class MariadbDatabases:
    """Migrated ledger databases for one test process, handed to one test at a time."""

    def __init__(self, dsn: str, worker: str) -> None:
        self.dsn = test_dsn(dsn)
        self._admin = _connect(self.dsn)
        self._lock = threading.Lock()
        self._prefix = f"{PREFIX}{worker}_{secrets.token_hex(3)}_"
        self._made: list[str] = []
        self._free: list[str] = []
        self._tables: dict[str, list[str]] = {}
        self._operator: Any = None
        self._serial = 0

    def _query(self, sql: str, params: Any = None) -> list[tuple[Any, ...]]:
        with self._admin.cursor() as cur:
            cur.execute(sql, params)
            return list(cur.fetchall())

    def take(self) -> str:
        with self._lock:
            while self._free:
                name = self._free.pop()
                if self._triggers(name):
                    self._discard(name)
                elif self._empty(name):
                    return name
            self._serial += 1
            name = f"{self._prefix}{self._serial}"
            self._made.append(name)
        from acta.provider.mariadb.provider import MariadbProvider

        provider = MariadbProvider(self.dsn, schema=name, max_connections=1)
        try:
            provider.migrate()
        finally:
            provider.close()
        return name

    def _triggers(self, name: str) -> int:
        rows = self._query(
            "SELECT COUNT(*) FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = %s", (name,)
        )
        return int(rows[0][0])

    def _empty(self, name: str) -> bool:
        tables = self._tables.get(name)
        if tables is None:
            rows = self._query(
                "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s "
                "AND TABLE_TYPE = 'BASE TABLE'",
                (name,),
            )
            tables = self._tables[name] = [r[0] for r in rows if r[0] not in _KEPT]
        import pymysql

        try:
            with self._admin.cursor() as cur:
                cur.execute("SET FOREIGN_KEY_CHECKS = 0")
                try:
                    for table in tables:
                        cur.execute(f"DELETE FROM `{name}`.`{table}`")
                finally:
                    cur.execute("SET FOREIGN_KEY_CHECKS = 1")
        except pymysql.err.OperationalError:
            return False  # a leaked connection still holds a lock: migrate a new one
        return True

    def give_back(self, name: str) -> None:
        with self._lock:
            self._free.append(name)

    def _discard(self, name: str) -> None:
        with contextlib.suppress(Exception):
            self._query(f"DROP DATABASE IF EXISTS `{name}`")
            self._made.remove(name)

    @contextlib.contextmanager
    def ledger(self, folder: Path) -> Iterator[Provider]:
        from acta.provider.mariadb.provider import MariadbProvider

        name = self.take()
        provider = MariadbProvider(self.dsn, schema=name, max_connections=4)
        try:
            yield provider
        finally:
            provider.close()
            self.give_back(name)

    def operator(self, location: LedgerLocation) -> MariadbOperator:
        return MariadbOperator(location, self._operator_connection)

    def _operator_connection(self) -> Any:
        if self._operator is None or not self._operator.open:
            self._operator = _connect(self.dsn)
        return self._operator

    def fresh_database(self, folder: Path) -> MariadbFresh:
        return MariadbFresh(self.dsn)

    def finish(self) -> list[str]:
        problems: list[str] = []
        for name in self._made:
            try:
                self._query(f"DROP DATABASE IF EXISTS `{name}`")
            except Exception as exc:
                problems.append(f"could not drop test database {name}: {exc}")
        if self._operator is not None:
            self._operator.close()
        self._admin.close()
        return problems


class MariadbOperator:
    """The test's operator access to its database, on the session's shared connection."""

    def __init__(self, location: LedgerLocation, connect: Any) -> None:
        import pymysql

        self.location = location
        # A CHECK constraint's refusal is an OperationalError (4025) in PyMySQL, a unique or
        # foreign key's an IntegrityError: both are the schema refusing a write.
        self.integrity_error: type[Exception] = pymysql.err.DatabaseError
        self._connect = connect

    def rows(self, text: str, params: Params) -> list[tuple[Any, ...]]:
        with self._connect().cursor() as cur:
            cur.execute(text, dict(params))
            return list(cur.fetchall())

    def execute(self, text: str, params: Params) -> int:
        with self._connect().cursor() as cur:
            return int(cur.execute(text, dict(params)))

    def refuse_inserts(self, table: str, name: str, when: str, message: str) -> list[str]:
        statement = (
            f"CREATE TRIGGER {{schema}}.{name} BEFORE INSERT ON {{schema}}.{table} "
            f"FOR EACH ROW BEGIN IF {when} THEN "
            f"SIGNAL SQLSTATE '23000' SET MESSAGE_TEXT = '{message}'; END IF; END"
        )
        self.execute(self.location.prepare(statement), {})
        return [f"DROP TRIGGER IF EXISTS {{schema}}.{name}"]

    def close(self) -> None:
        pass  # the connection is the session's


class MariadbFresh:
    """The server, with databases the test may create under unique names, dropped afterwards."""

    def __init__(self, dsn: str) -> None:
        self.target = dsn
        self._made: list[str] = []

    def schema(self, name: str) -> str:
        made = f"{PREFIX}{secrets.token_hex(3)}_{name}"
        self._made.append(made)
        return made

    def qualified(self, schema: str, name: str) -> str:
        return f"{schema}.{name}"

    def tables(self, schema: str) -> set[str]:
        rows = self._query(
            "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s "
            "AND TABLE_TYPE = 'BASE TABLE'",
            (schema,),
        )
        return {r[0] for r in rows}

    def contents(self) -> frozenset[str]:
        rows = self._query(
            "SELECT SCHEMA_NAME FROM information_schema.SCHEMATA "
            "WHERE SCHEMA_NAME NOT LIKE 'acta\\_t\\_%%' "
            "AND SCHEMA_NAME NOT LIKE 'acta\\_bench\\_%%'"
        )
        return frozenset(r[0] for r in rows)

    def _query(self, sql: str, params: Any = None) -> list[tuple[Any, ...]]:
        conn = _connect(self.target)
        try:
            with conn.cursor() as cur:
                cur.execute(sql, params)
                return list(cur.fetchall())
        finally:
            conn.close()

    def close(self) -> None:
        for name in self._made:
            self._query(f"DROP DATABASE IF EXISTS `{name}`")


class MariadbSupport:
    server = True

    def open_session(self, dsn: str, worker: str, base: Path) -> MariadbDatabases:
        return MariadbDatabases(dsn, worker)

    def location(self, provider: Provider) -> LedgerLocation:
        from acta.provider.mariadb.provider import MariadbProvider

        assert isinstance(provider, MariadbProvider)
        return LedgerLocation(
            "mariadb",
            provider.schema,
            f"`{provider.schema}`.",
            dsn=provider.target.public_url(),
            paramstyle="pyformat",
        )

    @contextlib.contextmanager
    def caller_transaction(self, provider: Provider) -> Iterator[Any]:
        """An application's own PyMySQL connection in an open transaction, committed when the
        block ends (rolled back if it raises)."""
        import pymysql

        from acta.provider.mariadb.provider import MariadbProvider

        assert isinstance(provider, MariadbProvider)
        conn = pymysql.connect(**provider.target.connect_kwargs(5))
        try:
            conn.begin()
            yield conn
            conn.commit()
        except BaseException:
            if conn.open:
                conn.rollback()
            raise
        finally:
            conn.close()

    def snapshot_dump(self, dsn: str) -> str:
        from acta.provider.mariadb.provider import MariadbProvider

        name = f"{PREFIX}snapshot_{secrets.token_hex(4)}"
        provider = MariadbProvider(test_dsn(dsn), schema=name, max_connections=1)
        try:
            provider.migrate()
            return provider.dump_schema().replace(name, "acta")
        finally:
            provider.close()
            MariadbFresh(test_dsn(dsn))._query(f"DROP DATABASE IF EXISTS `{name}`")


SUPPORT = MariadbSupport()
