"""``acta tenants register|list|suspend|resume|update`` and ``acta namespaces list|suspend|
update`` (``namespaces pause|resume`` live with the repair verbs; ``suspend`` is ``pause``).

Every command goes through the application's operator surface (``app.tenants``,
``app.namespaces``), so the terminal does what code does. Metadata is a JSON object
(``--metadata '{"team": "payments"}'``); tags repeat (``--tag gold --tag eu``). Arguments are
checked before the ledger is opened (exit 2); a stale ``--expect-version``, an unknown tenant
or namespace exits 1 and changes nothing.
"""

from __future__ import annotations

import argparse
import getpass
import json
from typing import Any

from acta.app import Acta
from acta.cli import render
from acta.cli.command import EXIT_OK, HANDLER, UsageError, json_argument
from acta.cli.ledger import add_ledger_options, open_reader, resolve_ledger
from acta.labels import check_version, metadata_json, tags_json
from acta.ledger.control import check_reason
from acta.names import validate_namespace
from acta.namespaces import Namespace
from acta.tenants import Tenant, check_tenant_key

_SHARED = frozenset({"database", "app", "schema", "json"})


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``tenants [list]|register|suspend|resume|update``."""
    top = commands.add_parser(
        "tenants",
        help="register, list, suspend and resume tenants",
        description="Tenants: who the work is about (`acta tenants` lists them).",
    )
    _options(top)
    top.add_argument("--suspended", action="store_true", help="only suspended tenants")
    top.set_defaults(**{HANDLER: list_command})
    sub = top.add_subparsers(title="commands", metavar="COMMAND")

    listing = sub.add_parser("list", help="every tenant, with its version and open jobs")
    listing.add_argument("--suspended", action="store_true", help="only suspended tenants")
    _options(listing)
    listing.set_defaults(**{HANDLER: list_command})

    add = _changer(sub, "register", "register a tenant key once")
    _labels(add)
    add.set_defaults(**{HANDLER: register_command})
    for verb, text in (
        ("suspend", "refuse the tenant's new enqueues (admitted jobs keep running)"),
        ("resume", "admit the tenant's enqueues again"),
    ):
        parser = _changer(sub, verb, text)
        parser.add_argument("--expect-version", type=int, metavar="V", help="fail if moved on")
        parser.set_defaults(**{HANDLER: suspend_command, "verb": verb})
    update = _changer(sub, "update", "replace the tenant's tags and/or metadata")
    _labels(update)
    update.add_argument("--expect-version", type=int, required=True, metavar="V")
    update.set_defaults(**{HANDLER: update_command})
    _keep_parent(sub)


def register_namespaces(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``list``, ``suspend`` (the same as ``pause``) and ``update`` under ``namespaces``."""
    listing = sub.add_parser("list", help="every namespace, with its version and workers")
    _options(listing)
    listing.set_defaults(**{HANDLER: namespaces_command})
    suspend = sub.add_parser(
        "suspend",
        help="the same as pause: stop every claim in a namespace",
        description="Suspend namespace NAME: the same operation as `acta namespaces pause`.",
    )
    _options(suspend)
    suspend.add_argument("target", metavar="NAME", help="the namespace")
    suspend.add_argument("--reason", metavar="TEXT", help="why; recorded on the event")
    suspend.add_argument("--actor", metavar="WHO", help="who; default cli:<login name>")
    suspend.set_defaults(**{HANDLER: namespace_suspend_command, "verb": "suspend"})
    update = sub.add_parser("update", help="replace a namespace's tags and/or metadata")
    _options(update)
    update.add_argument("target", metavar="NAME", help="the namespace")
    _labels(update)
    update.add_argument("--expect-version", type=int, required=True, metavar="V")
    update.add_argument("--reason", metavar="TEXT", help="why; recorded on the event")
    update.add_argument("--actor", metavar="WHO", help="who; default cli:<login name>")
    update.set_defaults(**{HANDLER: namespace_update_command})


