"""Repair verbs from the terminal: ``acta jobs restart|reschedule|amend|cancel|purge``,
``acta definitions pause|resume|retire`` and ``acta namespaces pause|resume``.

Every command goes through the application's repair surface (``Acta.repairs``), so the
terminal does exactly what code does, and every value is checked before the ledger is opened
(bad usage, exit 2, whatever the database holds). ``restart``, ``reschedule`` and ``cancel``
take one REF, or filters for the bulk form (``--status``, ``--name``, ``--tag``,
``--correlation-key``, ``--created-after``, ``--created-before``); ``purge`` is always bulk. A
bulk command counts first, then asks for confirmation on stdin unless ``--yes``
(``--dry-run`` only counts). A verb the job's state forbids, or that lost a race with a worker,
exits 1 with nothing changed.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from acta.app import Acta
from acta.cli import policy, render
from acta.cli import tenants as tenant_cli
from acta.cli.command import EXIT_FAILURE, EXIT_OK, HANDLER, UsageError, cli_actor
from acta.cli.ledger import add_ledger_options, open_reader, resolve_ledger
from acta.duration import parse_duration
from acta.errors import ValidationError
from acta.ids import JobRef
from acta.ledger.control import check_reason
from acta.model.rows import JobInfo
from acta.names import validate_namespace
from acta.repair import BulkReport

_DONE = {"restart": "restarted", "reschedule": "rescheduled", "cancel": "cancelled"}
_FILTERS = (
    "status",
    "name",
    "tag",
    "correlation_key",
    "created_after",
    "created_before",
    "tenant",
)


def register_jobs(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``restart``, ``reschedule``, ``amend``, ``cancel`` and ``purge`` to ``acta jobs``."""
    restart = _verb(
        sub,
        "restart",
        "run finished jobs again with their stored input",
        "Restart one finished job (REF), or every finished job matching filters.",
    )
    _bulk_options(restart, optional_ref=True)
    restart.set_defaults(**{HANDLER: restart_command})

    reschedule = _verb(
        sub,
        "reschedule",
        "move ready jobs' next run to an instant or now",
        "Move one ready job (REF), or every ready job matching filters, to --at (default: now).",
    )
    _bulk_options(reschedule, optional_ref=True)
    reschedule.add_argument(
        "--at",
        type=_instant,
        metavar="INSTANT",
        help="ISO 8601 instant, e.g. 2026-05-01T09:00:00Z (naive: UTC)",
    )
    reschedule.set_defaults(**{HANDLER: reschedule_command})

    cancel = _verb(
        sub,
        "cancel",
        "cancel unfinished jobs",
        "Cancel one job (REF), or every unfinished job matching filters; running "
        "ones are asked to stop.",
    )
    _bulk_options(cancel, optional_ref=True)
    cancel.set_defaults(**{HANDLER: cancel_command})

    amend = _verb(
        sub,
        "amend",
        "change priority, max attempts or tags of an unfinished job",
        "Change one unfinished job's priority, its own attempt limit, or its tags.",
    )
    amend.add_argument("ref", metavar="REF", help="the job's ref, e.g. job_06f0...")
    amend.add_argument("--priority", type=int, help="-100 to 100, higher first")
    amend.add_argument("--max-attempts", type=int, metavar="N", help="1 to 1000")
    amend.add_argument("--tags", metavar="A,B", help="the new tags, comma separated ('' clears)")
    amend.set_defaults(**{HANDLER: amend_command})

    purge = _verb(
        sub,
        "purge",
        "delete finished jobs finished before an instant",
        "Delete finished jobs that finished before --before (events are kept).",
    )
    _bulk_options(purge, optional_ref=False)
    purge.add_argument(
        "--before",
        required=True,
        metavar="WHEN",
        help="ISO 8601 instant, or a duration ago such as 30d",
    )
    purge.set_defaults(**{HANDLER: purge_command})


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``definitions pause|resume|retire`` and ``namespaces pause|resume``."""
    definitions = commands.add_parser(
        "definitions",
        help="pause, resume or retire a job definition",
        description="Stop or restart claims of one definition, or retire it for good.",
    )
    dsub = definitions.add_subparsers(title="commands", metavar="COMMAND", required=True)
    for verb, text in (
        ("pause", "stop claims (running jobs finish)"),
        ("resume", "claim its jobs again"),
        ("retire", "pause for good and cancel its waiting jobs"),
    ):
        parser = _verb(dsub, verb, text, f"{verb.capitalize()} a definition: {text}.")
        parser.add_argument("definition", metavar="NAME", help="the job name")
        if verb == "retire":
            parser.add_argument("--yes", action="store_true", help="do not ask for confirmation")
        parser.set_defaults(**{HANDLER: definition_command, "verb": verb})
    policy.register(dsub)

    namespaces = commands.add_parser(
        "namespaces",
        help="list namespaces; pause (suspend) or resume claims; update tags and metadata",
        description="Namespaces: list them, stop or restart every claim in one, label them.",
    )
    nsub = namespaces.add_subparsers(title="commands", metavar="COMMAND", required=True)
    for verb in ("pause", "resume"):
        parser = _verb(
            nsub,
            verb,
            f"{verb} claims in a namespace",
            f"{verb.capitalize()} every claim in namespace NAME.",
        )
        parser.add_argument("target", metavar="NAME", help="the namespace")
        parser.set_defaults(**{HANDLER: namespace_command, "verb": verb})
    tenant_cli.register_namespaces(nsub)  # list, suspend (= pause), update


def _verb(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], name: str, text: str, description: str
) -> argparse.ArgumentParser:
    parser = sub.add_parser(name, help=text, description=description)
    add_ledger_options(parser)
    parser.add_argument("--namespace", metavar="NAME", help="default: the app's, else default")
    parser.add_argument("--reason", metavar="TEXT", help="why; recorded on the events")
    parser.add_argument("--actor", metavar="WHO", help="who; default cli:<login name>")
    parser.add_argument("--json", action="store_true", help="print JSON")
    return parser


def _bulk_options(parser: argparse.ArgumentParser, *, optional_ref: bool) -> None:
    if optional_ref:
        parser.add_argument("ref", nargs="?", metavar="REF", help="one job; omit for filters")
    parser.add_argument(
        "--status", action="append", metavar="STATUS", help="only jobs in this status (repeatable)"
    )
    parser.add_argument("--name", help="only jobs of this job name")
    parser.add_argument("--tag", help="only jobs carrying this tag")
    parser.add_argument("--correlation-key", metavar="KEY", help="only jobs with this key")
    parser.add_argument("--tenant", metavar="KEY", help="only jobs of this tenant")
    parser.add_argument("--created-after", type=_instant, metavar="INSTANT")
    parser.add_argument("--created-before", type=_instant, metavar="INSTANT")
    parser.add_argument("--dry-run", action="store_true", help="only count the matching jobs")
    parser.add_argument("--yes", action="store_true", help="do not ask for confirmation")


# -- commands --------------------------------------------------------------------------------


def restart_command(args: argparse.Namespace, host_app: Acta | None) -> int:
    return _job_or_bulk(
        args,
        host_app,
        "restart",
        lambda app, ref, kw: app.repairs.restart(ref, **kw),
        lambda app, kw: app.repairs.restart_many(**kw),
    )


def reschedule_command(args: argparse.Namespace, host_app: Acta | None) -> int:
    return _job_or_bulk(
        args,
        host_app,
        "reschedule",
        lambda app, ref, kw: app.repairs.reschedule(ref, at=args.at, **kw),
        lambda app, kw: app.repairs.reschedule_many(at=args.at, **kw),
    )


def cancel_command(args: argparse.Namespace, host_app: Acta | None) -> int:
    def one(app: Acta, ref: str, kw: dict[str, Any]) -> JobInfo:
        app.cancel(ref, kw["reason"], actor=kw["actor"])
        return app.get(ref)

    return _job_or_bulk(
        args, host_app, "cancel", one, lambda app, kw: app.repairs.cancel_many(**kw)
    )


def amend_command(args: argparse.Namespace, host_app: Acta | None) -> int:
    ref = str(JobRef.parse(args.ref))
    tags = None if args.tags is None else [t for t in args.tags.split(",") if t]
    if args.priority is None and args.max_attempts is None and tags is None:
        raise UsageError("give --priority, --max-attempts or --tags")
    who = _who(args, "amended from the command line")
    with open_reader(resolve_ledger(args, host_app), args.namespace) as app:
        info = app.repairs.amend(
            ref, priority=args.priority, max_attempts=args.max_attempts, tags=tags, **who
        )
    _print_job(args, "amended", info)
    return EXIT_OK


def purge_command(args: argparse.Namespace, host_app: Acta | None) -> int:
    who = _who(args, "purged from the command line")
    filters = _filters(args)
    with open_reader(resolve_ledger(args, host_app), args.namespace) as app:
        before = _when(args.before, app.clock.now())
        return _bulk(
            args, "purge", lambda **kw: app.repairs.purge(before=before, **kw), {**filters, **who}
        )


def definition_command(args: argparse.Namespace, host_app: Acta | None) -> int:
    who = _who(args, f"{args.verb}d from the command line")
    name = args.definition
    with open_reader(resolve_ledger(args, host_app), args.namespace) as app:
        if args.verb == "retire":
            if not args.yes:
                _confirm(f"retire {name!r}: pause it for good and cancel its waiting jobs?")
            report = app.repairs.retire_definition(name, **who)
            _print_report(args, "retire", report)
            return EXIT_OK
        change = (
            app.repairs.pause_definition
            if args.verb == "pause"
            else (app.repairs.resume_definition)
        )
        changed = change(name, **who)
    _print_change(args, f"definition {name}", changed)
    return EXIT_OK


def namespace_command(args: argparse.Namespace, host_app: Acta | None) -> int:
    who = _who(args, f"{args.verb}d from the command line")
    target = validate_namespace(args.target)
    with open_reader(resolve_ledger(args, host_app), args.namespace) as app:
        change = (
            app.repairs.pause_namespace if args.verb == "pause" else (app.repairs.resume_namespace)
        )
        changed = change(target, **who)
    _print_change(args, f"namespace {target}", changed)
    return EXIT_OK


# -- shared ----------------------------------------------------------------------------------

One = Callable[[Acta, str, dict[str, Any]], JobInfo]
Many = Callable[[Acta, dict[str, Any]], BulkReport]


def _job_or_bulk(
    args: argparse.Namespace, host_app: Acta | None, verb: str, one: One, many: Many
) -> int:
    who = _who(args, f"{_DONE[verb]} from the command line")
    filters = _filters(args)
    if args.ref is not None:
        if filters or args.dry_run:
            raise UsageError(f"{verb} takes a REF or filters, not both")
        ref = str(JobRef.parse(args.ref))
        with open_reader(resolve_ledger(args, host_app), args.namespace) as app:
            info = one(app, ref, who)
        _print_job(args, verb, info)
        return EXIT_OK
    if not filters:
        raise UsageError(f"{verb} needs a REF or at least one filter (--status, --name, ...)")
    with open_reader(resolve_ledger(args, host_app), args.namespace) as app:
        return _bulk(args, verb, lambda **kw: many(app, kw), {**filters, **who})


def _bulk(
    args: argparse.Namespace, verb: str, call: Callable[..., BulkReport], kw: dict[str, Any]
) -> int:
    counted = call(dry_run=True, **kw)
    if args.dry_run:
        _print_report(args, verb, counted)
        return EXIT_OK
    if not args.yes:
        _confirm(f"{verb} {counted.matched} job(s)?")
    _print_report(args, verb, call(**kw))
    return EXIT_OK


def _confirm(question: str) -> None:
    print(f"{question} [y/N] ", end="", file=sys.stderr, flush=True)
    answer = sys.stdin.readline().strip().lower()
    if answer not in ("y", "yes"):
        raise UsageError("not confirmed: nothing changed", EXIT_FAILURE)


def _filters(args: argparse.Namespace) -> dict[str, Any]:
    found = {k: getattr(args, k, None) for k in _FILTERS}
    return {k: v for k, v in found.items() if v is not None}


def _who(args: argparse.Namespace, default_reason: str) -> dict[str, str]:
    actor = cli_actor(args.actor)
    return {"actor": actor, "reason": check_reason(args.reason or default_reason)}


def _instant(text: str) -> datetime:
    """argparse type: an ISO 8601 instant; one without an offset is read as UTC."""
    try:
        value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not an ISO 8601 instant (e.g. 2026-05-01T09:00:00Z)"
        ) from None
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


def _when(text: str, now: datetime) -> datetime:
    """``--before``: an instant, or a duration meaning that long before now."""
    try:
        return _instant(text)
    except argparse.ArgumentTypeError:
        pass
    try:
        return now - parse_duration(text, field="before")
    except ValidationError:
        raise UsageError(
            f"--before: {text!r} is neither an ISO 8601 instant nor a duration such as 30d"
        ) from None


def _print_job(args: argparse.Namespace, verb: str, info: JobInfo) -> None:
    if args.json:
        print(render.dump({"verb": verb, "job": render.job_data(info)}))
    else:
        print(f"{verb} {info.job_ref}: {info.status.label}, next run {render.next_run(info)}")


def _print_report(args: argparse.Namespace, verb: str, report: BulkReport) -> None:
    data = {
        "verb": verb,
        "matched": report.matched,
        "changed": report.changed,
        "skipped": report.skipped,
        "batches": report.batches,
        "dry_run": report.dry_run,
    }
    if args.json:
        print(render.dump(data))
    elif report.dry_run:
        print(f"{verb}: {report.matched} job(s) match (dry run, nothing changed)")
    else:
        print(
            f"{verb}: {report.changed} changed, {report.skipped} skipped (moved meanwhile), "
            f"in {report.batches} batch(es)"
        )


def _print_change(args: argparse.Namespace, what: str, changed: bool) -> None:
    verb = args.verb
    if args.json:
        print(render.dump({"verb": verb, "target": what, "changed": changed}))
    else:
        print(f"{what}: {verb}d" if changed else f"{what}: already {verb}d, nothing changed")
