"""``acta jobs``: look at jobs from a terminal: list them, show one, read its timeline, ask
why one is where it is (``explain``, the operator surface ``app.ops``); send a signal to one
or resume it (those two live in ``acta.cli.durable``).

Everything goes through the application's read surface (``Acta.jobs``/``get``/``events``/
``result``), so the CLI sees exactly what application code sees, on any provider. Each
command prints aligned text, or JSON with ``--json`` for scripts.
"""

from __future__ import annotations

import argparse
from typing import Any

from acta.app import Acta
from acta.cli import debug, durable, render, repair
from acta.cli.command import EXIT_OK, HANDLER
from acta.cli.ledger import add_ledger_options, open_reader, resolve_ledger
from acta.errors import InputDecodeError, JobPurgedError
from acta.ids import JobRef
from acta.model.codes import JobStatus
from acta.model.rows import EventInfo, JobInfo
from acta.signals import Progress

STATUS_NAMES = [status.label for status in JobStatus]


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``jobs list|show|events|explain|signal|resume|debug`` to a subcommand set."""
    jobs = commands.add_parser(
        "jobs",
        help="list jobs, show one, read its event timeline, explain, signal or resume one",
        description="Read jobs from the ledger.",
    )
    sub = jobs.add_subparsers(title="commands", metavar="COMMAND", required=True)

    listing = sub.add_parser(
        "list",
        help="jobs newest first",
        description="List jobs, newest first. System jobs (sys.*) are left out unless asked.",
    )
    add_ledger_options(listing)
    listing.add_argument(
        "--status",
        choices=STATUS_NAMES,
        metavar="STATUS",
        help=f"only jobs in this status: {', '.join(STATUS_NAMES)}",
    )
    listing.add_argument("--name", help="only jobs of this job name, e.g. billing.charge-card")
    listing.add_argument("--tenant", metavar="KEY", help="only jobs of this tenant")
    listing.add_argument(
        "--limit",
        type=int,
        default=50,
        metavar="N",
        help="at most this many jobs, 1-1000 (default 50)",
    )
    listing.add_argument(
        "--namespace",
        default=None,
        metavar="NAME",
        help="namespace to list (default: the app's, else default)",
    )
    listing.add_argument(
        "--all-namespaces", action="store_true", help="list every namespace in the ledger"
    )
    listing.add_argument(
        "--include-system", action="store_true", help="include acta's own sys.* jobs"
    )
    listing.add_argument("--json", action="store_true", help="print JSON instead of a table")
    listing.set_defaults(**{HANDLER: list_command})

    show = sub.add_parser(
        "show",
        help="one job: status, counters, progress, wait, input, result, last error",
        description="Show one job by its ref (job_...).",
    )
    show.add_argument("ref", metavar="REF", help="the job's ref, e.g. job_06f0...")
    add_ledger_options(show)
    show.add_argument("--json", action="store_true", help="print JSON")
    show.set_defaults(**{HANDLER: show_command})

    events = sub.add_parser(
        "events",
        help="one job's event timeline, oldest first",
        description="Print a job's events: runs, outcomes, reasons, retries, workers.",
    )
    events.add_argument("ref", metavar="REF", help="the job's ref, e.g. job_06f0...")
    add_ledger_options(events)
    events.add_argument("--json", action="store_true", help="print JSON")
    events.set_defaults(**{HANDLER: events_command})

    explain = sub.add_parser(
        "explain",
        help="why a job is where it is, and what happens next",
        description="Explain one job from its rows: a verdict (ready, retrying, "
        "held-by-lost-worker, failed...), why, the next step, and the facts behind them.",
    )
    explain.add_argument("ref", metavar="REF", help="the job's ref, e.g. job_06f0...")
    add_ledger_options(explain)
    explain.add_argument("--json", action="store_true", help="print the explanation as JSON")
    explain.set_defaults(**{HANDLER: explain_command})

    durable.register(sub)
    debug.register(sub)
    repair.register_jobs(sub)


def _ref(text: str) -> str:
    # Parse before touching the database, so a mistyped ref is a usage error (exit 2) even
    # when the ledger is missing, and look-alike characters are read the forgiving way.
    return str(JobRef.parse(text))


def list_command(args: argparse.Namespace, host_app: Acta | None) -> int:
    ledger = resolve_ledger(args, host_app)
    with open_reader(ledger, args.namespace) as reader:
        found = reader.jobs(
            status=args.status,
            name=args.name,
            limit=args.limit,
            include_system=args.include_system,
            all_namespaces=args.all_namespaces,
            tenant=args.tenant,
        )
        namespace = reader.namespace
    if args.json:
        print(render.dump([render.job_data(info) for info in found]))
    elif not found:
        scope = "in any namespace" if args.all_namespaces else f"in namespace {namespace!r}"
        print(f"no jobs {scope} match")
    else:
        print(render.jobs_table(found, namespaces=args.all_namespaces))
    return EXIT_OK


def show_command(args: argparse.Namespace, host_app: Acta | None) -> int:
    ref = _ref(args.ref)
    ledger = resolve_ledger(args, host_app)
    with open_reader(ledger) as reader:
        try:
            info = reader.get(ref)
        except JobPurgedError as purged:
            return _show_purged(purged, reader.events(ref), args.json)
        events = reader.events(ref)
        result_value = _result(reader, ref) if info.status is JobStatus.SUCCEEDED else None
        progress = reader.progress(ref)
    input_value = render.payload(info.input_codec, info.input)
    error = render.last_error(events)
    if args.json:
        data = render.job_data(info)
        data["input"] = input_value
        data["result"] = result_value
        data["last_error"] = None if error is None else render.event_data(error)
        data["progress"] = durable.progress_data(progress)
        data["waiting_for"] = durable.waiting_data(info, events)
        data["pause_reason"] = durable.pause_reason(info, events)
        print(render.dump(data))
        return EXIT_OK
    pairs = render.job_details(info, input=input_value, result=result_value, error=error)
    print(render.labelled(info.job_ref, _with_durable(pairs, info, events, progress)))
    return EXIT_OK


def _with_durable(
    pairs: list[tuple[str, str]], info: JobInfo, events: list[EventInfo], progress: Progress | None
) -> list[tuple[str, str]]:
    """The durable lines go after "next run"; a suspended job with no timer has no next run
    (its next_run_at is a far-future placeholder, not an instant worth printing)."""
    shown: list[tuple[str, str]] = []
    for label, value in pairs:
        if (
            label == "next run"
            and info.status is JobStatus.SUSPENDED
            and durable.timer(info) is None
        ):
            value = render.NONE
        shown.append((label, value))
        if label == "next run":
            shown.extend(durable.show_pairs(info, events, progress))
    return shown


def events_command(args: argparse.Namespace, host_app: Acta | None) -> int:
    ref = _ref(args.ref)
    ledger = resolve_ledger(args, host_app)
    with open_reader(ledger) as reader:
        events = reader.events(ref)  # a purged job's timeline too: events outlive the job
        try:
            heading = _heading(reader.get(ref))
        except JobPurgedError as purged:
            heading = f"{purged.ref}  {purged.name}  {purged.status}, purged"
    if args.json:
        print(render.dump([render.event_data(event) for event in events]))
        return EXIT_OK
    print(heading)
    print(render.timeline(events))
    return EXIT_OK


def explain_command(args: argparse.Namespace, host_app: Acta | None) -> int:
    ref = _ref(args.ref)
    ledger = resolve_ledger(args, host_app)
    with open_reader(ledger) as reader:
        found = reader.ops.explain(ref)  # JobNotFoundError: exit 1, names the namespace
    if args.json:
        print(render.dump(found.to_data()))
        return EXIT_OK
    pairs = [("verdict", found.verdict.value), ("why", found.summary), ("next", found.next_step)]
    pairs.append(("facts", ""))
    pairs += [(f"  {key}", _fact(value)) for key, value in found.facts.items()]
    print(render.labelled(f"{found.job_ref}  {found.name}  {found.status}", pairs))
    return EXIT_OK


def _fact(value: Any) -> str:
    if value is None:
        return render.NONE
    if isinstance(value, str):
        return render.first_line(value)
    return render.compact(value)


def _heading(info: JobInfo) -> str:
    return f"{info.job_ref}  {info.name}  {info.status.label}"


def _show_purged(purged: JobPurgedError, events: list[EventInfo], as_json: bool) -> int:
    """A job retention purged: what its tombstone keeps, and its timeline (events stay)."""
    if as_json:
        data = {
            "job_ref": purged.ref,
            "name": purged.name,
            "status": purged.status,
            "purged": True,
            "finished_at": render.iso(purged.finished_at),
            "purged_at": render.iso(purged.purged_at),
            "events": [render.event_data(event) for event in events],
        }
        print(render.dump(data))
        return EXIT_OK
    pairs = [
        ("name", purged.name),
        ("status", f"{purged.status}, purged by retention"),
        ("finished", render.when(purged.finished_at, millis=True)),
        ("purged", render.when(purged.purged_at, millis=True)),
    ]
    print(render.labelled(purged.ref, pairs))
    print(render.timeline(events) if events else "  (no events left)")
    return EXIT_OK


def _result(reader: Acta, ref: str) -> Any:
    # The reader declares no jobs, so a result comes back as plain data; only a user codec
    # this process has not registered can stop it from decoding, and that should not hide
    # the rest of the job.
    try:
        return render.plain(reader.result(ref))
    except InputDecodeError as exc:
        return {"undecodable": True, "problem": str(exc)}
