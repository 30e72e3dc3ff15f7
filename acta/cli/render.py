"""Turning ledger records into what a person reads in a terminal or a program reads as JSON.

Human output is plain aligned text (no colour, no box drawing) so it survives pipes, logs and
copy-paste; instants are UTC. JSON output keeps every field a script may need, with instants
in ISO 8601 and codes by their names, so it parses the same on every machine.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from acta.codec import codecs
from acta.errors import ActaError
from acta.instant import timer
from acta.model.codes import EventCode, JobStatus, Outcome
from acta.model.rows import EventInfo, JobInfo

MESSAGE_WIDTH = 100
NONE = "-"

# Events whose message explains a failure; the newest of them is a job's "last error".
_ERROR_EVENTS = frozenset({EventCode.FAILED, EventCode.LEASE_LOST})
_ERROR_OUTCOMES = frozenset({Outcome.FAILED, Outcome.TIMED_OUT})


# -- scalars -------------------------------------------------------------------------------


def iso(instant: datetime | None) -> str | None:
    """ISO 8601 in UTC with milliseconds and a ``Z`` (``2026-01-01T09:30:00.250Z``)."""
    if instant is None:
        return None
    text = instant.astimezone(UTC).isoformat(timespec="milliseconds")
    return text.replace("+00:00", "Z")


def when(instant: datetime | None, *, millis: bool = False) -> str:
    """A UTC instant for people: ``2026-01-01 09:30:00Z`` (optionally with milliseconds)."""
    if instant is None:
        return NONE
    utc = instant.astimezone(UTC)
    text = utc.strftime("%Y-%m-%d %H:%M:%S")
    if millis:
        text += f".{utc.microsecond // 1000:03d}"
    return text + "Z"


def offset(delta: timedelta) -> str:
    """Time since the first event, for a timeline: ``+0.000s``, ``+1.052s``, ``+2m03.5s``."""
    seconds = max(delta, timedelta(0)).total_seconds()
    if seconds < 60:
        return f"+{seconds:.3f}s"
    minutes, rest = divmod(seconds, 60)
    if minutes < 60:
        return f"+{int(minutes)}m{rest:04.1f}s"
    hours, minutes = divmod(int(minutes), 60)
    return f"+{hours}h{minutes:02d}m"


def first_line(text: str | None, width: int = MESSAGE_WIDTH) -> str:
    """The first line of a message, cut to ``width`` characters."""
    if not text:
        return ""
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= width else line[: width - 3] + "..."


def payload(code: int, body: bytes | None) -> Any:
    """A stored input or result as JSON-compatible data.

    Bytes payloads become ``{"base64": ...}``; a payload written with a codec this process
    does not know (a user codec) is described rather than decoded.
    """
    if body is None:
        return None
    try:
        value = codecs.by_code(code).decode(body)
    except (ActaError, ValueError) as exc:
        return {"undecodable": True, "codec": code, "size": len(body), "problem": str(exc)}
    return plain(value)


def plain(value: Any) -> Any:
    """A decoded payload as JSON-compatible data: bytes become ``{"base64": ...}``."""
    if isinstance(value, bytes | bytearray):
        return {"base64": base64.b64encode(bytes(value)).decode("ascii")}
    return value


def compact(value: Any) -> str:
    """One-line JSON for showing a payload inside human output."""
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "), default=str)


def dump(value: Any) -> str:
    """Pretty JSON for ``--json`` output."""
    return json.dumps(value, ensure_ascii=False, indent=2, default=str)


# -- records -------------------------------------------------------------------------------


def attempts(info: JobInfo) -> str:
    return f"{info.attempts}/{info.max_attempts}"


def next_run(info: JobInfo) -> str:
    # A finished job keeps a next_run_at column, but it means nothing any more; a wait with
    # no timer keeps a far-future placeholder, which is no instant either.
    if info.status.terminal or timer(info.next_run_at) is None:
        return NONE
    return when(info.next_run_at)


def job_data(info: JobInfo) -> dict[str, Any]:
    """A job as JSON-compatible data (internal row ids left out)."""
    return {
        "job_ref": info.job_ref,
        "namespace": info.namespace,
        "name": info.name,
        "status": info.status.label,
        "priority": info.priority,
        "attempts": info.attempts,
        "max_attempts": info.max_attempts,
        "executions": info.executions,
        "next_run_at": iso(info.next_run_at),
        "created_at": iso(info.created_at),
        "updated_at": iso(info.updated_at),
        "lease_expires_at": iso(info.lease_expires_at),
        "lease_epoch": info.lease_epoch,
        "dedup_key": info.dedup_key,
        "correlation_key": info.correlation_key,
        "tags": list(info.tags),
        "cancel_requested": info.cancel_requested,
        "tenant": info.tenant,
    }


def event_data(event: EventInfo) -> dict[str, Any]:
    """An event as JSON-compatible data."""
    return {
        "event_id": event.event_id,
        "at": iso(event.at),
        "event": event.code.label,
        "execution": event.execution,
        "epoch": event.epoch,
        "outcome": None if event.outcome is None else event.outcome.label,
        "reason": None if event.reason is None else event.reason.label,
        "duration_ms": event.duration_ms,
        "message": event.message,
        "detail": event.detail,
        "worker": event.worker,
        "actor": event.actor,
    }


def last_error(events: Sequence[EventInfo]) -> EventInfo | None:
    """The newest event that explains a failure, as the jobs_view ``last_error`` does."""
    for event in reversed(events):
        if event.code in _ERROR_EVENTS or (
            event.code is EventCode.EXECUTION_FINISHED and event.outcome in _ERROR_OUTCOMES
        ):
            return event
    return None


# -- layouts -------------------------------------------------------------------------------


def table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Columns padded to their widest cell, two spaces apart, no trailing blanks."""
    widths = [len(h) for h in headers]
    for row in rows:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], len(cell))
    lines = []
    for row in (headers, *rows):
        cells = [cell.ljust(widths[i]) for i, cell in enumerate(row)]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)


