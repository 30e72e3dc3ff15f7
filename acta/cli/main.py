"""The ``acta`` command line: the parser, dispatch to a command, and exit codes.

Exit codes: 0 success; 1 a runtime failure (database unreachable, schema missing or behind,
no such job, the demo job did not succeed); 2 bad usage or an invalid value (argparse errors,
a malformed job ref, a bad ``--app``); 130 interrupted. Errors acta raises on purpose print
one ``error: <message>`` line on stderr and never a traceback.

Embedding in a host application's own CLI
-----------------------------------------
``build_parser()`` returns the standalone parser. To mount the commands under a host parser,
give ``add_commands`` a subcommand set and hand the parsed arguments to ``run``; passing the
host's ``Acta`` object makes ``--app`` and ``--database`` optional, since commands then use
that application's configuration::

    import argparse, sys
    import acta.cli
    from myproject.jobs import app

    parser = argparse.ArgumentParser(prog="myproject")
    commands = parser.add_subparsers(dest="command", required=True)
    jobs = commands.add_parser("acta", help="background jobs")
    acta.cli.add_commands(jobs.add_subparsers(metavar="COMMAND", required=True))
    ...
    args = parser.parse_args()
    if args.command == "acta":
        sys.exit(acta.cli.run(args, app=app))

Each leaf parser stores its command body under ``args.acta_command``; ``run`` calls it and
turns errors into exit codes, so a host needs nothing else from this package.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from acta import __version__
from acta.app import Acta
from acta.cli import (
    alerts,
    dashboard,
    demo,
    gates,
    jobs,
    outbox,
    repair,
    schedules,
    schema,
    serve,
    settings,
)
from acta.cli import tenants as tenant_cli
from acta.cli.command import (
    EXIT_FAILURE,
    EXIT_INTERRUPTED,
    EXIT_USAGE,
    HANDLER,
    CliError,
    Command,
)
from acta.errors import ActaError, ConfigurationError, ValidationError
from acta.provider import registry

DESCRIPTION = "Durable background jobs whose only durable truth is SQL."
EPILOG = (
    "Start with `acta demo`. Ledger commands read --database (default $ACTA_DATABASE, else "
    "./acta.sqlite3) or --app MODULE:ATTR. Exit codes: 0 ok, 1 runtime failure, 2 bad usage."
)


def add_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``worker``, ``schema``, ``jobs``, ``gates``, ``schedules``, ``settings``, ``alerts``,
    ``demo``, ``outbox``, ``definitions`` and ``namespaces`` to a subcommand set."""
    serve.register(commands)
    schema.register(commands)
    jobs.register(commands)
    gates.register(commands)
    schedules.register(commands)
    settings.register(commands)
    alerts.register(commands)
    demo.register(commands)
    outbox.register(commands)
    repair.register(commands)
    tenant_cli.register(commands)
    dashboard.register(commands)


def build_parser(prog: str = "acta") -> argparse.ArgumentParser:
    """The standalone ``acta`` parser."""
    parser = argparse.ArgumentParser(prog=prog, description=DESCRIPTION, epilog=EPILOG)
    parser.add_argument("--version", action="version", version=f"acta {__version__}")
    commands = parser.add_subparsers(title="commands", metavar="COMMAND", required=True)
    add_commands(commands)
    return parser


def run(args: argparse.Namespace, *, app: Acta | None = None) -> int:
    """Run the command ``args`` selected and return its exit code.

    ``app`` is a host application's ``Acta`` object; commands use it when the command line
    names neither ``--app`` nor ``--database``.
    """
    command: Command | None = getattr(args, HANDLER, None)
    if command is None:
        return _fail("no acta command was selected; see --help", EXIT_USAGE)
    try:
        return command(args, app)
    except CliError as exc:
        return _fail(str(exc), exc.code)
    except (ValidationError, ConfigurationError) as exc:
        return _fail(str(exc), EXIT_USAGE)
    except ActaError as exc:
        return _fail(str(exc), EXIT_FAILURE)
    except KeyboardInterrupt:
        return _fail("interrupted", EXIT_INTERRUPTED)
    except BrokenPipeError:
        _silence_stdout()  # `acta jobs list | head`: the reader left, nothing to report
        return EXIT_FAILURE
    except Exception as exc:
        if registry.for_driver(exc) is None:
            raise
        # Not an acta error, but an expected one from a database driver: a file that is not
        # a database, a disk that is full. The message is what the user can act on.
        return _fail(f"database error: {exc}", EXIT_FAILURE)


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` (default: ``sys.argv[1:]``), run the command, return the exit code."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        # argparse exits for --help, --version (0) and usage errors (2); hand back the code
        # so in-process callers and the console script see the same thing.
        return _exit_code(exc.code)
    return run(args)


def _fail(message: str, code: int) -> int:
    print(f"error: {message}", file=sys.stderr)
    return code


def _exit_code(code: object) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return EXIT_FAILURE


def _silence_stdout() -> None:
    # Point stdout at /dev/null so the interpreter's final flush does not raise again.
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass
