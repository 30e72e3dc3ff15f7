"""Which ledger a command works on: the ledger options (``--database`` / ``--app`` /
``--schema``), importing the user's ``Acta`` object from ``module:attribute``, and opening a
ledger for reading.

Commands receive the parsed arguments and, when a host application mounted the commands in
its own CLI, that host's ``Acta`` object; everything here treats both sources alike.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import sys
import traceback
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from acta.app import Acta
from acta.cli.command import CliError, UsageError
from acta.errors import ActaError, SchemaError
from acta.names import validate_schema_name
from acta.provider import registry
from acta.provider.factory import resolve_database

# -- ledger options ------------------------------------------------------------------------


def add_ledger_options(parser: argparse.ArgumentParser) -> None:
    """``--database`` or ``--app`` (never both), plus ``--schema`` for a bare database."""
    where = parser.add_mutually_exclusive_group()
    where.add_argument(
        "--database",
        metavar="DSN",
        help="SQLite path (jobs.db, sqlite:///jobs.db) or postgresql:// URL; "
        "default: $ACTA_DATABASE, else ./acta.sqlite3",
    )
    where.add_argument(
        "--app",
        metavar="MODULE:ATTR",
        help="use the database, schema and namespace of this Acta application",
    )
    parser.add_argument(
        "--schema",
        default=None,
        help="ledger schema name (table prefix on SQLite); default: acta",
    )


@dataclass
class Ledger:
    """Which ledger a command works on, and the application that configures it (if any)."""

    database: str | Path | None
    schema: str
    app: Acta | None
    owned: bool
    """True when the CLI imported ``app`` itself and must close it when done."""


def resolve_ledger(args: argparse.Namespace, host_app: Acta | None) -> Ledger:
    """``--app`` wins, then an explicit ``--database``, then the host's app, then defaults.

    A ``--schema`` that can never name a ledger is bad usage whatever the database holds, so
    it is refused first, before any file or server is looked at (otherwise a missing file's
    hint would suggest a command that refuses the same name).
    """
    if args.schema is not None:
        validate_schema_name(args.schema)  # InvalidNameError: exit 2, names the rule
    if args.app is not None:
        if args.schema is not None:
            raise UsageError("--schema cannot be combined with --app: the app's schema is used")
        app = load_app(args.app)
        return Ledger(app.database, app.schema, app, owned=True)
    if args.database is None and host_app is not None and args.schema is None:
        return Ledger(host_app.database, host_app.schema, host_app, owned=False)
    return Ledger(resolve_database(args.database), args.schema or "acta", None, owned=True)


def require_ledger_file(database: str | Path | None, schema: str = "acta") -> None:
    """Refuse to read a ledger file that does not exist (the provider says: SQLite's).

    Opening it would silently create an empty file next to the user's work; saying that
    nothing is there, and how to create it, is more useful.
    """
    target = resolve_database(database)
    entry = registry.for_target(target)
    path = entry.absent(target)
    if path is not None:
        fix = f"acta schema apply --database {path}"
        if schema != "acta":
            fix += f" --schema {schema}"
        raise SchemaError(
            f"there is no acta ledger at {entry.title} file {path}: the file does not exist. "
            f"Create it with `{fix}`."
        )


@contextlib.contextmanager
def open_reader(ledger: Ledger, namespace: str | None = None) -> Iterator[Acta]:
    """An ``Acta`` for the read surface, schema-checked, closed again afterwards.

    It deliberately declares no jobs: results and inputs then come back as plain data, which
    is what a terminal or ``--json`` wants, whatever types the application decodes them into.
    """
    require_ledger_file(ledger.database, ledger.schema)
    app = ledger.app
    if app is None:
        reader = Acta(ledger.database, namespace=namespace or "default", schema=ledger.schema)
        try:
            reader.provider  # noqa: B018 - opens and checks the schema now, before any output
            yield reader
        finally:
            reader.close()
        return
    reader = Acta(
        app.database, namespace=namespace or app.namespace, schema=app.schema, clock=app.clock
    )
    try:
        # Share the app's provider, so its provider options (durability, timeouts) apply.
        with reader.bound(app.provider, app.clock):
            yield reader
    finally:
        if ledger.owned:
            app.close()


# -- importing the user's application ------------------------------------------------------


def load_app(spec: str) -> Acta:
    """Import ``module:attribute`` (dotted attributes allowed) and check it is an ``Acta``.

    The current directory goes on ``sys.path`` first, as ``python -m`` would do, so
    ``acta worker --app jobs:app`` finds ``./jobs.py`` when run from the project folder.
    """
    module_name, sep, attribute = spec.partition(":")
    if not sep or not module_name or not attribute:
        raise UsageError(
            f"--app {spec!r}: expected MODULE:ATTRIBUTE, e.g. --app myproject.jobs:app"
        )
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name is not None and _is_prefix(exc.name, module_name):
            raise UsageError(
                f"--app {spec}: cannot import module {module_name!r} ({exc}); run acta from "
                "the folder that contains it, or make it importable (pip install -e .)"
            ) from None
        raise _import_failure(spec, exc) from None
    except ActaError:
        raise  # acta's own message (a bad job name, a bad policy) says it best
    except Exception as exc:
        raise _import_failure(spec, exc) from None
    found: object = module
    walked = module_name
    for part in attribute.split("."):
        if not hasattr(found, part):
            raise UsageError(f"--app {spec}: {walked!r} has no attribute {part!r}")
        found = getattr(found, part)
        walked += (":" if walked == module_name else ".") + part
    if not isinstance(found, Acta):
        raise UsageError(
            f"--app {spec}: that is a {type(found).__name__}, not an acta.Acta application"
        )
    return found


def _is_prefix(missing: str, module_name: str) -> bool:
    """Whether the missing module is the one asked for or one of its parent packages."""
    return module_name == missing or module_name.startswith(missing + ".")


def _import_failure(spec: str, exc: BaseException) -> CliError:
    # The user's module raised while importing: that is a bug in their code, and the traceback
    # is the fastest way to it, so show it before the one-line summary.
    traceback.print_exception(exc, file=sys.stderr)
    return CliError(f"--app {spec}: importing the module failed: {type(exc).__name__}: {exc}")
