"""``acta jobs debug REF --app module:app``: run one persisted job in this terminal, under pdb.

The job is claimed and settled like any run (see ``acta.runtime.debugging``): its outcome is
written to the ledger as a worker would have written it. ``--no-stop`` runs it without the
breakpoint (to reproduce a failure with its log output, say).
"""

from __future__ import annotations

import argparse
import asyncio

from acta.app import Acta
from acta.cli import render
from acta.cli.command import EXIT_FAILURE, EXIT_OK, HANDLER, CliError, UsageError
from acta.cli.ledger import load_app
from acta.errors import JobNotFoundError
from acta.ids import JobRef
from acta.runtime.debugging import DebugRefusedError, debug_job
from acta.runtime.run import RunEnd

_WORKED = frozenset({RunEnd.COMPLETED})


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``debug`` to the ``acta jobs`` subcommands."""
    debug = sub.add_parser(
        "debug",
        help="run one job here, under the debugger, and settle it",
        description="Claim one persisted job (ready and due, not running elsewhere) and run its "
        "handler in this process, stopping in pdb before it starts; the run settles like any "
        "other. Exit 0 when the handler completed, 1 otherwise.",
    )
    debug.add_argument("ref", metavar="REF", help="the job's ref, e.g. job_06f0...")
    debug.add_argument(
        "--app", required=True, metavar="MODULE:ATTR", help="the Acta application with its handler"
    )
    debug.add_argument("--no-stop", action="store_true", help="run without the breakpoint")
    debug.add_argument("--json", action="store_true", help="print JSON")
    debug.set_defaults(**{HANDLER: debug_command})


def debug_command(args: argparse.Namespace, host_app: Acta | None) -> int:
    ref = str(JobRef.parse(args.ref))
    if not args.app:
        raise UsageError("--app: the application whose handler runs the job")
    app = load_app(args.app)
    try:
        done = asyncio.run(debug_job(app.deployment(), ref, stop=not args.no_stop))
    except (DebugRefusedError, JobNotFoundError) as exc:
        raise CliError(str(exc)) from None
    finally:
        app.close()
    if args.json:
        print(render.dump({"job_ref": ref, "ended": done.ended.value, "status": done.status.label}))
    else:
        print(f"{ref}: the run ended {done.ended.value}; the job is {done.status.label}")
    return EXIT_OK if done.ended in _WORKED else EXIT_FAILURE
