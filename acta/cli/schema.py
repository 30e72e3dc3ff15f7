"""``acta schema``: create or upgrade the ledger schema, or print its SQL for review.

``apply`` runs the pending forward-only migrations in one transaction and says what it did.
``sql`` prints the complete provisioning script without connecting anywhere, for teams whose
DBAs apply schema changes themselves.
"""

from __future__ import annotations

import argparse

from acta.about import install_hint
from acta.app import Acta
from acta.cli.command import EXIT_OK, HANDLER
from acta.cli.ledger import add_ledger_options, resolve_ledger
from acta.errors import ConfigurationError
from acta.names import validate_schema_name
from acta.provider import registry
from acta.provider.protocol import Provider


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
    names = registry.names()
    sql.add_argument("--dialect", choices=names, default=names[0], help=f"default: {names[0]}")
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
    entry = registry.entry(dialect)
    try:
        # Built without connecting: the entry's placeholder only satisfies the constructor.
        provider: Provider = entry.open(entry.placeholder, schema=schema)
    except ConfigurationError as exc:
        if entry.extra is None:
            raise
        raise ConfigurationError(
            f"the {entry.title} schema needs the {entry.extra} extra: "
            f"{install_hint(entry.extra)} ({exc})"
        ) from None
    try:
        return provider.provisioning_sql()
    finally:
        provider.close()
