"""Events: the ``events`` rows every ledger verb writes beside the state change they record.

A verb writes its event in the same transaction as the change (``insert_event``), so the
history never claims a change that did not commit, nor misses one that did. This module is the
one place that knows the columns of an event row; enqueue, claim, transition, control and the
incarnation verbs all build their ``insert_event`` parameters here.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime

from acta.model.codes import EventCode


@dataclass(frozen=True, slots=True)
class Who:
    """Who asked for an operator verb and why: the actor goes to the event's ``actor`` column,
    the reason (with the verb and its facts) to its JSON detail."""

    actor: str
    reason: str

    def detail(self, verb: str, **facts: object) -> str:
        return json.dumps(
            {"verb": verb, "reason": self.reason, **facts},
            sort_keys=True,
            default=str,
        )


def event_params(
    now: datetime | None,
    namespace_id: int | None,
    job_id: int | None,
    job_ref: str | None,
    code: EventCode,
    *,
    worker_id: int | None = None,
    execution: int | None = None,
    epoch: int | None = None,
    outcome: int | None = None,
    reason: int | None = None,
    duration_ms: int | None = None,
    message: str | None = None,
    detail: str | None = None,
    actor: str | None = None,
) -> dict[str, object]:
    """Parameters of one ``insert_event``; ``actor`` names the operator (or system) whose
    verb it records, None for what the runtime did on its own."""
    return {
        "now": now,
        "namespace_id": namespace_id,
        "job_id": job_id,
        "job_ref": job_ref,
        "worker_id": worker_id,
        "code": int(code),
        "execution": execution,
        "epoch": epoch,
        "outcome": outcome,
        "reason": reason,
        "duration_ms": duration_ms,
        "message": message,
        "detail": detail,
        "actor": actor,
    }


def worker_event(
    now: datetime | None,
    namespace_id: int,
    worker_id: int,
    code: EventCode,
    *,
    reason: int | None = None,
    message: str | None = None,
) -> dict[str, object]:
    """Parameters of one ``insert_event`` about a worker incarnation (no job)."""
    return event_params(
        now, namespace_id, None, None, code, worker_id=worker_id, reason=reason, message=message
    )
