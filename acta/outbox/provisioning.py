"""The outbox table: where it lives, the SQL that creates it, and creating it on a connection.

The outbox lives in the application's own database, which need not hold the ledger, so acta
never migrates it: the application (or its DBA) runs the script once, like any of its own
tables. ``provisioning_sql`` returns it without connecting anywhere (``acta outbox schema``
prints it); ``create_outbox`` runs it on a connection the caller hands over.

The table is always called ``acta_outbox``. Where it sits is the provider's to say
(acta.provider.outbox): SQLite has no schemas, so there it sits in the main database; on
PostgreSQL it goes into a schema of the caller's choice, ``public`` by default, the schema an
application's own tables usually live in. The ``acta_`` prefix keeps it apart from the
application's tables and the name never needs quoting. The scripts themselves are the
providers' (``acta/provider/<name>/outbox/schema.sql``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from acta.errors import ConfigurationError
from acta.names import validate_schema_name
from acta.provider import caller_tx, registry
from acta.provider import outbox as dialects

TABLE = "acta_outbox"
QUARANTINE = "acta_outbox_quarantine"


@dataclass(frozen=True, slots=True)
class Driver:
    """What kind of connection a caller handed over, once SQLAlchemy is unwrapped."""

    dialect: str
    """The provider's name (acta.provider.outbox.dialects())."""
    is_async: bool
    """Whether its ``execute`` must be awaited (psycopg AsyncConnection, aiosqlite)."""


def __getattr__(name: str) -> Any:
    # DIALECTS is read from the registry when asked, never at import: ``import acta`` imports
    # this module and must not load every provider's entry.
    if name == "DIALECTS":
        return dialects.dialects()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def table_name(dialect: str, schema: str | None = None) -> str:
    """The outbox table's qualified name in ``dialect`` (``schema`` where it has schemas)."""
    found = dialects.dialect(dialect)
    if not found.schemas:
        if schema is not None:
            # Refused rather than ignored: a caller who names a schema expects it to be used.
            raise ConfigurationError(
                f"{registry.entry(dialect).title} has no schemas; the outbox table is always "
                f"{TABLE} (got schema {schema!r})"
            )
        return TABLE
    chosen = schema or found.default_schema
    return TABLE if chosen is None else f"{validate_schema_name(chosen)}.{TABLE}"


def provisioning_sql(dialect: str, schema: str | None = None) -> str:
    """The script that creates the outbox in ``dialect``, ready to run or to review.

    It is idempotent (``IF NOT EXISTS`` throughout), so running it again is harmless.
    """
    table = table_name(dialect, schema)
    text = dialects.script(dialect)
    # Plain substitution is safe: the schema passed validate_schema_name, a bare identifier.
    quarantine = table.removesuffix(TABLE) + QUARANTINE
    return (
        text.replace("{schema}", table.rpartition(".")[0])
        .replace("{table}", table)
        .replace("{quarantine}", quarantine)
    )


def statements(script: str) -> list[str]:
    """The statements of one of our scripts, each ending with ``;`` at the end of a line.

    Drivers run one statement per ``execute`` (sqlite3's ``executescript`` would commit the
    caller's open transaction first), so the script is split here. Only our own scripts
    come through, which keep that layout, so no SQL parsing is needed.
    """
    found: list[str] = []
    current: list[str] = []
    for line in script.splitlines():
        if not current and (not line.strip() or line.lstrip().startswith("--")):
            continue  # comments between statements are for readers of the script
        current.append(line)
        if line.rstrip().endswith(";"):
            found.append("\n".join(current).rstrip().removesuffix(";"))
            current = []
    if current:
        raise AssertionError("an outbox script ends without a semicolon")
    return found


def driver_of(conn: object) -> Driver:
    """Tell a driver connection's dialect and whether it is async, without importing drivers
    (each provider's outbox dialect recognises its own, subclasses included)."""
    found, is_async = dialects.for_connection(conn)
    return Driver(found.name, is_async=is_async)


def create_outbox(connection: object, *, schema: str | None = None) -> None:
    """Create the outbox table (and on PostgreSQL its schema) on ``connection``.

    It runs inside whatever transaction the connection has and commits nothing: commit
    afterwards where your driver opened one (psycopg, SQLAlchemy). sqlite3 in its default mode
    runs DDL outside a transaction, so there the table exists at once.
    """
    conn = caller_tx.unwrap(connection)
    driver = driver_of(conn)
    if driver.is_async:
        raise ConfigurationError(
            "an async connection was given to create_outbox; use the async twin"
        )
    for statement in statements(provisioning_sql(driver.dialect, schema)):
        dialects.dialect(driver.dialect).execute(conn, statement)


async def create_outbox_async(connection: object, *, schema: str | None = None) -> None:
    """The async twin of ``create_outbox`` (sync connections are accepted too)."""
    conn = await caller_tx.unwrap_async(connection)
    driver = driver_of(conn)
    for statement in statements(provisioning_sql(driver.dialect, schema)):
        done = dialects.dialect(driver.dialect).execute(conn, statement)
        if driver.is_async:
            await done
