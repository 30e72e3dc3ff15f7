"""The PostgreSQL provider: pooled connections, one transaction per verb, whole-verb retries.

Connections come from the pools of ``acta.provider.postgres.pools`` (a sync pool for the
producer surface, reads and the CLI; an async pool per event loop for the runtime), opened on
first use so that a wrong DSN fails at once. Connections are autocommit=False and every verb is
one explicit transaction: commit at the end, rollback on any error. A serialization failure,
a deadlock or a lost connection runs the whole verb again (reliability rule 7); a lost
connection is first dropped from the pool. A verb whose first statement already committed by
itself (``Op.alone``) is not started over but resumed (``acta.provider.verb.VerbRun``); one
whose reply was lost is in doubt, and its ``Op.in_doubt`` probe tells whether it committed.
Nothing here keeps session state (rule 6).

A verb can also run inside the caller's open transaction (transactional enqueue): on a psycopg
connection, or on a SQLAlchemy Connection/Session unwrapped by ``acta.provider.caller_tx``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any, TypeVar, cast

import psycopg
from psycopg import errors
from psycopg_pool import AsyncConnectionPool, ConnectionPool, PoolTimeout

from acta.clock import Clock
from acta.errors import ConfigurationError, SchemaError
from acta.names import validate_schema_name
from acta.provider import caller_tx
from acta.provider.postgres import catalog
from acta.provider.postgres.bell import PostgresBell
from acta.provider.postgres.connect import (
    DEFAULT_APPLICATION_NAME,
    Target,
    retry_kind,
)
from acta.provider.postgres.link import (
    AsyncLinks,
    Link,
    Links,
    SyncLinks,
    async_link,
    finish,
    idle_autocommit,
    sync_link,
)
from acta.provider.postgres.pools import Pools
from acta.provider.protocol import Capabilities, VerbFactory
from acta.provider.statements import Statement, Statements, replace_schema
from acta.provider.verb import Diverged, Op, VerbRun, drive_async

T = TypeVar("T")

PACKAGE = catalog.PACKAGE
ATTEMPTS = 5
_SAVEPOINT = "acta_verb"


class PostgresProvider:
    """Ledger in one schema of a PostgreSQL database (``acta`` by default).

    Options: ``min_connections``/``max_connections`` per pool (1 and 10), ``connect_timeout``
    (seconds for one connection attempt), ``pool_timeout`` (seconds to wait for a free pooled
    connection) and ``application_name`` (used unless the DSN sets one).
    """

    dialect = "postgres"
    capabilities = Capabilities(fused=True, notify=True)

    def __init__(
        self,
        dsn: str,
        *,
        schema: str = "acta",
        min_connections: int = 1,
        max_connections: int = 10,
        connect_timeout: float = 10.0,
        pool_timeout: float = 30.0,
        application_name: str = DEFAULT_APPLICATION_NAME,
    ) -> None:
        self.schema = validate_schema_name(schema)
        # One channel per ledger schema; the payload names the namespace.
        self.channel = f"{self.schema}_ready"
        for name, value in (
            ("min_connections", min_connections),
            ("max_connections", max_connections),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigurationError(f"{name} must be an int >= 1, got {value!r}")
        if min_connections > max_connections:
            raise ConfigurationError("min_connections cannot be larger than max_connections")
        self.target = Target(dsn, application_name)
        self.pools = Pools(
            self.target,
            min_size=min_connections,
            max_size=max_connections,
            connect_timeout=connect_timeout,
            pool_timeout=pool_timeout,
        )
        self._qualifier = catalog.qualifier(self.schema)
        self.statements = Statements(PACKAGE, self._qualify_sql, "pyformat")

    # -- identity -------------------------------------------------------------------------

    @property
    def where(self) -> str:
        return f"PostgreSQL {self.target.place} (schema {self.schema})"

    def qualify(self, name: str) -> str:
        return f"{self.schema}.{name}"

    def _qualify_sql(self, text: str) -> str:
        return replace_schema(text, self._qualifier)

    def apply_hint(self) -> str:
        """The command that brings this schema up to date (no password in it)."""
        hint = f"acta schema apply --database {self.target.public_dsn()}"
        return hint if self.schema == "acta" else f"{hint} --schema {self.schema}"

    # -- pools ----------------------------------------------------------------------------

    def bell(self, namespace: str, clock: Clock) -> PostgresBell:
        """A LISTEN/NOTIFY bell for workers of ``namespace``."""
        return PostgresBell(self.target, self.channel, namespace, clock)

    def sync_pool(self) -> ConnectionPool[psycopg.Connection[Any]]:
        """The pool for sync callers, opened on first use."""
        return self.pools.sync()

    async def async_pool(self) -> AsyncConnectionPool[psycopg.AsyncConnection[Any]]:
        """The pool for the running event loop, opened on first use."""
        return await self.pools.for_loop()

    def close(self) -> None:
        self.pools.close()

    async def aclose(self) -> None:
        await self.pools.aclose()

    # -- running verbs --------------------------------------------------------------------

    def _query(self, op: Op) -> Statement:
        # The text comes from acta's own .sql files, never from user input.
        return self.statements[op.statement]

    def run(self, make: VerbFactory[T], *, tx: object | None = None) -> T:
        if tx is not None:
            conn = caller_tx.unwrap(tx)
            if not isinstance(conn, psycopg.Connection):
                raise _wrong_connection(conn)
            return finish(lambda: self._in_caller_tx(sync_link(conn), make))
        links = SyncLinks(self.sync_pool())
        return finish(lambda: self._run(links, make))

    async def run_async(self, make: VerbFactory[T], *, tx: object | None = None) -> T:
        if tx is not None:
            conn = await caller_tx.unwrap_async(tx)
            if isinstance(conn, psycopg.AsyncConnection):
                return await self._in_caller_tx(async_link(conn), make)
            return self.run(make, tx=conn)
        return await self._run(AsyncLinks(await self.async_pool()), make)

    # The logic below is written once, over a Link: AsyncLink awaits psycopg's async
    # connection, SyncLink calls the sync one and never suspends (``finish`` runs it).

    async def _run(self, links: Links, make: VerbFactory[T]) -> T:
        run = VerbRun(make)
        for attempt in range(1, ATTEMPTS + 1):
            conn: psycopg.BaseConnection[Any] | None = None
            try:
                async with links.connection() as link:
                    conn = link.conn
                    return await self._attempt(link, run)
            except PoolTimeout as exc:
                raise self.target.unavailable(exc, "get a connection to") from None
            except Diverged as diverged:
                raise self._failed(cast(psycopg.Error, diverged.cause), None) from diverged.cause
            except psycopg.Error as exc:
                if self._again(run, exc, retry_kind(exc, conn), attempt) == "reconnect":
                    await links.check()  # drop every idle connection the server also closed
        raise AssertionError("unreachable")  # pragma: no cover

    def _again(self, run: VerbRun[Any], exc: psycopg.Error, kind: str | None, attempt: int) -> str:
        """After a failed attempt: raise if the verb cannot run again, else prepare it (start
        over, or resume after its committed first statement) and say how to retry."""
        if kind is None or attempt == ATTEMPTS:
            failure = self._failed(exc, kind)
            if failure is exc:
                raise exc
            raise failure from exc
        # A lost connection leaves whatever was in flight in doubt (its COMMIT may have
        # happened): the run probes for it before running the statement again.
        run.failed(exc, in_doubt=kind == "reconnect")
        return kind

    async def _attempt(self, link: Link, run: VerbRun[T]) -> T:
        """One attempt of a verb in a transaction of its own."""

        async def step(planned: tuple[Op, bool]) -> Any:
            op, alone = planned
            if not alone:
                return await link.execute(op, self._query(op))
            await link.set_autocommit(True)  # one round trip: the statement commits itself
            try:
                return await link.execute(op, self._query(op))
            finally:
                await link.set_autocommit(False)

        try:
            result = await drive_async(run.steps(), step)
            await link.commit()
            return result
        except BaseException:
            if not link.conn.closed:
                with contextlib.suppress(psycopg.Error):
                    await link.rollback()
            raise

    async def _in_caller_tx(
        self, linking: contextlib.AbstractAsyncContextManager[Link], make: VerbFactory[T]
    ) -> T:
        """A verb inside the caller's transaction: it commits or rolls back with theirs."""
        async with linking as link:

            async def step(op: Op) -> Any:
                return await link.execute(op, self._query(op))

            if idle_autocommit(link.conn):
                # No transaction is open and none would be: the verb is a transaction of its own.
                async with link.transaction():
                    return await drive_async(make(), step)
            # Inside the caller's transaction (psycopg opens it now if the caller had not yet
            # run anything): a savepoint keeps the verb atomic and never commits; the caller's
            # commit or rollback decides for acta's rows too.
            await link.raw(f"SAVEPOINT {_SAVEPOINT}")
            try:
                result = await drive_async(make(), step)
            except BaseException:
                if not link.conn.closed:
                    with contextlib.suppress(psycopg.Error):
                        await link.raw(f"ROLLBACK TO SAVEPOINT {_SAVEPOINT}")
                        await link.raw(f"RELEASE SAVEPOINT {_SAVEPOINT}")
                raise
            await link.raw(f"RELEASE SAVEPOINT {_SAVEPOINT}")
            return result

    # -- schema ---------------------------------------------------------------------------

    @contextlib.contextmanager
    def _connection(self, doing: str) -> Iterator[psycopg.Connection[Any]]:
        """A pooled connection for the schema operations (no retries: they run at startup).

        A connection lost on the way is an outage like a server that cannot be reached at all:
        ``DatabaseUnavailableError`` naming the host and the cause, so that a caller that waits
        for the database (a starting worker) tries again instead of crashing."""
        pool = self.sync_pool()
        try:
            conn = pool.getconn()
        except PoolTimeout as exc:
            raise self.target.unavailable(exc, "get a connection to") from None
        try:
            yield conn
        except (psycopg.OperationalError, psycopg.InterfaceError) as exc:
            if retry_kind(exc, conn) != "reconnect":
                raise
            raise self.target.unavailable(exc, doing) from None
        finally:
            pool.putconn(conn)

    def check_schema(self) -> None:
        with self._connection("check the schema in") as conn:
            catalog.check(conn, self.schema, self.where, self.apply_hint())

    def migrate(self) -> list[str]:
        with self._connection("migrate the schema in") as conn:
            return catalog.migrate(conn, self.schema, self.where)

    def provisioning_sql(self) -> str:
        return catalog.provisioning_sql(self.schema)

    def dump_schema(self) -> str:
        with self._connection("read the schema in") as conn:
            return catalog.dump(conn, self.schema)

    def _failed(self, exc: psycopg.Error, kind: str | None) -> Exception:
        """What a verb that cannot run again raises."""
        if kind == "reconnect":
            return self.target.unavailable(exc, "use")
        if isinstance(exc, errors.UndefinedTable | errors.InvalidSchemaName):
            return SchemaError(
                f"the acta schema in {self.where} is missing or incomplete "
                f"({self.target.scrub(str(exc).splitlines()[0])}); "
                f"apply it with `{self.apply_hint()}`"
            )
        return exc


def _wrong_connection(conn: object) -> ConfigurationError:
    if isinstance(conn, psycopg.AsyncConnection):
        return ConfigurationError(
            "an async connection was given to a sync call; use the async twin (enqueue_async)"
        )
    return ConfigurationError(
        "the PostgreSQL provider runs in a caller's transaction on a psycopg Connection or "
        f"AsyncConnection, or a SQLAlchemy Connection or Session, not {type(conn).__name__}"
    )
