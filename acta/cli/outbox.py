"""``acta outbox``: the outbox table that lives in the application's own database.

``schema`` prints the SQL that creates ``acta_outbox`` without connecting anywhere. acta never
applies it itself: the outbox sits next to the application's tables, which the application
(or its DBA) provisions, maybe in a database the ledger knows nothing about. ``quarantine``
(acta.cli.outbox_quarantine) reads and decides the rows the relay could not admit.
"""

from __future__ import annotations

import argparse

from acta.app import Acta
from acta.cli import outbox_quarantine
from acta.cli.command import EXIT_OK, HANDLER, UsageError
from acta.errors import ConfigurationError
from acta.outbox import provisioning_sql
from acta.provider.outbox import dialects


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``outbox schema`` and ``outbox quarantine ...`` to a subcommand set."""
    outbox = commands.add_parser(
        "outbox",
        help="the outbox table in your application's database",
        description="The outbox: job requests staged in your application's own database.",
    )
    sub = outbox.add_subparsers(title="commands", metavar="COMMAND", required=True)
    schema = sub.add_parser(
        "schema",
        help="print the SQL that creates the outbox table",
        description=(
            "Print the SQL that creates the acta_outbox table; nothing is connected to. "
            "Run it in the database that holds your business data."
        ),
    )
    schema.add_argument("--dialect", choices=dialects(), required=True)
    schema.add_argument(
        "--schema",
        default=None,
        help="PostgreSQL schema of the table (default: public); SQLite has none",
    )
    schema.set_defaults(**{HANDLER: schema_command})
    outbox_quarantine.register(sub)


def schema_command(args: argparse.Namespace, host_app: Acta | None) -> int:
    try:
        sql = provisioning_sql(args.dialect, args.schema)
    except ConfigurationError as exc:
        # A schema on SQLite is a contradiction on the command line, hence a usage error.
        raise UsageError(str(exc)) from None
    print(sql, end="")
    return EXIT_OK