def _options(parser: argparse.ArgumentParser) -> None:
    add_ledger_options(parser)
    parser.add_argument("--json", action="store_true", help="print JSON")


def _changer(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], verb: str, text: str
) -> argparse.ArgumentParser:
    parser = sub.add_parser(verb, help=text, description=f"{text.capitalize()}.")
    parser.add_argument("key", metavar="TENANT", help="the tenant's business key")
    parser.add_argument("--reason", metavar="TEXT", help="why; recorded on the event")
    parser.add_argument("--actor", metavar="WHO", help="who; default cli:<login name>")
    _options(parser)
    return parser


def _labels(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--tag", action="append", metavar="TAG", help="a tag (repeatable)")
    parser.add_argument("--metadata", metavar="JSON", help="a JSON object")


def _keep_parent(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    for parser in sub.choices.values():
        for action in parser._actions:
            if action.dest in _SHARED:  # keep what the parent parsed (see acta gates)
                action.default = argparse.SUPPRESS


def _metadata(text: str | None) -> dict[str, Any] | None:
    if text is None:
        return None
    value = json_argument(text, "--metadata")
    if not isinstance(value, dict):
        raise UsageError('--metadata: a JSON object is needed, such as \'{"team": "payments"}\'')
    metadata_json(value)  # the size and shape rule, before the ledger is opened
    return value


def _who(args: argparse.Namespace, default_reason: str) -> dict[str, str]:
    """Who and why, as the repair verbs of the CLI record them (default actor cli:<login>)."""
    try:
        login = getpass.getuser()
    except (OSError, KeyError):  # no login name in this environment (a container)
        login = "unknown"
    return {
        "actor": args.actor or f"cli:{login}",
        "reason": check_reason(args.reason or default_reason),
    }


def _print_change(args: argparse.Namespace, what: str, changed: bool) -> None:
    verb = args.verb
    if args.json:
        print(render.dump({"verb": verb, "target": what, "changed": changed}))
    else:
        done = {"suspend": "suspended", "resume": "resumed"}[verb]
        print(f"{what}: {done}" if changed else f"{what}: already {done}, nothing changed")


def _tags(args: argparse.Namespace) -> list[str] | None:
    tags = getattr(args, "tag", None)
    if tags is not None:
        tags_json(tags)
    return tags


# -- tenants ---------------------------------------------------------------------------------


def list_command(args: argparse.Namespace, host_app: Acta | None) -> int:
    only = True if getattr(args, "suspended", False) else None
    with open_reader(resolve_ledger(args, host_app)) as app:
        found = app.tenants.list(suspended=only)
    if getattr(args, "json", False):
        print(render.dump([tenant_data(t) for t in found]))  # a listing: an array
        return EXIT_OK
    if not found:
        print("no tenants registered" if only is None else "no tenant is suspended")
        return EXIT_OK
    rows = [
        [
            t.key,
            "suspended" if t.suspended else "active",
            ",".join(t.tags) or "-",
            str(t.open_jobs),
            str(t.version),
            t.suspend_reason or "-",
        ]
        for t in found
    ]
    print(render.table(["tenant", "state", "tags", "open jobs", "version", "why"], rows))
    return EXIT_OK


def register_command(args: argparse.Namespace, host_app: Acta | None) -> int:
    key, tags, metadata = check_tenant_key(args.key), _tags(args) or [], _metadata(args.metadata)
    who = _who(args, "registered from the command line")
    with open_reader(resolve_ledger(args, host_app)) as app:
        tenant = app.tenants.register(key, tags=tags, metadata=metadata or {}, **who)
    if args.json:
        print(render.dump(tenant_data(tenant)))
    else:
        print(f"tenant {tenant.key}: registered, version {tenant.version}")
    return EXIT_OK


def suspend_command(args: argparse.Namespace, host_app: Acta | None) -> int:
    key = check_tenant_key(args.key)
    expected = None if args.expect_version is None else check_version(args.expect_version)
    who = _who(args, f"{args.verb}d from the command line")
    with open_reader(resolve_ledger(args, host_app)) as app:
        change = app.tenants.suspend if args.verb == "suspend" else app.tenants.resume
        changed = change(key, expected_version=expected, **who)
    _print_change(args, f"tenant {key}", changed)
    return EXIT_OK


def update_command(args: argparse.Namespace, host_app: Acta | None) -> int:
    key, expected = check_tenant_key(args.key), check_version(args.expect_version)
    tags, metadata = _tags(args), _metadata(args.metadata)
    if tags is None and metadata is None:
        raise UsageError("update needs --tag or --metadata (or both)")
    who = _who(args, "updated from the command line")
    with open_reader(resolve_ledger(args, host_app)) as app:
        version = app.tenants.update(
            key, expected_version=expected, tags=tags, metadata=metadata, **who
        )
    print(
        render.dump({"tenant": key, "version": version})
        if args.json
        else f"tenant {key}: updated, version {version}"
    )
    return EXIT_OK


def tenant_data(tenant: Tenant) -> dict[str, Any]:
    return {
        "tenant": tenant.key,
        "suspended": tenant.suspended,
        "suspended_at": render.iso(tenant.suspended_at),
        "suspended_by": tenant.suspended_by,
        "suspend_reason": tenant.suspend_reason,
        "tags": list(tenant.tags),
        "metadata": tenant.metadata,
        "version": tenant.version,
        "open_jobs": tenant.open_jobs,
        "created_at": render.iso(tenant.created_at),
    }


# -- namespaces ------------------------------------------------------------------------------


def namespaces_command(args: argparse.Namespace, host_app: Acta | None) -> int:
    with open_reader(resolve_ledger(args, host_app)) as app:
        found = app.namespaces.list()
    if args.json:
        print(render.dump([namespace_data(n) for n in found]))
        return EXIT_OK
    rows = [
        [
            n.name,
            "suspended" if n.suspended else "running",
            ",".join(n.tags) or "-",
            json.dumps(n.metadata) if n.metadata else "-",
            str(n.workers_running),
            str(n.open_jobs),
            str(n.version),
        ]
        for n in found
    ]
    headers = ["namespace", "state", "tags", "metadata", "workers", "open jobs", "version"]
    print(render.table(headers, rows))
    return EXIT_OK


def namespace_suspend_command(args: argparse.Namespace, host_app: Acta | None) -> int:
    target, who = validate_namespace(args.target), _who(args, "suspended from the command line")
    with open_reader(resolve_ledger(args, host_app)) as app:
        changed = app.namespaces.suspend(target, **who)
    _print_change(args, f"namespace {target}", changed)
    return EXIT_OK


def namespace_update_command(args: argparse.Namespace, host_app: Acta | None) -> int:
    target, expected = validate_namespace(args.target), check_version(args.expect_version)
    tags, metadata = _tags(args), _metadata(args.metadata)
    if tags is None and metadata is None:
        raise UsageError("update needs --tag or --metadata (or both)")
    who = _who(args, "updated from the command line")
    with open_reader(resolve_ledger(args, host_app)) as app:
        version = app.namespaces.update(
            target, expected_version=expected, tags=tags, metadata=metadata, **who
        )
    if args.json:
        print(render.dump({"namespace": target, "version": version}))
    else:
        print(f"namespace {target}: updated, version {version}")
    return EXIT_OK


def namespace_data(namespace: Namespace) -> dict[str, Any]:
    return {
        "namespace": namespace.name,
        "suspended": namespace.suspended,
        "tags": list(namespace.tags),
        "metadata": namespace.metadata,
        "version": namespace.version,
        "definitions": namespace.definitions,
        "workers_running": namespace.workers_running,
        "open_jobs": namespace.open_jobs,
        "created_at": render.iso(namespace.created_at),
    }
