"""``acta schedules``: list a namespace's recurring schedules, preview their next instants, and
pause, resume, trigger or override them on a running system.

Every command goes through the application's operator surface (``Acta.schedules``), so the
terminal does exactly what code does. Arguments are checked before the ledger is opened, so a
malformed expression, zone, instant or reason is bad usage (exit 2) whatever the database
holds; an unknown schedule or a stale ``--expect-version`` exits 1 and changes nothing.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from acta.app import Acta
from acta.cli import render
from acta.cli.command import EXIT_OK, HANDLER, CliError, UsageError, cli_actor
from acta.cli.ledger import add_ledger_options, open_reader, resolve_ledger
from acta.errors import ConflictError, ScheduleNotFoundError
from acta.ledger.control import check_reason
from acta.names import validate_job_name
from acta.policy.schedule import MAX_PREVIEW, Schedule
from acta.schedules import ScheduleInfo

_SHARED = frozenset({"database", "app", "schema", "namespace", "json"})


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``schedules [list]|preview|pause|resume|trigger|override`` to a subcommand set."""
    top = commands.add_parser(
        "schedules",
        help="list recurring schedules; pause, resume, trigger or override one",
        description="Recurring schedules of a namespace (`acta schedules` lists them).",
    )
    _options(top, json=True)
    top.set_defaults(**{HANDLER: list_command})
    sub = top.add_subparsers(title="commands", metavar="COMMAND")
    register_commands(sub)


