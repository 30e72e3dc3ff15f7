"""``acta outbox quarantine``: read and decide the rows the outbox relay could not admit.

The quarantine lives in the source database (the application's), so every command takes the
source: ``--source`` (a SQLite path or a postgresql:// DSN, with ``--source-schema`` on
PostgreSQL), or the outbox source of the ``--app`` application. ``list`` and ``show`` read the
source only. ``requeue`` and ``discard`` also record the decision in the ledger (the ledger
options say which, as for every ledger command), through the same ``Quarantine`` code uses.
"""

from __future__ import annotations

import argparse
import json
import os
from typing import Any

from acta.app import Acta
from acta.cli import render
from acta.cli.command import EXIT_OK, HANDLER, UsageError
from acta.cli.ledger import add_ledger_options, load_app, open_reader, resolve_ledger
from acta.outbox import OutboxSource, Quarantine, QuarantinedRow


def register(outbox: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``quarantine list|show|requeue|discard`` under ``acta outbox``."""
    quarantine = outbox.add_parser(
        "quarantine",
        help="rows the relay could not admit: list, show, requeue, discard",
        description="The outbox quarantine, in your application's database.",
    )
    sub = quarantine.add_subparsers(title="commands", metavar="COMMAND", required=True)
    listing = sub.add_parser("list", help="undecided entries, oldest first")
    listing.add_argument("--all", action="store_true", help="decided entries too")
    _options(listing)
    listing.set_defaults(**{HANDLER: list_command})

    show = sub.add_parser("show", help="one entry, by the outbox row id")
    show.add_argument("row", type=int, metavar="ROW")
    _options(show)
    show.set_defaults(**{HANDLER: show_command})

    for verb, text in (
        ("requeue", "put the row back in the outbox, under its id, for the relay"),
        ("discard", "give up on the row: its input is dropped, the decision kept"),
    ):
        decide = sub.add_parser(verb, help=text, description=text[0].upper() + text[1:] + ".")
        decide.add_argument("row", type=int, metavar="ROW")
        decide.add_argument(
            "--actor", default=None, help="who decides (default: $USER, else 'cli')"
        )
        decide.add_argument("--reason", default=None, help="why, kept with the decision")
        add_ledger_options(decide)
        _options(decide)
        decide.add_argument("--namespace", default=None, metavar="NAME")
        decide.set_defaults(**{HANDLER: decide_command, "decision": verb})


def _options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--source",
        metavar="URL",
        default=None,
        help="the source database: a SQLite path or a postgresql:// DSN "
        "(default: the outbox source of --app)",
    )
    parser.add_argument("--source-schema", default=None, help="its PostgreSQL schema")
    parser.add_argument(
        "--source-name", default="default", help="the source's name (default: default)"
    )
    parser.add_argument("--json", action="store_true", help="print JSON")
    if not any(a.dest == "app" for a in parser._actions):
        parser.add_argument("--app", metavar="MODULE:ATTR", default=None, help=argparse.SUPPRESS)


def _source(args: argparse.Namespace, host_app: Acta | None) -> OutboxSource:
    if args.source is not None:
        return OutboxSource(url=args.source, schema=args.source_schema, name=args.source_name)
    app = load_app(args.app) if args.app else host_app
    if app is not None and app.outbox is not None:
        return app.outbox
    raise UsageError("give the source database with --source (or an --app with an outbox)")


def list_command(args: argparse.Namespace, host_app: Acta | None) -> int:
    desk = Quarantine(_source(args, host_app), _no_ledger, "default")
    entries = desk.entries(everything=args.all)
    if args.json:
        print(json.dumps([_data(e) for e in entries], indent=2))
        return EXIT_OK
    if not entries:
        print("the quarantine is empty" if args.all else "no undecided rows in quarantine")
        return EXIT_OK
    rows = [
        [
            str(e.row),
            e.job_name,
            e.reason,
            e.lane or "",
            render.when(e.quarantined_at),
            e.decision or "",
            render.first_line(e.message, 60),
        ]
        for e in entries
    ]
    print(render.table(["ROW", "JOB", "REASON", "LANE", "QUARANTINED", "DECIDED", "WHY"], rows))
    return EXIT_OK


def show_command(args: argparse.Namespace, host_app: Acta | None) -> int:
    entry = Quarantine(_source(args, host_app), _no_ledger, "default").show(args.row)
    data = _data(entry)
    if args.json:
        print(json.dumps(data, indent=2))
        return EXIT_OK
    pairs = [(key.replace("_", " "), "" if v is None else str(v)) for key, v in data.items()]
    print(render.labelled(f"outbox row {entry.row}", pairs))
    return EXIT_OK


def decide_command(args: argparse.Namespace, host_app: Acta | None) -> int:
    source = _source(args, host_app)
    actor = args.actor or os.environ.get("USER") or "cli"
    ledger = resolve_ledger(args, host_app)
    with open_reader(ledger, args.namespace) as reader:
        desk = reader.outbox_quarantine(source)
        decide = desk.requeue if args.decision == "requeue" else desk.discard
        entry = decide(args.row, actor=actor, reason=args.reason)
    if args.json:
        print(json.dumps(_data(entry), indent=2))
    else:
        done = "back in the outbox" if entry.decision == "requeue" else "discarded"
        print(f"outbox row {entry.row} {done} (decided by {entry.actor})")
    return EXIT_OK


def _no_ledger() -> Any:
    raise AssertionError("reading the quarantine never touches the ledger")


def _input(entry: QuarantinedRow) -> Any:
    if entry.input is None:
        return None
    try:
        return render.payload(entry.input_codec, entry.input)
    except Exception:  # undecodable is often why it is here: show what is stored instead
        return repr(entry.input)


def _data(entry: QuarantinedRow) -> dict[str, Any]:
    return {
        "row": entry.row,
        "namespace": entry.namespace,
        "job": entry.job_name,
        "reason": entry.reason,
        "message": entry.message,
        "lane": entry.lane,
        "dedup_key": entry.dedup_key,
        "attempts": entry.attempts,
        "staged_at": render.iso(entry.staged_at),
        "quarantined_at": render.iso(entry.quarantined_at),
        "quarantined_by": entry.quarantined_by,
        "input": _input(entry),
        "decided_at": render.iso(entry.decided_at),
        "decision": entry.decision,
        "actor": entry.actor,
        "decision_reason": entry.decision_reason,
    }
