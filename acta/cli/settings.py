"""``acta settings``: list, read and change durable named settings from a terminal.

Every command goes through the application's operator surface (``Acta.settings``), so the
terminal does what code does. Values are JSON (``--value '{"size": 10}'``, ``--value 42``,
``--value '"text"'``). Arguments are checked before the ledger is opened (exit 2); a stale
``--expect-version`` or an unknown job exits 1 and changes nothing.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from acta.app import Acta
from acta.cli import render
from acta.cli.command import EXIT_OK, HANDLER, CliError, json_argument
from acta.cli.ledger import add_ledger_options, open_reader, resolve_ledger
from acta.errors import ConflictError, UnknownJobError
from acta.ledger.control import check_actor, check_reason
from acta.names import validate_job_name
from acta.settings import Setting, check_name

_SHARED = frozenset({"database", "app", "schema", "namespace", "json"})


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``settings [list]|get|set|delete`` to a subcommand set."""
    top = commands.add_parser(
        "settings",
        help="list, read and change durable named settings",
        description="Durable settings seen from a namespace (`acta settings` lists them).",
    )
    _options(top)
    top.set_defaults(**{HANDLER: list_command})
    sub = top.add_subparsers(title="commands", metavar="COMMAND")

    listing = sub.add_parser("list", help="every setting the namespace sees, with its version")
    listing.add_argument("name", metavar="NAME", nargs="?", help="only this name")
    _options(listing)
    listing.set_defaults(**{HANDLER: list_command})

    get = sub.add_parser("get", help="the value in force (job, then namespace, then global)")
    get.add_argument("name", metavar="NAME")
    get.add_argument("--job", metavar="JOB", help="as seen by this job")
    _options(get)
    get.set_defaults(**{HANDLER: get_command})

    for verb, helptext in (("set", "store a JSON value"), ("delete", "remove a setting")):
        parser = sub.add_parser(verb, help=helptext)
        parser.add_argument("name", metavar="NAME")
        if verb == "set":
            parser.add_argument("value", metavar="JSON", help="the value, as JSON")
        parser.add_argument("--scope", default=None, choices=("global", "namespace", "definition"))
        parser.add_argument("--job", metavar="JOB", help="a job's own value (scope definition)")
        parser.add_argument(
            "--expect-version",
            type=int,
            required=True,
            metavar="V",
            help="the version `acta settings` shows; 0 for a new name",
        )
        parser.add_argument("--reason", default="changed by an operator", metavar="TEXT")
        parser.add_argument("--actor", default="operator", metavar="WHO")
        _options(parser)
        parser.set_defaults(**{HANDLER: change_command, "verb": verb})
    for parser in sub.choices.values():
        for action in parser._actions:
            if action.dest in _SHARED:  # keep what the parent parsed (see acta gates)
                action.default = argparse.SUPPRESS


def _options(parser: argparse.ArgumentParser) -> None:
    add_ledger_options(parser)
    parser.add_argument("--namespace", default=None, metavar="NAME", help="default: the app's")
    parser.add_argument("--json", action="store_true", help="print JSON")


def list_command(args: argparse.Namespace, host_app: Acta | None) -> int:
    name = getattr(args, "name", None)
    name = None if name is None else check_name(name)
    with open_reader(resolve_ledger(args, host_app), getattr(args, "namespace", None)) as reader:
        found = reader.settings.list(name)
        namespace = reader.namespace
    if getattr(args, "json", False):
        print(render.dump([data(s) for s in found]))  # a listing: an array of objects
        return EXIT_OK
    if not found:
        print(f"no settings seen from namespace {namespace!r}")
        return EXIT_OK
    rows = [
        [
            s.name,
            s.scope.label,
            s.job_name or "-",
            json.dumps(s.value),
            str(s.version),
            render.when(s.updated_at),
            s.updated_by,
        ]
        for s in found
    ]
    print(render.table(["name", "scope", "job", "value", "version", "updated", "by"], rows))
    return EXIT_OK


def get_command(args: argparse.Namespace, host_app: Acta | None) -> int:
    name = check_name(args.name)
    job = None if args.job is None else validate_job_name(args.job)
    with open_reader(resolve_ledger(args, host_app), args.namespace) as reader:
        found = reader.settings.list(name)
        value = reader.settings.get(name, None, job=job)
    if not found:
        raise CliError(f"no setting {name!r} is seen from this namespace")
    print(render.dump(value) if args.json else json.dumps(value))
    return EXIT_OK


def change_command(args: argparse.Namespace, host_app: Acta | None) -> int:
    name = check_name(args.name)
    options: dict[str, Any] = {
        "expected_version": args.expect_version,
        "reason": check_reason(args.reason),
        "actor": check_actor(args.actor),
    }
    if args.job is not None:
        options["job"] = validate_job_name(args.job)
    if args.scope is not None:
        options["scope"] = args.scope
    value = _json(args.value) if args.verb == "set" else None
    with open_reader(resolve_ledger(args, host_app), args.namespace) as reader:
        try:
            if args.verb == "set":
                version = reader.settings.set(name, value, **options)
                print(f"{name} set; version {version}")
            else:
                reader.settings.delete(name, **options)
                print(f"{name} deleted")
        except (ConflictError, UnknownJobError) as exc:
            raise CliError(f"{exc} (`acta settings` shows the versions)") from None
    return EXIT_OK


def _json(text: str) -> Any:
    return json_argument(text, "JSON", hint="; a string needs its quotes: '\"text\"'")


def data(setting: Setting) -> dict[str, Any]:
    return {
        "name": setting.name,
        "scope": setting.scope.label,
        "namespace": setting.namespace,
        "job": setting.job_name,
        "value": setting.value,
        "version": setting.version,
        "updated_at": render.iso(setting.updated_at),
        "updated_by": setting.updated_by,
        "reason": setting.reason,
    }
