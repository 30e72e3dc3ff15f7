"""``acta worker``: run a worker for an application in the foreground.

The command imports the user's ``Acta`` object (``--app module:attribute``), checks the
ledger schema before starting (or applies it with ``--apply-migrations``), builds
``app.worker(...)`` and serves until SIGINT or SIGTERM, then shuts down gracefully: it stops
claiming, lets runs finish within the grace period, hands the rest back and marks its
``workers`` row stopped. It exits 0 after a clean shutdown.
"""

from __future__ import annotations

import argparse
import logging
import sys

from acta.app import Acta
from acta.cli.command import EXIT_OK, HANDLER, UsageError, duration, grace
from acta.cli.ledger import load_app, require_ledger_file
from acta.errors import DatabaseUnavailableError

LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
log = logging.getLogger("acta.cli")


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``worker`` to a subcommand set."""
    worker = commands.add_parser(
        "worker",
        help="run a worker for an application until SIGINT/SIGTERM",
        description=(
            "Claim and run the jobs of an application's namespace. SIGINT or SIGTERM starts a "
            "graceful shutdown: no new claims, running jobs get the grace period to finish, "
            "the rest are handed back without spending an attempt."
        ),
    )
    worker.add_argument(
        "--app",
        metavar="MODULE:ATTR",
        help="the Acta application whose handlers to run, e.g. myproject.jobs:app "
        "(the current directory is importable)",
    )
    worker.add_argument(
        "--executors",
        type=int,
        default=10,
        metavar="N",
        help="concurrent job runs, 1-1000 (default 10)",
    )
    worker.add_argument(
        "--heartbeat",
        type=duration,
        metavar="DURATION",
        default="45s",
        help="liveness interval; the lease is 4 heartbeats, death 7 (default 45s)",
    )
    worker.add_argument(
        "--poll",
        type=duration,
        default="1s",
        metavar="DURATION",
        help="how often to look for due jobs (default 1s)",
    )
    worker.add_argument(
        "--shutdown-grace",
        type=grace,
        metavar="DURATION",
        default="30s",
        help="how long running jobs may finish after a stop signal (default 30s)",
    )
    worker.add_argument(
        "--profile",
        choices=("buffered", "direct", "bulk"),
        default="buffered",
        help="buffered: also claim one batch ahead of the free executors; direct: claim only "
        "for free executors; both start a job for a free executor in the claim's own commit. "
        "bulk: claim three batches ahead, start them all in the claim, and commit finished "
        "jobs together every --flush (a crash can run the jobs of one unflushed window again "
        "and charges an attempt to the jobs claimed ahead: for safely re-runnable work only) "
        "(default buffered)",
    )
    worker.add_argument(
        "--flush",
        type=duration,
        default="50ms",
        metavar="DURATION",
        help="bulk only: how long finished jobs wait to be committed together (default 50ms)",
    )
    worker.add_argument(
        "--flush-max",
        type=int,
        default=1000,
        metavar="N",
        help="bulk only: the most finished jobs one flush commits (default 1000)",
    )
    worker.add_argument(
        "--retention-every",
        type=duration,
        default="1h",
        metavar="DURATION",
        help="how often sys.retention purges finished jobs past their retention (default 1h)",
    )
    worker.add_argument(
        "--event-retention",
        type=duration,
        default="365d",
        metavar="DURATION",
        help="how long events are kept, after their job's row is gone too (default 365d)",
    )
    worker.add_argument(
        "--no-listen",
        dest="listen",
        action="store_false",
        help="do not LISTEN for new-job notifications (PostgreSQL); rely on polling alone",
    )
    worker.add_argument(
        "--apply-migrations",
        action="store_true",
        help="apply pending schema migrations before starting (handy for local work)",
    )
    worker.add_argument(
        "--log-level",
        choices=LOG_LEVELS,
        default="INFO",
        type=str.upper,
        metavar="LEVEL",
        help="DEBUG, INFO, WARNING or ERROR, logged to stderr (default INFO)",
    )
    worker.set_defaults(**{HANDLER: command})


def configure_logging(level: str) -> None:
    """Log to stderr at ``level``, unless the process already set logging up.

    A host application that mounted these commands keeps its own handlers; only the level
    of acta's loggers follows ``--log-level`` then.
    """
    root = logging.getLogger()
    if not root.handlers:
        logging.basicConfig(stream=sys.stderr, level=level, format=LOG_FORMAT)
    logging.getLogger("acta").setLevel(level)


def command(args: argparse.Namespace, host_app: Acta | None) -> int:
    configure_logging(args.log_level)
    app = load_app(args.app) if args.app is not None else host_app
    if app is None:
        raise UsageError(
            "acta worker needs --app MODULE:ATTR naming your Acta application, "
            "e.g. --app myproject.jobs:app"
        )
    if args.apply_migrations:
        applied = app.migrate()
        if applied:
            log.info("applied migrations: %s", ", ".join(applied))
    else:
        require_ledger_file(app.database, app.schema)
        # Open the ledger and check its schema now: a missing migration is one clear error
        # here rather than a loop of failing claims later. A database that cannot be reached
        # yet is not an error: the worker keeps trying to register until it can.
        try:
            app.provider  # noqa: B018
        except DatabaseUnavailableError as exc:
            log.warning("%s; the worker keeps trying to reach it", exc)
    worker = app.worker(
        executors=args.executors,
        heartbeat=args.heartbeat,
        poll=args.poll,
        shutdown_grace=args.shutdown_grace,
        listen=args.listen,
        profile=args.profile,
        flush=args.flush,
        flush_max=args.flush_max,
        retention_every=args.retention_every,
        event_retention=args.event_retention,
    )
    handled = sorted(
        name
        for name, definition in app.definitions.items()
        if definition.handler is not None and not definition.system
    )
    if not handled:
        log.warning("the application declares no job handlers; this worker will only run upkeep")
    log.info(
        "starting a worker for %s in namespace %r on %s (jobs: %s)",
        args.app or "the application",
        app.namespace,
        app.where,
        ", ".join(handled) or "none",
    )
    try:
        worker.run_forever()
    finally:
        if args.app is not None:
            app.close()  # we imported it; a host's own app stays the host's to close
    return EXIT_OK
