"""The MariaDB provider (MySQL 8.0+ where it costs little): pooled PyMySQL connections, one
transaction per verb, whole-verb retries.

Every verb is one transaction on a pooled connection (autocommit off): commit at the end,
rollback on any error. A deadlock (1213) or a lock wait that timed out (1205) runs the whole
verb again; a lost connection is dropped and the verb runs again on a new one (reliability
rule 7). Statements come from ``queries/*.sql``; the ones MariaDB cannot say in one statement
(``UPDATE ... RETURNING``) are programs (``programs.py``). Async callers run the same sync code
on a thread pool, as the SQLite provider does: one driver, one set of errors and types.

There is no LISTEN/NOTIFY: ``bell()`` is None and workers poll. A verb can run inside the
caller's open transaction on a PyMySQL connection or a SQLAlchemy Connection/Session over it.
The schema lives in its own database (MariaDB's schema), ``acta`` by default (``migrate.py``).
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from acta.clock import Clock as ActaClock
from acta.errors import ConfigurationError, SchemaError
from acta.names import validate_schema_name
from acta.provider import caller_tx
from acta.provider.mariadb import migrate
from acta.provider.mariadb.connect import Target, error_code, retry_kind
from acta.provider.mariadb.pool import Pool
from acta.provider.mariadb.transport import Clock, calls, perform
from acta.provider.protocol import Capabilities, VerbFactory
from acta.provider.statements import Statements, replace_schema
from acta.provider.verb import drive

T = TypeVar("T")

PACKAGE = "acta.provider.mariadb"
ATTEMPTS = 5
_SAVEPOINT = "acta_verb"
_MISSING = frozenset({1146, 1049})  # ER_NO_SUCH_TABLE, ER_BAD_DB_ERROR


class MariadbProvider:
    """Ledger in one database of a MariaDB server (``acta`` by default).

    Options: ``max_connections`` (10), ``connect_timeout`` (seconds for one connection
    attempt) and ``pool_timeout`` (seconds to wait for a free pooled connection).
    """

    dialect = "mariadb"
    capabilities = Capabilities(fused=False, notify=False)
    channel = ""

    def __init__(
        self,
        url: str,
        *,
        schema: str = "acta",
        min_connections: int = 1,
        max_connections: int = 10,
        connect_timeout: float = 10.0,
        pool_timeout: float = 30.0,
        application_name: str = "acta",
    ) -> None:
        self.schema = validate_schema_name(schema)
        if isinstance(max_connections, bool) or not isinstance(max_connections, int):
            raise ConfigurationError(
                f"max_connections must be an int >= 1, got {max_connections!r}"
            )
        if max_connections < 1 or min_connections > max_connections:
            raise ConfigurationError("max_connections must be >= 1 and >= min_connections")
        self.target = Target.parse(url)
        self.pool = Pool(self.target, max_connections, connect_timeout, pool_timeout)
        self._qualifier = f"`{self.schema}`."
        self.statements = Statements(PACKAGE, self._qualify_sql, "pyformat")
        self._threads: ThreadPoolExecutor | None = None
        self._max = max_connections

    # -- identity -------------------------------------------------------------------------

    @property
    def where(self) -> str:
        return f"MariaDB {self.target.place} (database {self.schema})"

    def qualify(self, name: str) -> str:
        return f"{self.schema}.{name}"

    def _qualify_sql(self, text: str) -> str:
        return replace_schema(text, self._qualifier)

    def apply_hint(self) -> str:
        hint = f"acta schema apply --database {self.target.public_url()}"
        return hint if self.schema == "acta" else f"{hint} --schema {self.schema}"

    def bell(self, namespace: str, clock: ActaClock) -> None:
        """MariaDB has no notifications: workers find other processes' enqueues by polling."""
        return None

    def close(self) -> None:
        self.pool.close()
        if self._threads is not None:
            self._threads.shutdown(wait=True)
            self._threads = None

    async def aclose(self) -> None:
        await asyncio.get_running_loop().run_in_executor(None, self.close)

    # -- running verbs --------------------------------------------------------------------

    def _drive(self, conn: Any, make: VerbFactory[T]) -> T:
        clock = Clock()
        with conn.cursor() as cur:
            return drive(
                make(),
                lambda op: drive(calls(self.statements, op, clock), lambda c: perform(cur, c)),
            )

    def run(self, make: VerbFactory[T], *, tx: object | None = None) -> T:
        if tx is not None:
            return self._in_caller_tx(caller_tx.unwrap(tx), make)
        import pymysql

        for attempt in range(1, ATTEMPTS + 1):
            conn = self.pool.get()
            broken = False
            try:
                result = self._drive(conn, make)
                conn.commit()
                return result
            except pymysql.err.Error as exc:
                kind = retry_kind(exc)
                broken = kind == "reconnect"
                _rollback(conn)
                if kind is None or attempt == ATTEMPTS:
                    failure = self._failed(exc, kind)
                    if failure is exc:
                        raise
                    raise failure from exc
            except BaseException:
                _rollback(conn)
                raise
            finally:
                self.pool.put(conn, broken)
        raise AssertionError("unreachable")  # pragma: no cover

    async def run_async(self, make: VerbFactory[T], *, tx: object | None = None) -> T:
        if tx is not None:
            conn = await caller_tx.unwrap_async(tx)
            return self._in_caller_tx(conn, make)
        if self._threads is None:
            self._threads = ThreadPoolExecutor(self._max, thread_name_prefix="acta-mariadb")
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._threads, lambda: self.run(make))

    def _in_caller_tx(self, conn: Any, make: VerbFactory[T]) -> T:
        """A verb inside the caller's transaction, in a savepoint: the caller's commit or
        rollback decides for acta's rows too. An autocommit connection gets a transaction of
        the verb's own."""
        import pymysql

        if not isinstance(conn, pymysql.connections.Connection):
            raise ConfigurationError(
                "the MariaDB provider runs in a caller's transaction on a PyMySQL Connection, "
                "or a SQLAlchemy Connection or Session over one (mysql+pymysql://), not "
                f"{type(conn).__module__}.{type(conn).__qualname__}"
            )
        own = conn.get_autocommit()
        with conn.cursor() as cur:
            cur.execute("BEGIN" if own else f"SAVEPOINT {_SAVEPOINT}")
        try:
            result = self._drive(conn, make)
        except BaseException:
            if conn.open:
                with conn.cursor() as cur:
                    cur.execute("ROLLBACK" if own else f"ROLLBACK TO SAVEPOINT {_SAVEPOINT}")
            raise
        with conn.cursor() as cur:
            cur.execute("COMMIT" if own else f"RELEASE SAVEPOINT {_SAVEPOINT}")
        return result

    def _failed(self, exc: BaseException, kind: str | None) -> BaseException:
        if kind == "reconnect":
            return self.target.unavailable(exc, "use")
        if error_code(exc) in _MISSING:
            return SchemaError(
                f"the acta schema in {self.where} is missing or incomplete "
                f"({self.target.scrub(str(exc))}); apply it with `{self.apply_hint()}`"
            )
        return exc

    # -- schema ---------------------------------------------------------------------------

    def migrate(self) -> list[str]:
        return migrate.migrate(self.pool, self.schema, self.where)

    def check_schema(self) -> None:
        migrate.check(self.pool, self.schema, self.where, self.apply_hint())

    def provisioning_sql(self) -> str:
        return migrate.provisioning_sql(self.schema)

    def dump_schema(self) -> str:
        return migrate.dump(self.pool, self.schema)


def _rollback(conn: Any) -> None:
    try:
        if conn.open:
            conn.rollback()
    except Exception:  # the connection broke: nothing left to roll back
        pass
