"""What a provider supplies for the transactional outbox: the application database as a source.

The outbox lives in the application's own database (acta.outbox). Everything that differs
between databases there is the provider's, in its folder: ``outbox/schema.sql`` (the script
that creates ``acta_outbox`` and its quarantine), ``outbox/relay.sql`` (the relay's named
statements, ``-- name:`` blocks read by acta's one statement parser) and a module whose
``OUTBOX`` implements ``OutboxDialect`` below (which connections are its driver's, how values
are bound, how a staged row's id comes back). The registry entry names that module
(``ProviderEntry.outbox``); a provider without one cannot be an outbox source. acta.outbox asks
here and never names a dialect.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from importlib import import_module, resources
from typing import Any, Protocol

from acta.errors import ConfigurationError
from acta.provider import registry
from acta.provider.statements import convert_params, parse_blocks


class OutboxDialect(Protocol):
    """One database as an outbox source (the ``OUTBOX`` of a provider's outbox module)."""

    name: str
    """The provider's name (its registry entry's)."""
    default_schema: str | None
    """Where ``acta_outbox`` goes when the caller names no schema (PostgreSQL: ``public``);
    None: the table is not qualified."""
    schemas: bool
    """Whether the caller may name a schema for the table (SQLite has none: refused)."""
    begin: str
    """The statement that opens a relay transaction (SQLite: ``BEGIN IMMEDIATE``)."""
    stage_returns_id: bool
    """The ``stage`` statement answers the new row's id as a row (``RETURNING id``); otherwise
    the cursor's ``lastrowid`` holds it."""

    def driver(self, conn: object) -> bool | None:
        """None when ``conn`` is not a connection of this dialect's drivers; else whether its
        ``execute`` must be awaited."""
        ...

    def connect(self, url: str) -> Any:
        """A new sync connection to the source at ``url`` (one of this provider's targets),
        ready for ``adopt``; ConfigurationError naming the fix when it cannot be opened."""
        ...

    def adopt(self, conn: Any) -> None:
        """Make a relay's connection ready: autocommit (transactions are the relay's own),
        and reading values acta cannot parse as they are stored."""
        ...

    def bind(self, value: Any) -> Any:
        """A value as this database stores it in the outbox (instants, lists, booleans)."""
        ...

    def execute(self, conn: Any, sql: str, params: Any = None) -> Any:
        """Run one statement on a connection of this dialect's driver and answer its cursor
        (awaitable for an async connection): sqlite3 and psycopg run it on the connection
        itself, PyMySQL only on a cursor."""
        ...


def _entries() -> list[registry.ProviderEntry]:
    return [e for e in registry.entries() if e.outbox is not None]


def dialects() -> tuple[str, ...]:
    """The providers that can hold an outbox, in registry order."""
    return tuple(e.name for e in _entries())


@cache
def dialect(name: str) -> OutboxDialect:
    """The outbox dialect of provider ``name``; ConfigurationError naming the known ones."""
    for entry in _entries():
        if entry.name == name:
            assert entry.outbox is not None
            found: OutboxDialect = import_module(entry.outbox).OUTBOX
            return found
    raise ConfigurationError(f"unknown outbox dialect {name!r}; use one of {', '.join(dialects())}")


def for_connection(conn: object) -> tuple[OutboxDialect, bool]:
    """The dialect of a driver connection and whether it is async; ConfigurationError for a
    connection no outbox dialect knows."""
    for name in dialects():
        found = dialect(name)
        is_async = found.driver(conn)
        if is_async is not None:
            return found, is_async
    kind = type(conn)
    raise ConfigurationError(
        f"cannot use a {kind.__module__}.{kind.__qualname__} for the outbox; pass a driver "
        f"connection of {', '.join(e.title for e in _entries())}, or a SQLAlchemy Connection "
        "or Session"
    )


def for_url(url: str) -> OutboxDialect:
    """The dialect whose provider accepts ``url`` as a database target."""
    entry = registry.for_target(url)
    if entry.outbox is None:
        raise ConfigurationError(f"{entry.title} cannot hold an outbox (got {url!r})")
    return dialect(entry.name)


def script(name: str) -> str:
    """The provider's ``outbox/schema.sql`` as written (``{schema}``, ``{table}``,
    ``{quarantine}`` tokens unresolved)."""
    package = registry.entry(name).package
    return resources.files(package).joinpath("outbox", "schema.sql").read_text("utf-8")


@cache
def relay_statements(name: str) -> Mapping[str, str]:
    """The named statements of the provider's ``outbox/relay.sql``, parameters already in the
    driver's style (``{table}`` and ``{quarantine}`` tokens unresolved)."""
    entry = registry.entry(name)
    source = f"{name}/outbox/relay.sql"
    text = resources.files(entry.package).joinpath("outbox", "relay.sql").read_text("utf-8")
    blocks = parse_blocks(text, source)
    return {key: convert_params(sql, entry.paramstyle)[0] for key, sql in blocks.items()}


def stage_sql(name: str, columns: tuple[str, ...]) -> tuple[str, tuple[str, ...]]:
    """The INSERT of one staged row (``{table}`` unresolved) in the driver's style, and the
    parameter names in order; the new id comes back as ``OutboxDialect.stage_returns_id``
    says."""
    entry = registry.entry(name)
    values = ", ".join(f":{c}" for c in columns)
    text = f"INSERT INTO {{table}} ({', '.join(columns)}) VALUES ({values})"
    if dialect(name).stage_returns_id:
        text += " RETURNING id"
    return convert_params(text, entry.paramstyle)
