"""``acta alerts``: list a namespace's alerts, acknowledge or resolve one.

Every command goes through the application's operator surface (``Acta.alerts``), so the
terminal does exactly what code does. Arguments are checked before the ledger is opened (a bad
id, actor or reason is bad usage, exit 2); an unknown alert, or one already acknowledged or
resolved, exits 1 and changes nothing.
"""

from __future__ import annotations

import argparse
import getpass
from collections.abc import Callable
from typing import Any

from acta.alerts import TEXT_MAX, AlertInfo, AlertNotFoundError
from acta.app import Acta
from acta.cli import render
from acta.cli.command import EXIT_OK, HANDLER, CliError, UsageError
from acta.cli.ledger import add_ledger_options, open_reader, resolve_ledger
from acta.errors import ConflictError, ValidationError
from acta.names import validate_text

_SHARED = frozenset({"database", "app", "schema", "namespace", "json"})


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``alerts [list]|ack|resolve`` to a subcommand set."""
    top = commands.add_parser(
        "alerts",
        help="list alerts and failure incidents; acknowledge or resolve one",
        description="Alerts of a namespace (`acta alerts` lists the open ones).",
    )
    _list_options(top)
    top.set_defaults(**{HANDLER: list_command})
    sub = top.add_subparsers(title="commands", metavar="COMMAND")

    listing = sub.add_parser("list", help="open alerts, newest first (--all: resolved too)")
    _list_options(listing)
    listing.set_defaults(**{HANDLER: list_command})

    ack = sub.add_parser("ack", help="acknowledge an alert: no more reminders")
    _change_options(ack)
    ack.set_defaults(**{HANDLER: ack_command})

    resolve = sub.add_parser("resolve", help="resolve an alert")
    _change_options(resolve)
    resolve.set_defaults(**{HANDLER: resolve_command})
    for parser in (listing, ack, resolve):
        _keep_parent_values(parser)


def _options(parser: argparse.ArgumentParser) -> None:
    add_ledger_options(parser)
    parser.add_argument("--namespace", default=None, metavar="NAME", help="default: the app's")
    parser.add_argument("--json", action="store_true", help="print JSON")


def _list_options(parser: argparse.ArgumentParser) -> None:
    _options(parser)
    parser.add_argument("--all", action="store_true", help="resolved alerts too")
    parser.add_argument("--limit", type=int, default=100, help="at most this many (default 100)")


def _change_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("alert_id", metavar="ID", type=int, help="the alert's id (`acta alerts`)")
    parser.add_argument("--by", default=None, metavar="NAME", help="who (default: your login)")
    parser.add_argument("--reason", default=None, metavar="TEXT", help="recorded on the event")
    _options(parser)


def _keep_parent_values(parser: argparse.ArgumentParser) -> None:
    """Unset options of a subcommand do not overwrite what its parent parsed (``acta alerts
    --database x ack 3`` keeps ``--database``)."""
    for action in parser._actions:
        if action.dest in _SHARED:
            action.default = argparse.SUPPRESS


def data(info: AlertInfo) -> dict[str, Any]:
    """An alert as JSON."""
    return {
        "alert_id": info.alert_id,
        "kind": info.kind,
        "severity": info.severity,
        "title": info.title,
        "detail": info.detail,
        "job_name": info.job_name,
        "job_ref": info.job_ref,
        "reason_class": info.reason_class,
        "occurrences": info.occurrences,
        "opened_at": render.iso(info.opened_at),
        "first_seen_at": render.iso(info.first_seen_at),
        "last_seen_at": render.iso(info.last_seen_at),
        "acknowledged_at": render.iso(info.acknowledged_at),
        "acknowledged_by": info.acknowledged_by,
        "resolved_at": render.iso(info.resolved_at),
        "resolved_by": info.resolved_by,
        "next_reminder_at": render.iso(info.next_reminder_at),
        "last_notified_at": render.iso(info.last_notified_at),
    }


def state(info: AlertInfo) -> str:
    if info.resolved_at is not None:
        return f"resolved by {info.resolved_by}"
    if info.acknowledged_at is not None:
        return f"acknowledged by {info.acknowledged_by}"
    return "open"


def list_command(args: argparse.Namespace, host_app: Acta | None) -> int:
    limit = getattr(args, "limit", 100)
    if not 1 <= limit <= 10_000:
        raise UsageError(f"--limit: got {limit}; a whole number from 1 to 10000")
    ledger = resolve_ledger(args, host_app)
    with open_reader(ledger, getattr(args, "namespace", None)) as reader:
        infos = reader.alerts.list(include_resolved=getattr(args, "all", False), limit=limit)
        namespace = reader.namespace
    if getattr(args, "json", False):
        print(render.dump([data(i) for i in infos]))  # a listing: an array of objects
        return EXIT_OK
    if not infos:
        print(f"no open alerts in namespace {namespace!r}")
        return EXIT_OK
    rows = [
        [
            str(i.alert_id),
            i.severity,
            i.kind,
            render.first_line(i.title),
            str(i.occurrences),
            render.when(i.last_seen_at),
            state(i),
        ]
        for i in infos
    ]
    headers = ["id", "severity", "kind", "title", "count", "last seen", "state"]
    print(render.table(headers, rows))
    return EXIT_OK


def ack_command(args: argparse.Namespace, host_app: Acta | None) -> int:
    by, reason = _who(args, "acknowledged")
    return _apply(args, host_app, lambda a: a.acknowledge(args.alert_id, by=by, reason=reason))


def resolve_command(args: argparse.Namespace, host_app: Acta | None) -> int:
    by, reason = _who(args, "resolved")
    return _apply(args, host_app, lambda a: a.resolve(args.alert_id, by=by, reason=reason))


def _who(args: argparse.Namespace, default_reason: str) -> tuple[str, str]:
    if args.alert_id < 1:
        raise UsageError(f"ID: got {args.alert_id}; the alert id `acta alerts` shows")
    by = args.by if args.by is not None else _login()
    reason = args.reason if args.reason is not None else f"{default_reason} from the CLI"
    try:
        return (
            validate_text(by, field="--by", max_length=TEXT_MAX),
            validate_text(reason, field="--reason", max_length=TEXT_MAX),
        )
    except ValidationError as exc:
        raise UsageError(str(exc)) from None


def _login() -> str:
    try:
        return getpass.getuser()
    except (OSError, KeyError):  # no login name in this environment
        return "cli"


def _apply(
    args: argparse.Namespace, host_app: Acta | None, change: Callable[[Any], AlertInfo]
) -> int:
    ledger = resolve_ledger(args, host_app)
    with open_reader(ledger, args.namespace) as reader:
        try:
            info = change(reader.alerts)
        except (AlertNotFoundError, ConflictError) as exc:
            raise CliError(str(exc)) from None
    if args.json:
        print(render.dump({"alert": data(info)}))
    else:
        print(f"alert {info.alert_id} ({info.title}): {state(info)}")
    return EXIT_OK
