"""Durable execution verbs: what a running handler writes under its lease, and reads back.

Every write starts with ``lease_guard``: the job must still be executing under this worker's
lease at this epoch. A write that fails the guard changes nothing, records ``write-fenced``
(the evidence a zombie tried) and answers False; the runtime then stops the run.

Every write is idempotent, so the provider's whole-verb retry after a lost COMMIT reply
changes nothing the first attempt committed: steps, variables, progress and waits are upserts
keyed by job and name, and a step's event is written only by the write that changed its state;
children are found by name; a note or an alert, which have no natural key, are recognised by
the id the first attempt wrote (``acta.ledger.doubt``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from acta.ledger.control import cancel
from acta.ledger.doubt import event_probe
from acta.ledger.enqueue import enqueue
from acta.ledger.events import event_params
from acta.ledger.fence import RunLease, guard_run
from acta.model.codes import EventCode, Reason, StepState, WaitKind
from acta.model.rows import DefinitionSpec, Enqueued, NewJob
from acta.provider.verb import Op, Verb, execute, execute_many, fetch_all, fetch_one


@dataclass(frozen=True, slots=True)
class StoredStep:
    state: StepState
    at_most_once: bool
    execution: int
    value: tuple[int, bytes] | None
    error: str | None


@dataclass(frozen=True, slots=True)
class StoredSignal:
    value: tuple[int, bytes]
    sent_at: datetime


@dataclass(frozen=True, slots=True)
class WaitState:
    """A durable wait as the ledger holds it, judged against the database's now; for a signal
    wait, the signal of its name if one was sent (read in the same transaction)."""

    due_at: datetime | None
    armed_at: datetime
    expired: bool
    signal: StoredSignal | None = None


@dataclass(frozen=True, slots=True)
class StoredChild:
    job_ref: str
    child_name: str | None
    name: str
    status: int
    value: tuple[int, bytes] | None


def _stored(codec: int | None, body: Any) -> tuple[int, bytes] | None:
    return None if codec is None or body is None else (codec, bytes(body))


def _event(
    lease: RunLease, now: datetime | None, code: EventCode, message: str | None = None, **rest: Any
) -> dict[str, object]:
    return event_params(
        now,
        lease.namespace_id,
        lease.job_id,
        lease.job_ref,
        code,
        worker_id=lease.worker_id,
        epoch=lease.epoch,
        execution=lease.execution,
        message=message,
        **rest,
    )


def load(job_id: int) -> Verb[tuple[dict[str, StoredStep], dict[str, tuple[int, bytes]]]]:
    """A job's steps and variables, read once when its handler first needs them (only the
    lease holder writes them, so the run keeps its own copy current afterwards)."""
    steps = yield fetch_all("durable_steps", {"job_id": job_id})
    variables = yield fetch_all("durable_variables", {"job_id": job_id})
    return (
        {
            row["name"]: StoredStep(
                StepState(row["state"]),
                bool(row["at_most_once"]),
                row["execution"],
                _stored(row["codec"], row["body"]),
                row["error"],
            )
            for row in steps
        },
        {row["name"]: (row["codec"], bytes(row["body"])) for row in variables},
    )


def write_step(
    lease: RunLease,
    name: str,
    state: StepState,
    *,
    at_most_once: bool,
    value: tuple[int, bytes] | None,
    error: str | None,
    event: EventCode | None,
    now: datetime | None,
) -> Verb[bool]:
    """Record a step's intent, result or interruption (with its event, if audited)."""
    if not (yield from guard_run(lease, now, f"write of step {name!r}")):
        return False
    changed = yield execute(
        "step_write",
        {
            "now": now,
            "job_id": lease.job_id,
            "name": name,
            "state": int(state),
            "at_most_once": at_most_once,
            "execution": lease.execution,
            "codec": None if value is None else value[0],
            "body": None if value is None else value[1],
            "error": error,
        },
    )
    if event is not None and changed:  # unchanged: a retry of a write that committed
        yield execute("insert_event", _event(lease, now, event, name))
    return True


def write_variable(
    lease: RunLease, name: str, value: tuple[int, bytes], now: datetime | None
) -> Verb[bool]:
    if not (yield from guard_run(lease, now, f"write of variable {name!r}")):
        return False
    yield execute(
        "variable_write",
        {"now": now, "job_id": lease.job_id, "name": name, "codec": value[0], "body": value[1]},
    )
    return True


def write_progress(
    lease: RunLease, done: float, total: float | None, message: str | None, now: datetime | None
) -> Verb[bool]:
    if not (yield from guard_run(lease, now, "progress write")):
        return False
    yield execute(
        "progress_write",
        {"now": now, "job_id": lease.job_id, "done": done, "total": total, "message": message},
    )
    return True


