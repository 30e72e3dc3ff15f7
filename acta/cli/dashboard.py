"""``acta dashboard``: serve an application's dashboard alone, with uvicorn, on this machine.

The command serves ``create_dashboard(app)`` bound to 127.0.0.1 by default. It only ever binds
a loopback address: a dashboard reachable from the network needs an authorization callable,
which a command line cannot supply, so a non-loopback ``--host`` is refused before any socket
is bound (mount ``create_dashboard(app, local_only=False, authorize=...)`` in your own ASGI
application instead; docs/guide/dashboard.md). Needs the ``acta-jobs[dashboard]`` extra.
"""

from __future__ import annotations

import argparse
import ipaddress

from acta.about import install_hint
from acta.app import Acta
from acta.cli.command import EXIT_OK, HANDLER, CliError, UsageError
from acta.cli.ledger import load_app

LOOPBACK_NAMES = ("localhost",)


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``dashboard`` to a subcommand set."""
    parser = commands.add_parser(
        "dashboard",
        help="serve the operator dashboard on this machine (needs acta-jobs[dashboard])",
        description=(
            "Serve the dashboard and its JSON API for an application, local-only: browse to "
            "http://127.0.0.1:PORT/ or http://localhost:PORT/. Verbs stay off unless --verbs "
            "names their families."
        ),
    )
    parser.add_argument("--app", metavar="MODULE:ATTR", help="the Acta application to show")
    parser.add_argument(
        "--host",
        default="127.0.0.1",
        help="a loopback address to bind: 127.0.0.1 (default), ::1 or localhost",
    )
    parser.add_argument("--port", type=int, default=8765, help="port, 1-65535 (default 8765)")
    parser.add_argument(
        "--verbs",
        default="",
        metavar="FAMILIES",
        help="comma-separated verb families to enable: jobs, definitions, alerts, schedules "
        "(default: none, read-only)",
    )
    parser.set_defaults(**{HANDLER: command})


def check_host(host: str) -> str:
    """The host if it is a loopback address; a UsageError otherwise."""
    if host in LOOPBACK_NAMES:
        return host
    try:
        loopback = ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        loopback = False
    if not loopback:
        raise UsageError(
            f"--host {host!r}: acta dashboard binds loopback addresses only (127.0.0.1, ::1, "
            "localhost); to serve it to other machines, mount create_dashboard(app, "
            "local_only=False, authorize=...) in your own ASGI app"
        )
    return host.strip("[]")


def command(args: argparse.Namespace, host_app: Acta | None) -> int:
    host = check_host(args.host)
    if not 1 <= args.port <= 65535:
        raise UsageError(f"--port {args.port}: expected 1-65535")
    app = load_app(args.app) if args.app is not None else host_app
    if app is None:
        raise UsageError("acta dashboard needs --app MODULE:ATTR, e.g. --app myproject.jobs:app")
    families = [f.strip() for f in args.verbs.split(",") if f.strip()]
    try:
        import uvicorn

        from acta.dashboard import create_dashboard
    except ImportError as exc:
        raise CliError(
            f"the dashboard needs its extra: {install_hint('dashboard')} ({exc})"
        ) from None
    asgi = create_dashboard(app, verbs=families)
    print(f"acta dashboard on http://{'[::1]' if ':' in host else host}:{args.port}/")
    uvicorn.run(asgi, host=host, port=args.port, log_level="warning", proxy_headers=False)
    return EXIT_OK