def jobs_table(jobs: Sequence[JobInfo], *, namespaces: bool = False) -> str:
    headers = ["REF", "NAME", "STATUS", "ATTEMPTS", "EXECUTIONS", "NEXT RUN", "UPDATED"]
    if namespaces:
        headers.insert(1, "NAMESPACE")
    rows = []
    for info in jobs:
        row = [
            info.job_ref,
            info.name,
            info.status.label,
            attempts(info),
            str(info.executions),
            next_run(info),
            when(info.updated_at),
        ]
        if namespaces:
            row.insert(1, info.namespace)
        rows.append(row)
    return table(headers, rows)


def timeline(events: Sequence[EventInfo]) -> str:
    """Events oldest first, with the time since the first one, run numbers and outcomes."""
    if not events:
        return "(no events: this job's audit level may be 'off' or 'failures')"
    start = events[0].at
    rows = []
    for event in events:
        rows.append(
            [
                when(event.at, millis=True),
                offset(event.at - start),
                "" if event.execution is None else f"#{event.execution}",
                event.code.label,
                "" if event.outcome is None else event.outcome.label,
                "" if event.reason is None else event.reason.label,
                "" if event.duration_ms is None else f"{event.duration_ms}ms",
                event.worker or (f"by {event.actor}" if event.actor else ""),
                first_line(event.message),
            ]
        )
    headers = ["AT", "SINCE", "RUN", "EVENT", "OUTCOME", "REASON", "TOOK", "WORKER", "MESSAGE"]
    return table(headers, rows)


def job_details(
    info: JobInfo, *, input: Any, result: Any, error: EventInfo | None
) -> list[tuple[str, str]]:
    """The label/value pairs ``acta jobs show`` prints."""
    pairs = [
        ("name", info.name),
        ("namespace", info.namespace),
        ("status", info.status.label + (" (cancel requested)" if info.cancel_requested else "")),
        ("attempts", f"{attempts(info)} (failed attempts spent / allowed)"),
        ("executions", str(info.executions)),
        ("priority", str(info.priority)),
        ("created", when(info.created_at, millis=True)),
        ("updated", when(info.updated_at, millis=True)),
        ("next run", next_run(info)),
    ]
    if info.lease_expires_at is not None and not info.status.terminal:
        pairs.append(("lease", f"until {when(info.lease_expires_at)} (epoch {info.lease_epoch})"))
    if info.dedup_key is not None:
        pairs.append(("dedup key", info.dedup_key))
    if info.correlation_key is not None:
        pairs.append(("correlation", info.correlation_key))
    if info.tags:
        pairs.append(("tags", ", ".join(info.tags)))
    if info.tenant is not None:
        pairs.append(("tenant", info.tenant))
    pairs.append(("input", compact(input)))
    if info.status is JobStatus.SUCCEEDED:
        pairs.append(("result", compact(result)))
    if error is not None:
        label = error.reason.label if error.reason is not None else error.code.label
        run = f"run #{error.execution}, " if error.execution is not None else ""
        pairs.append(("last error", f"{first_line(error.message)} ({run}{label})"))
    return pairs


def labelled(title: str, pairs: Sequence[tuple[str, str]]) -> str:
    """A title line and indented ``label  value`` lines."""
    width = max((len(label) for label, _ in pairs), default=0)
    body = [f"  {label.ljust(width)}  {value}".rstrip() for label, value in pairs]
    return "\n".join([title, *body])