def arm_wait(
    lease: RunLease,
    kind: int,
    name: str,
    *,
    until: datetime | None,
    ms: int | None,
    reopen: bool,
    now: datetime | None,
) -> Verb[WaitState | None]:
    """Arm a wait once (an armed one keeps its instant) and answer it; None when fenced.
    ``reopen`` opens a released wait again (a children wait used a second time)."""
    if not (yield from guard_run(lease, now, f"wait {name!r}")):
        return None
    params = {"job_id": lease.job_id, "kind": kind, "name": name}
    yield execute(
        "wait_arm",
        {**params, "now": now, "until": until, "ms": ms, "execution": lease.execution},
    )
    if reopen:
        yield execute("wait_rearm", params)
    row = yield fetch_one("wait_of", {**params, "now": now})
    signal = (yield from signal_of(lease.job_id, name)) if kind == WaitKind.SIGNAL else None
    return WaitState(row["due_at"], row["armed_at"], bool(row["expired"]), signal)


def signal_of(job_id: int, name: str) -> Verb[StoredSignal | None]:
    row = yield fetch_one("signal_of", {"job_id": job_id, "name": name})
    if row is None:
        return None
    return StoredSignal((row["codec"], bytes(row["body"])), row["sent_at"])


def note(
    lease: RunLease, code: EventCode, message: str, detail: str | None, now: datetime | None
) -> Verb[tuple[bool, Op | None]]:
    """A handler's note, written whatever the audit level; with the probe that finds it (run
    it with ``acta.ledger.doubt.once``: a note has no key to find it by)."""
    if not (yield from guard_run(lease, now, "note")):
        return False, None
    row = yield fetch_one("insert_event_id", _event(lease, now, code, message, detail=detail))
    return True, event_probe(row["id"], int(code))


def open_alert(
    lease: RunLease, severity: int, title: str, detail: str | None, now: datetime | None
) -> Verb[tuple[int | None, Op | None]]:
    """A handler's alert and its event; with the probe that finds it (run it with
    ``acta.ledger.doubt.once``: an alert has no key to find it by)."""
    if not (yield from guard_run(lease, now, "alert")):
        return None, None
    row = yield fetch_one(
        "alert_insert",
        {
            "now": now,
            "namespace_id": lease.namespace_id,
            "job_id": lease.job_id,
            "job_ref": lease.job_ref,
            "kind": 1,
            "severity": severity,
            "title": title,
            "detail": detail,
        },
    )
    yield execute("insert_event", _event(lease, now, EventCode.ALERT_OPENED, title, detail=detail))
    alert_id = int(row["alert_id"])
    return alert_id, fetch_one("alert_written", {"alert_id": alert_id, "job_id": lease.job_id})


def spawn(
    lease: RunLease,
    namespace: str,
    specs: Mapping[str, DefinitionSpec],
    children: Sequence[NewJob],
    audited: bool,
    now: datetime | None,
    *,
    fused: bool = False,
    channel: str | None = None,
) -> Verb[list[Enqueued] | None]:
    """Enqueue children under the parent's lease, each with a latch on the parent. A child
    its parent already spawned (same name: a re-entry) is found, not written again."""
    if not (yield from guard_run(lease, now, "spawn of children")):
        return None
    names = [c.child_name for c in children]
    rows = yield fetch_all(
        "children_named", {"parent_id": lease.job_id, "names": json.dumps(names)}
    )
    found = {row["child_name"]: Enqueued(row["job_ref"], row["job_id"], False) for row in rows}
    missing = [c for c in children if c.child_name not in found]
    made: dict[str | None, Enqueued] = {}
    if missing:  # a re-entry finds its children with the one read above, and writes nothing
        written, _ = yield from enqueue(
            namespace, specs, missing, now, fused=fused, channel=channel
        )
        made = {c.child_name: w for c, w in zip(missing, written, strict=True)}
    written = [found.get(c.child_name) or made[c.child_name] for c in children]
    created = [w for w in written if w.created]
    if created:
        yield execute_many(
            "latch_insert", [{"child_id": w.job_id, "parent_id": lease.job_id} for w in created]
        )
        yield execute("children_spawned", {"job_id": lease.job_id, "count": len(created)})
        if audited:
            yield execute(
                "insert_event",
                _event(lease, now, EventCode.CHILDREN_SPAWNED, f"{len(created)} spawned"),
            )
    return written


def give_up_on(
    lease: RunLease, child_refs: Sequence[str], namespace: str, now: datetime | None
) -> Verb[bool]:
    """A parent's bounded wait expired: cancel its unfinished children (a running one is asked
    to stop), under the parent's lease, in one transaction."""
    if not (yield from guard_run(lease, now, "cancel of late children")):
        return False
    for ref in child_refs:
        yield from cancel(
            ref,
            namespace,
            "its parent's bounded wait for its children expired",
            now,
            code=Reason.PARENT_GAVE_UP,
        )
    return True


def children_of(parent_id: int) -> Verb[list[StoredChild]]:
    rows = yield fetch_all("children_of", {"parent_id": parent_id})
    return [
        StoredChild(
            row["job_ref"],
            row["child_name"],
            row["name"],
            row["status"],
            _stored(row["codec"], row["body"]),
        )
        for row in rows
    ]


def progress_of(job_id: int) -> Verb[dict[str, Any] | None]:
    row = yield fetch_one("progress_of", {"job_id": job_id})
    return None if row is None else dict(row)
