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
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, TypeVar

from acta.clock import Clock
from acta.errors import ConfigurationError, DatabaseUnavailableError, SchemaError
from acta.names import validate_schema_name
from acta.provider import caller_tx, migrate
from acta.provider.protocol import Capabilities, VerbFactory
from acta.provider.sqlite.aiosqlite_tx import is_aiosqlite, run_in_aiosqlite
from acta.provider.statements import Statements, replace_schema
from acta.provider.verb import Op, drive

T = TypeVar("T")

PACKAGE = "acta.provider.sqlite"
_BUSY_RETRIES = 5


def _bind(value: object) -> object:
    if isinstance(value, datetime):
        if value.tzinfo is None:
            raise ValueError("naive datetimes cannot be bound; use timezone-aware UTC")
        # Millisecond text sorts like the instant and matches strftime('%f').
        return (
            value.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S.")
            + f"{value.microsecond // 1000:03d}"
        )
    return value


def _instant(text: object) -> object:
    if isinstance(text, str):
        return datetime.fromisoformat(text).replace(tzinfo=UTC)
    return text


def bind_params(params: Any) -> dict[str, object]:
    """One statement's parameters as sqlite3 takes them (instants as millisecond text)."""
    return {k: _bind(v) for k, v in params.items()}


def shape_rows(description: Any, raw_rows: list[Any], fetch: str) -> Any:
    """Rows as dicts, instants (columns ``at`` and ``*_at``) as aware UTC datetimes; the first
    row or None for ``fetch == "one"``."""
    names = [d[0] for d in description] if description else []
    timed = [i for i, n in enumerate(names) if n == "at" or n.endswith("_at")]
    out = []
    for raw in raw_rows:
        row = dict(zip(names, raw, strict=True))
        for i in timed:
            row[names[i]] = _instant(raw[i])
        out.append(row)
    if fetch == "one":
        return out[0] if out else None
    return out


class SqliteProvider:
    """Ledger on a SQLite file (``:memory:`` is refused: workers need a shared file)."""

    dialect = "sqlite"
    features: frozenset[str] = frozenset()
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
            try:
                conn = sqlite3.connect(
                    self.path,
                    isolation_level=None,
                    check_same_thread=False,
                    timeout=self._busy_ms / 1000,
                )
                self.configure(conn)
            except sqlite3.Error as exc:
                raise DatabaseUnavailableError(f"cannot open {self.where}: {exc}") from exc
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

    def _run_op(self, conn: sqlite3.Connection, op: Op) -> Any:
        statement = self.statements[op.statement]
        if op.fetch == "many":
            rows = [bind_params(p) for p in op.params]
            conn.executemany(statement.sql, rows)
            return None
        params = bind_params(op.params)
        cur = conn.execute(statement.sql, params)
        if op.fetch == "rowcount":
            count = cur.rowcount
            cur.close()
            if count < 0:
                # Python's sqlite3 reports -1 for DML that starts with WITH; ask SQLite itself.
                count = conn.execute("SELECT changes()").fetchone()[0]
            return count
        # All rows, even for "one": the statement must finish so RETURNING writes complete.
        return shape_rows(cur.description, cur.fetchall(), op.fetch)

    def run(self, make: VerbFactory[T], *, tx: object | None = None) -> T:
        if tx is not None:
            return self._run_in_caller_tx(make, tx)
        with self._lock:
            conn = self._connection()
            for attempt in range(_BUSY_RETRIES):
                try:
                    conn.execute("BEGIN IMMEDIATE")
                except sqlite3.OperationalError as exc:
                    if not _is_busy(exc):
                        raise
                    if attempt + 1 < _BUSY_RETRIES:
                        continue
                    raise self._unavailable(exc) from exc
                try:
                    result = drive(make(), lambda op: self._run_op(conn, op))
                    conn.execute("COMMIT")
                    return result
                except sqlite3.OperationalError as exc:
                    conn.execute("ROLLBACK")
                    if not _is_busy(exc):
                        raise
                    if attempt + 1 < _BUSY_RETRIES:
                        continue
                    raise self._unavailable(exc) from exc
                except BaseException:
                    if conn.in_transaction:
                        conn.execute("ROLLBACK")
                    raise
            raise AssertionError("unreachable")  # pragma: no cover

    def _unavailable(self, exc: sqlite3.OperationalError) -> DatabaseUnavailableError:
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
        if not tx.in_transaction and _begins_implicitly(tx):
            # Python's default mode opens a transaction before the first write and leaves it
            # to the caller's commit() or rollback(); the enqueue must belong to it too, even
            # when it is that first write.
            tx.execute(f"BEGIN {tx.isolation_level or ''}".rstrip())
        # A savepoint keeps the batch atomic inside the caller's transaction, and makes it a
        # transaction of its own when the caller had none open (autocommit connections).
        tx.execute("SAVEPOINT acta_enqueue")
        try:
            result = drive(make(), lambda op: self._run_op(tx, op))
        except BaseException:
            tx.execute("ROLLBACK TO acta_enqueue")
            tx.execute("RELEASE acta_enqueue")
            raise
        tx.execute("RELEASE acta_enqueue")
        return result

    async def run_async(self, make: VerbFactory[T], *, tx: object | None = None) -> T:
        if tx is not None:
            conn = await caller_tx.unwrap_async(tx)
            if is_aiosqlite(conn):
                return await run_in_aiosqlite(self.statements, make, conn)
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
            conn.execute("BEGIN IMMEDIATE")
            try:
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
            except BaseException:
                conn.execute("ROLLBACK")
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


def _begins_implicitly(conn: sqlite3.Connection) -> bool:
    """Whether the driver, not the caller, opens this connection's transactions."""
    legacy = getattr(sqlite3, "LEGACY_TRANSACTION_CONTROL", -1)
    mode = getattr(conn, "autocommit", legacy)  # Python 3.12+: True, False or legacy
    return mode is False or (mode == legacy and conn.isolation_level is not None)


def _is_busy(exc: sqlite3.OperationalError) -> bool:
    text = str(exc).lower()
    return "locked" in text or "busy" in text


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
