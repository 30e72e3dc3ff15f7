"""The embedded SQLite provider: one file, one writer at a time, zero setup.

Connections run in autocommit mode and every verb opens ``BEGIN IMMEDIATE`` itself, so the
write lock is taken up front and a verb never upgrades a read lock halfway (the classic
SQLITE_BUSY deadlock). WAL lets readers run beside the writer; ``busy_timeout`` makes a
competing writer wait in SQLite rather than in Python. Async callers hand work to one
dedicated thread, so the event loop never blocks on a file lock.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Literal, TypeVar

from acta.clock import Clock
from acta.errors import ConfigurationError, DatabaseUnavailableError, SchemaError
from acta.names import validate_schema_name
from acta.provider import caller_tx, migrate
from acta.provider.protocol import Capabilities, VerbFactory
from acta.provider.sqlite.aiosqlite_tx import is_aiosqlite, run_in_aiosqlite
from acta.provider.sqlite.transport import (
    RELEASE,
    call_sqlite3,
    io_trouble,
    is_busy,
    op_calls,
    savepoint_enter,
    savepoint_undo,
    transaction_instant,
)
from acta.provider.statements import Statements, replace_schema
from acta.provider.verb import drive

T = TypeVar("T")

PACKAGE = "acta.provider.sqlite"
_BUSY_RETRIES = 5


class SqliteProvider:
    """Ledger on a SQLite file (``:memory:`` is refused: workers need a shared file)."""

    dialect = "sqlite"
    capabilities = Capabilities(fused=False, notify=False)
    channel = ""

    def __init__(
        self,
        path: str | Path,
        *,
        schema: str = "acta",
        durability: Literal["normal", "full"] = "normal",
        busy_timeout: float = 5.0,
    ) -> None:
        self.schema = validate_schema_name(schema)
        text = str(path)
        if text in ("", ":memory:") or text.startswith("file::memory:"):
            raise ConfigurationError(
                "SQLite needs a file path: an in-memory database cannot be shared by workers"
            )
        if durability not in ("normal", "full"):
            raise ConfigurationError("durability must be 'normal' or 'full'")
        self.path = Path(text)
        self._durability = durability
        self._busy_ms = int(busy_timeout * 1000)
        self._prefix = f"{self.schema}_"
        self.statements = Statements(PACKAGE, self._qualify_sql, "named")
        self._lock = threading.RLock()
        self._conn: sqlite3.Connection | None = None
        self._thread: ThreadPoolExecutor | None = None

    # -- identity -------------------------------------------------------------------------

    @property
    def where(self) -> str:
        return f"sqlite file {self.path}"

    def qualify(self, name: str) -> str:
        return f"{self._prefix}{name}"

    def _qualify_sql(self, sql: str) -> str:
        return replace_schema(sql, self._prefix)

    # -- connections ----------------------------------------------------------------------

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            if not self.path.parent.exists():
                raise DatabaseUnavailableError(
                    f"cannot open {self.where}: folder {self.path.parent} does not exist"
                )
            conn: sqlite3.Connection | None = None
            try:
                conn = sqlite3.connect(
                    self.path,
                    isolation_level=None,
                    check_same_thread=False,
                    timeout=self._busy_ms / 1000,
                )
                self.configure(conn)
            except sqlite3.Error as exc:
                if conn is not None:
                    conn.close()  # a half-configured connection must not keep the file open
                why = io_trouble(exc) or str(exc)
                raise DatabaseUnavailableError(f"cannot open {self.where}: {why}") from exc
            self._conn = conn
        return self._conn

    def configure(self, conn: sqlite3.Connection) -> None:
        """The pragmas every acta connection uses (reliability rule 8)."""
        conn.execute(f"PRAGMA busy_timeout = {self._busy_ms}")
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute(f"PRAGMA synchronous = {self._durability.upper()}")
        conn.execute("PRAGMA foreign_keys = ON")

    def bell(self, namespace: str, clock: Clock) -> None:
        """SQLite has no notifications: other processes' enqueues are found by polling."""
        return None

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
        if self._thread is not None:
            self._thread.shutdown(wait=True)
            self._thread = None

    async def aclose(self) -> None:
        await asyncio.get_running_loop().run_in_executor(None, self.close)

    # -- running verbs --------------------------------------------------------------------

    def _drive(self, conn: sqlite3.Connection, make: VerbFactory[T]) -> T:
        """Run the verb ``make()`` on ``conn`` inside the transaction the caller opened; every
        statement binds the one instant read here (see ``transaction_instant``)."""
        now = transaction_instant()
        return drive(
            make(),
            lambda op: drive(op_calls(self.statements, op, now), lambda c: call_sqlite3(conn, c)),
        )

    def run(self, make: VerbFactory[T], *, tx: object | None = None) -> T:
        if tx is not None:
            return self._run_in_caller_tx(make, tx)
        with self._lock:
            conn = self._connection()
            for attempt in range(_BUSY_RETRIES):
                try:
                    conn.execute("BEGIN IMMEDIATE")
                    result = self._drive(conn, make)
                    conn.execute("COMMIT")
                    return result
                except sqlite3.Error as exc:
                    # SQLite has already rolled back after some errors (a full disk, an I/O
                    # error); a second ROLLBACK would hide the cause behind "no transaction".
                    if conn.in_transaction:
                        conn.execute("ROLLBACK")
                    if is_busy(exc):
                        if attempt + 1 < _BUSY_RETRIES:
                            continue
                        raise self._locked(exc) from exc
                    unavailable = self._io_error(exc)
                    if unavailable is not None:
                        raise unavailable from exc
                    raise
                except BaseException:
                    if conn.in_transaction:
                        conn.execute("ROLLBACK")
                    raise
            raise AssertionError("unreachable")  # pragma: no cover

    def _io_error(self, exc: BaseException) -> DatabaseUnavailableError | None:
        """The typed error for a read-only, full, failing or unopenable file; None otherwise."""
        trouble = io_trouble(exc) if isinstance(exc, sqlite3.Error) else None
        if trouble is None:
            return None
        return DatabaseUnavailableError(f"cannot write to {self.where}: {trouble}")

    def _locked(self, exc: sqlite3.Error) -> DatabaseUnavailableError:
        """A write lock another connection kept past every retry: the database is unavailable
        for now (typed, so callers and the worker can wait and try again)."""
        waited = self._busy_ms / 1000 * _BUSY_RETRIES
        return DatabaseUnavailableError(
            f"{self.where} stayed locked by another writer for about {waited:g} s "
            f"({_BUSY_RETRIES} tries of busy_timeout={self._busy_ms / 1000:g} s): {exc}"
        )

    def _run_in_caller_tx(self, make: VerbFactory[T], tx: object) -> T:
        tx = caller_tx.unwrap(tx)  # a SQLAlchemy Connection or Session -> its sqlite3 connection
        if not isinstance(tx, sqlite3.Connection):
            raise ConfigurationError(
                "the SQLite provider enqueues on a sqlite3.Connection, a SQLAlchemy Connection "
                "or Session (sync calls), or a SQLAlchemy AsyncConnection or AsyncSession on "
                f"aiosqlite (async calls), not {type(tx).__module__}.{type(tx).__qualname__}"
            )
        for sql in savepoint_enter(tx):
            tx.execute(sql)
        try:
            result = self._drive(tx, make)
        except BaseException as exc:
            for sql in savepoint_undo(tx):
                tx.execute(sql)
            unavailable = self._io_error(exc)
            if unavailable is not None:
                raise unavailable from exc
            raise
        for sql in RELEASE:
            tx.execute(sql)
        return result

    async def run_async(self, make: VerbFactory[T], *, tx: object | None = None) -> T:
        if tx is not None:
            conn = await caller_tx.unwrap_async(tx)
            if is_aiosqlite(conn):
                return await run_in_aiosqlite(self.statements, make, conn, self.where)
            return self._run_in_caller_tx(make, conn)
        if self._thread is None:
            self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="acta-sqlite")
        return await asyncio.get_running_loop().run_in_executor(self._thread, self.run, make)

    # -- schema ---------------------------------------------------------------------------

    def _applied(self, conn: sqlite3.Connection) -> list[tuple[int, str]] | None:
        table = self.qualify("migrations")
        exists = conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)
        ).fetchone()
        if not exists:
            return None
        rows = conn.execute(f"SELECT version, checksum FROM {table} ORDER BY version").fetchall()
        return [(int(v), str(c)) for v, c in rows]

    def _plan(self, conn: sqlite3.Connection) -> list[migrate.Migration]:
        return migrate.pending(migrate.load(PACKAGE), self._applied(conn) or [], self.where)

    def check_schema(self) -> None:
        if self._conn is None and not self.path.exists():
            # Checking must not create the file (sqlite3.connect would): say what to run.
            hint = f"acta schema apply --database {self.path}"
            raise SchemaError(
                f"{self.where} does not exist. Create the ledger with `{hint}`, "
                "or pass apply_migrations=True for local work."
            )
        with self._lock:
            todo = self._plan(self._connection())
        if todo:
            hint = f"acta schema apply --database {self.path}"
            raise SchemaError(migrate.missing_message(self.where, todo, hint))

    def migrate(self) -> list[str]:
        with self._lock:
            conn = self._connection()
            try:
                conn.execute("BEGIN IMMEDIATE")
                conn.execute(_VERSION_TABLE.format(table=self.qualify("migrations")))
                todo = self._plan(conn)
                for m in todo:
                    for statement in split_statements(self._qualify_sql(m.sql)):
                        conn.execute(statement)
                    conn.execute(
                        f"INSERT INTO {self.qualify('migrations')} "
                        "(version, name, checksum, applied_at) "
                        "VALUES (?, ?, ?, strftime('%Y-%m-%d %H:%M:%f', 'now'))",
                        (m.version, m.name, m.checksum),
                    )
                conn.execute("COMMIT")
            except BaseException as exc:
                if conn.in_transaction:  # SQLite may have rolled back already (a full disk)
                    conn.execute("ROLLBACK")
                unavailable = self._io_error(exc)
                if unavailable is not None:
                    raise unavailable from exc
                raise
        return [f"{m.version:04d}_{m.name}" for m in todo]

    def provisioning_sql(self) -> str:
        parts = ["BEGIN IMMEDIATE;", _VERSION_TABLE.format(table=self.qualify("migrations")) + ";"]
        for m in migrate.load(PACKAGE):
            parts.append(self._qualify_sql(m.sql).rstrip())
            parts.append(
                f"INSERT INTO {self.qualify('migrations')} (version, name, checksum, applied_at) "
                f"VALUES ({m.version}, '{m.name}', '{m.checksum}', "
                "strftime('%Y-%m-%d %H:%M:%f', 'now'));"
            )
        parts.append("COMMIT;")
        return "\n\n".join(parts) + "\n"

    def dump_schema(self) -> str:
        with self._lock:
            rows = (
                self._connection()
                .execute(
                    "SELECT type, name, sql FROM sqlite_master "
                    "WHERE name LIKE ? ESCAPE '\\' AND sql IS NOT NULL ORDER BY type, name",
                    (self._prefix.replace("_", "\\_") + "%",),
                )
                .fetchall()
            )
        return "".join(f"-- {t} {n}\n{sql.strip()};\n\n" for t, n, sql in rows)


_VERSION_TABLE = (
    "CREATE TABLE IF NOT EXISTS {table} (\n"
    "    version    INTEGER PRIMARY KEY,\n"
    "    name       TEXT NOT NULL,\n"
    "    checksum   TEXT NOT NULL,\n"
    "    applied_at TEXT NOT NULL\n"
    ")"
)


def split_statements(script: str) -> list[str]:
    """Split a SQL script into complete statements (``;`` inside strings is respected)."""
    out: list[str] = []
    buf = ""
    for line in script.splitlines(keepends=True):
        buf += line
        if sqlite3.complete_statement(buf):
            stripped = buf.strip()
            if stripped and not all(
                part.strip().startswith("--") or not part.strip() for part in stripped.splitlines()
            ):
                out.append(stripped)
            buf = ""
    if buf.strip() and not all(
        p.strip().startswith("--") or not p.strip() for p in buf.splitlines()
    ):
        raise SchemaError(
            f"incomplete SQL statement at the end of a migration: {buf.strip()[:80]!r}"
        )
    return out