def register_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The subcommands of ``acta schedules``."""

    listing = sub.add_parser("list", help="every schedule, its next instant and version")
    listing.add_argument("job", metavar="JOB", nargs="?", help="only this job's schedules")
    _options(listing, json=True)
    listing.set_defaults(**{HANDLER: list_command})

    preview = sub.add_parser("preview", help="the next N instants a schedule fires for")
    _target(preview)
    preview.add_argument("-n", type=int, default=10, help=f"how many (1-{MAX_PREVIEW}; default 10)")
    _options(preview, json=True)
    preview.set_defaults(**{HANDLER: preview_command})

    pause = sub.add_parser("pause", help="stop firing, until resumed or until an instant")
    _target(pause, every_schedule=True)
    pause.add_argument("--until", metavar="INSTANT", help="ISO 8601 with an offset: ends by itself")
    _change_options(pause)
    pause.set_defaults(**{HANDLER: pause_command})

    resume = sub.add_parser("resume", help="fire again from now on")
    _target(resume, every_schedule=True)
    _change_options(resume)
    resume.set_defaults(**{HANDLER: resume_command})

    trigger = sub.add_parser("trigger", help="fire once now, outside the schedule")
    _target(trigger)
    _change_options(trigger)
    trigger.set_defaults(**{HANDLER: trigger_command})

    override = sub.add_parser(
        "override",
        help="replace the expression in force (or clear the override)",
        description="Replace a schedule's expression until cleared (--clear goes back to the "
        "code's declaration). Applies from now on; needs --expect-version.",
    )
    _target(override)
    what = override.add_mutually_exclusive_group(required=True)
    what.add_argument("--every", metavar="DURATION", help="an interval: 30s, 5m, 1h")
    what.add_argument("--cron", metavar="EXPR", help="five cron fields, e.g. '0 3 * * *'")
    what.add_argument("--clear", action="store_true", help="go back to the code's declaration")
    override.add_argument("--zone", default="UTC", help="IANA time zone for --cron (default UTC)")
    override.add_argument("--misfire", default="skip", choices=("skip", "catch_up"))
    _change_options(override, version_required=True)
    override.set_defaults(**{HANDLER: override_command})
    for parser in (listing, preview, pause, resume, trigger, override):
        _keep_parent_values(parser)


def _target(parser: argparse.ArgumentParser, *, every_schedule: bool = False) -> None:
    parser.add_argument("job", metavar="JOB", help="the scheduled job's name")
    default = None if every_schedule else "default"
    parser.add_argument(
        "--schedule",
        default=default,
        metavar="NAME",
        help="which of its schedules (default: "
        + ("every one" if every_schedule else "'default'")
        + ")",
    )


def _options(parser: argparse.ArgumentParser, *, json: bool) -> None:
    add_ledger_options(parser)
    parser.add_argument("--namespace", default=None, metavar="NAME", help="default: the app's")
    if json:
        parser.add_argument("--json", action="store_true", help="print JSON")


def _keep_parent_values(parser: argparse.ArgumentParser) -> None:
    """argparse copies a subcommand's defaults over what its parent parsed (``acta schedules
    --database x pause ...`` would lose ``--database``): unset options stay out instead."""
    for action in parser._actions:
        if action.dest in _SHARED:
            action.default = argparse.SUPPRESS


def _change_options(parser: argparse.ArgumentParser, *, version_required: bool = False) -> None:
    parser.add_argument(
        "--expect-version",
        type=int,
        default=None,
        required=version_required,
        metavar="V",
        help="the version `acta schedules` shows; a stale one changes nothing",
    )
    parser.add_argument("--reason", default=None, metavar="TEXT", help="recorded on the event")
    parser.add_argument("--actor", metavar="WHO", help="who; default cli:<login name>")
    _options(parser, json=True)


# -- commands --------------------------------------------------------------------------------


def list_command(args: argparse.Namespace, host_app: Acta | None) -> int:
    job = getattr(args, "job", None)
    job = None if job is None else validate_job_name(job)
    ledger = resolve_ledger(args, host_app)
    with open_reader(ledger, getattr(args, "namespace", None)) as reader:
        infos = reader.schedules.list(job)
        namespace = reader.namespace
    if getattr(args, "json", False):
        print(render.dump([data(i) for i in infos]))  # a listing: an array of objects
        return EXIT_OK
    if not infos:
        print(f"no schedules in namespace {namespace!r}")
        return EXIT_OK
    rows = [
        [
            i.job_name,
            i.name,
            i.schedule.describe(),
            i.schedule.misfire,
            render.when(i.last_fired_at),
            state(i),
            str(i.version),
        ]
        for i in infos
    ]
    headers = ["job", "schedule", "expression", "misfire", "last fired", "next", "version"]
    print(render.table(headers, rows))
    return EXIT_OK


def preview_command(args: argparse.Namespace, host_app: Acta | None) -> int:
    job = validate_job_name(args.job)
    if not 1 <= args.n <= MAX_PREVIEW:
        raise UsageError(f"-n: got {args.n}; a whole number from 1 to {MAX_PREVIEW}")
    ledger = resolve_ledger(args, host_app)
    with open_reader(ledger, args.namespace) as reader:
        instants = _found(lambda: reader.schedules.preview(job, args.schedule, args.n))
    if args.json:
        print(render.dump({"job": job, "schedule": args.schedule, "next": instants}))
    else:
        print("\n".join(render.when(i) for i in instants))
    return EXIT_OK


def pause_command(args: argparse.Namespace, host_app: Acta | None) -> int:
    options = _change(args)
    if args.until is not None:
        options["until"] = _instant(args.until)
    return _apply(args, host_app, lambda s: s.pause(args.job, args.schedule, **options))


def resume_command(args: argparse.Namespace, host_app: Acta | None) -> int:
    options = _change(args)
    return _apply(args, host_app, lambda s: s.resume(args.job, args.schedule, **options))


def trigger_command(args: argparse.Namespace, host_app: Acta | None) -> int:
    options = _change(args)
    return _apply(args, host_app, lambda s: [s.trigger(args.job, args.schedule, **options)])


def override_command(args: argparse.Namespace, host_app: Acta | None) -> int:
    options = _change(args)
    expected = options.pop("expected_version")
    if args.clear:
        reason, actor = options.get("reason", "cleared"), options["actor"]
        return _apply(
            args,
            host_app,
            lambda s: [
                s.clear_override(
                    args.job, args.schedule, expected_version=expected, reason=reason, actor=actor
                )
            ],
        )
    spec: dict[str, Any] = {"every": args.every} if args.every else {"cron": args.cron}
    if args.cron:
        spec["zone"] = args.zone
    Schedule(misfire=args.misfire, **spec)  # checked now: bad usage before the ledger opens
    return _apply(
        args,
        host_app,
        lambda s: [
            s.override(
                args.job,
                args.schedule,
                expected_version=expected,
                misfire=args.misfire,
                **spec,
                **options,
            )
        ],
    )


def _change(args: argparse.Namespace) -> dict[str, Any]:
    validate_job_name(args.job)
    options: dict[str, Any] = {"actor": cli_actor(args.actor)}
    if args.reason is not None:
        options["reason"] = check_reason(args.reason)
    if args.expect_version is not None:
        if args.expect_version < 1:
            raise UsageError("--expect-version: the version `acta schedules` shows (1 or more)")
        options["expected_version"] = args.expect_version
    return options


def _apply(
    args: argparse.Namespace, host_app: Acta | None, change: Callable[[Any], list[ScheduleInfo]]
) -> int:
    ledger = resolve_ledger(args, host_app)
    with open_reader(ledger, args.namespace) as reader:
        infos = _found(lambda: change(reader.schedules))
    if args.json:
        print(render.dump([data(i) for i in infos]))
    else:
        for i in infos:
            print(
                f"{i.job_name}/{i.name}: {i.schedule.describe()}, {state(i)}; version {i.version}"
            )
    return EXIT_OK


def _found(call: Callable[[], Any]) -> Any:
    try:
        return call()
    except (ScheduleNotFoundError, ConflictError) as exc:
        raise CliError(f"{exc} (`acta schedules` lists them with their versions)") from None


def _instant(text: str) -> datetime:
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        value = None
    if value is None or value.tzinfo is None:
        raise UsageError(
            f"--until: got {text!r}; an ISO 8601 instant with an offset, e.g. "
            "2026-12-24T18:00:00+01:00"
        )
    return value


def state(info: ScheduleInfo) -> str:
    """``next 2026-...``, ``paused``, ``paused until ...``, ``firing for ...``."""
    if info.firing_at is not None:
        return f"firing for {render.when(info.firing_at)}"
    if info.paused and info.next_at is None:
        return "paused"
    if info.paused:
        return f"paused until {render.when(info.paused_until)}"
    return f"next {render.when(info.next_at)}"


def data(info: ScheduleInfo) -> dict[str, Any]:
    every = info.schedule.every
    return {
        "job": info.job_name,
        "schedule": info.name,
        "every_ms": None if every is None else every // timedelta(milliseconds=1),
        "cron": info.schedule.cron,
        "zone": info.schedule.zone,
        "misfire": info.schedule.misfire,
        "overridden": info.overridden,
        "last_fired_at": render.iso(info.last_fired_at),
        "next_at": render.iso(info.next_at),
        "firing_at": render.iso(info.firing_at),
        "triggered_at": render.iso(info.triggered_at),
        "paused": info.paused,
        "paused_until": render.iso(info.paused_until),
        "slot_ref": info.slot_ref,
        "version": info.version,
    }
