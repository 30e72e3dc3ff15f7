"""``acta jobs signal`` and ``acta jobs resume``: release a job from the terminal; and what
``acta jobs show`` adds for durable jobs (the progress slot, the wait a suspended job is parked
on, the reason a paused one gives).

Both commands go through the application's operator surface (``Acta.signal``/``resume``), so
the terminal does exactly what code does. Every argument is checked before the ledger is
opened, so a malformed name, payload or reason is bad usage (exit 2) whatever the database
holds. ``signal`` prints what the signal did (a ``SignalOutcome``) and exits 0 when it was
delivered (released or stored) and 1 when it was not (no such job, job finished, already
sent): a script can tell a lost signal from a delivered one by the exit code alone.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from acta import instant
from acta.app import Acta
from acta.cli import render
from acta.cli.command import EXIT_FAILURE, EXIT_OK, HANDLER, json_argument
from acta.cli.ledger import add_ledger_options, open_reader, resolve_ledger
from acta.codec import JSON
from acta.ids import JobRef
from acta.ledger.control import check_reason
from acta.model.codes import EventCode, JobStatus
from acta.model.rows import EventInfo, JobInfo
from acta.names import validate_key
from acta.outcome import SignalOutcome
from acta.signals import Progress

NAME_MAX = 200

_DELIVERED = frozenset({SignalOutcome.RELEASED, SignalOutcome.STORED})
_SAID = {
    SignalOutcome.RELEASED: "{ref} was waiting for signal {name!r}: it is ready to run again",
    SignalOutcome.STORED: "{ref} is not waiting for signal {name!r} now: the signal is kept, "
    "and its next wait for it returns at once",
    SignalOutcome.ALREADY_SENT: "{ref} already has a signal {name!r}: the first one stands, "
    "this one was dropped",
    SignalOutcome.JOB_FINISHED: "{ref} has finished: nothing was stored",
    SignalOutcome.NO_SUCH_JOB: "no job {ref} in namespace {namespace!r}: nothing was stored",
}


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``signal`` and ``resume`` to the ``acta jobs`` subcommands."""
    signal = sub.add_parser(
        "signal",
        help="send a named signal (with a JSON payload) to a job",
        description="Send signal NAME to a job: a job suspended on it is released, otherwise "
        "it is kept for the job's next wait. Exit 0 when it was delivered (released or "
        "stored), 1 when it was not (no such job, job finished, already sent).",
    )
    signal.add_argument("ref", metavar="REF", help="the job's ref, e.g. job_06f0...")
    signal.add_argument("name", metavar="NAME", help="the signal's name, as the job waits for it")
    signal.add_argument(
        "--payload",
        metavar="JSON",
        default=None,
        help="the payload as JSON: '{\"approved\": true}', 42, '\"text\"' (default: null)",
    )
    add_ledger_options(signal)
    signal.add_argument("--json", action="store_true", help="print JSON")
    signal.set_defaults(**{HANDLER: signal_command})

    resume = sub.add_parser(
        "resume",
        help="take a paused job back to ready",
        description="Resume a job its handler paused (acta.Pause): it is ready to run again.",
    )
    resume.add_argument("ref", metavar="REF", help="the job's ref, e.g. job_06f0...")
    resume.add_argument(
        "--reason",
        default="resumed by an operator",
        metavar="TEXT",
        help="why, recorded on the job's resumed event (default: resumed by an operator)",
    )
    add_ledger_options(resume)
    resume.add_argument("--json", action="store_true", help="print JSON")
    resume.set_defaults(**{HANDLER: resume_command})


# -- commands --------------------------------------------------------------------------------


def signal_command(args: argparse.Namespace, host_app: Acta | None) -> int:
    ref = str(JobRef.parse(args.ref))
    name = validate_key(args.name, field="name", max_length=NAME_MAX)
    payload = parse_payload(args.payload)
    ledger = resolve_ledger(args, host_app)
    with open_reader(ledger) as reader:
        outcome = reader.signal(ref, name, payload)
        namespace = reader.namespace
    if args.json:
        print(render.dump({"job_ref": ref, "signal": name, "outcome": outcome.value}))
    else:
        said = _SAID[outcome].format(ref=ref, name=name, namespace=namespace)
        print(f"{outcome.value}: {said}")
    return EXIT_OK if outcome in _DELIVERED else EXIT_FAILURE


