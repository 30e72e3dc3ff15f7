"""``acta schema``: create or upgrade the ledger schema, or print its SQL for review.

``apply`` runs the pending forward-only migrations in one transaction and says what it did.
``sql`` prints the complete provisioning script without connecting anywhere, for teams whose
DBAs apply schema changes themselves.
"""

from __future__ import annotations

import argparse
import importlib

from acta.app import Acta
from acta.cli.common import (
    EXIT_OK,
    HANDLER,
    add_ledger_options,
    resolve_ledger,
)
from acta.errors import ConfigurationError
from acta.names import validate_schema_name
from acta.provider.protocol import Provider

DIALECTS = ("sqlite", "postgres")
# Providers are built without connecting; this target only satisfies their constructors.
_PLACEHOLDER = {"sqlite": "acta-schema-review.sqlite3", "postgres": "postgresql://localhost/acta"}


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``schema apply|sql`` to a subcommand set."""
    schema = commands.add_parser(
        "schema",
        help="apply migrations or print the provisioning SQL",
        description="Manage the ledger schema.",
    )
    sub = schema.add_subparsers(title="commands", metavar="COMMAND", required=True)

    apply = sub.add_parser(
        "apply",
        help="apply pending migrations (creates the SQLite file if needed)",
        description="Apply every pending migration to the ledger, in one transaction.",
    )
    add_ledger_options(apply)
    apply.set_defaults(**{HANDLER: apply_command})

    sql = sub.add_parser(
        "sql",
        help="print the full provisioning SQL",
        description="Print the SQL that creates the ledger schema; nothing is connected to.",
    )
    sql.add_argument("--dialect", choices=DIALECTS, default="sqlite", help="default: sqlite")
    sql.add_argument("--schema", default="acta", help="schema name (default: acta)")
    sql.set_defaults(**{HANDLER: sql_command})


def apply_command(args: argparse.Namespace, host_app: Acta | None) -> int:
    ledger = resolve_ledger(args, host_app)
    app = ledger.app or Acta(ledger.database, schema=ledger.schema)
    try:
        applied = app.migrate()
        where = app.provider.where
    finally:
        if ledger.owned:
            app.close()
    if not applied:
        print(f"schema {ledger.schema!r} is up to date in {where}")
        return EXIT_OK
    for name in applied:
        print(f"applied {name}")
    print(f"schema {ledger.schema!r} is up to date in {where} ({len(applied)} applied)")
    return EXIT_OK


def sql_command(args: argparse.Namespace, host_app: Acta | None) -> int:
    schema = validate_schema_name(args.schema)
    print(provisioning_sql(args.dialect, schema), end="")
    return EXIT_OK


def provisioning_sql(dialect: str, schema: str) -> str:
    """The provisioning script of ``dialect`` for ``schema``, without a connection."""
    if dialect == "postgres":
        try:
            # The PostgreSQL provider is optional: its driver comes with the postgres extra.
            module = importlib.import_module("acta.provider.postgres")
            getattr(module, "PostgresProvider")  # noqa: B009 - an ImportError by another name
        except (ImportError, AttributeError) as exc:
            raise ConfigurationError(
                "the PostgreSQL schema needs the postgres extra: pip install 'acta[postgres]' "
                f"({exc})"
            ) from None
    from acta.provider.factory import open_provider

    provider: Provider = open_provider(_PLACEHOLDER[dialect], schema=schema)
    try:
        return provider.provisioning_sql()
    finally:
        provider.close()