def resume_command(args: argparse.Namespace, host_app: Acta | None) -> int:
    ref = str(JobRef.parse(args.ref))
    reason = check_reason(args.reason)
    ledger = resolve_ledger(args, host_app)
    with open_reader(ledger) as reader:
        status = reader.resume(ref, reason)  # ConflictError (exit 1) when it is not paused
    if args.json:
        print(render.dump({"job_ref": ref, "status": status.label}))
    else:
        print(f"resumed {ref}: {status.label}, it runs again when a worker claims it")
    return EXIT_OK


def parse_payload(text: str | None) -> Any:
    """``--payload`` as a value the ledger stores: strict JSON (no NaN or Infinity)."""
    if text is None:
        return None
    hint = "; a string needs its quotes: --payload '\"yes\"'"
    value = json_argument(text, "--payload", strict=True, hint=hint)
    JSON.encode(value, "payload")  # PayloadError (exit 2): a lone surrogate, a NUL, too deep
    return value


# -- what `jobs show` adds -------------------------------------------------------------------


def number(value: float) -> str:
    """A progress count for people: ``43,000``, ``1,234,567``, ``2.5``."""
    if float(value).is_integer():
        return f"{int(value):,}"
    return f"{value:,.2f}".rstrip("0").rstrip(".")


def progress_text(progress: Progress) -> str:
    """``43,000 of 90,000 (rows)``; ``43,000 (rows)`` without a total."""
    text = number(progress.done)
    if progress.total is not None:
        text += f" of {number(progress.total)}"
    return f"{text} ({progress.message})" if progress.message else text


def progress_data(progress: Progress | None) -> dict[str, Any] | None:
    if progress is None:
        return None
    return {
        "done": progress.done,
        "total": progress.total,
        "message": progress.message,
        "updated_at": render.iso(progress.updated_at),
    }


def timer(info: JobInfo) -> datetime | None:
    """When a suspended job comes back by time alone (its sleep or timeout); None if never."""
    return instant.timer(info.next_run_at)


def waiting_data(info: JobInfo, events: Sequence[EventInfo]) -> dict[str, Any] | None:
    """What a suspended job waits for: the wait its newest suspension names (kind:name), and
    its timer. The timeline holds the name only at audit level full."""
    if info.status is not JobStatus.SUSPENDED:
        return None
    what = _newest_message(events, EventCode.SUSPENDED)
    kind, _, name = (what or "").partition(":")
    return {
        "wait": what,
        "kind": kind or None,
        "name": name or None,
        "due_at": render.iso(timer(info)),
    }


def waiting_text(info: JobInfo, waiting: dict[str, Any]) -> str:
    due = timer(info)
    what = waiting["wait"] or "a durable wait (its timeline does not name it: audit level)"
    if waiting["kind"] == "sleep":
        return f"{what}, wakes at {render.when(due)}"
    if due is None:
        return f"{what}, no timeout"
    return f"{what}, times out at {render.when(due)}"


def pause_reason(info: JobInfo, events: Sequence[EventInfo]) -> str | None:
    if info.status is not JobStatus.PAUSED:
        return None
    return _newest_message(events, EventCode.PAUSED)


def show_pairs(
    info: JobInfo, events: Sequence[EventInfo], progress: Progress | None
) -> list[tuple[str, str]]:
    """The label/value pairs ``acta jobs show`` adds for a durable job."""
    pairs = []
    if progress is not None:
        pairs.append(("progress", progress_text(progress)))
    waiting = waiting_data(info, events)
    if waiting is not None:
        pairs.append(("waiting for", waiting_text(info, waiting)))
    if info.status is JobStatus.PAUSED:
        reason = pause_reason(info, events)
        shown = f"{reason}; " if reason else ""
        pairs.append(("paused", f"{shown}resume with: acta jobs resume {info.job_ref}"))
    return pairs


def _newest_message(events: Sequence[EventInfo], code: EventCode) -> str | None:
    for event in reversed(events):
        if event.code is code:
            return event.message
    return None
