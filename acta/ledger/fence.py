"""The run fence: a handler's writes land only while its run still holds the job's lease.

Every durable write of a running handler (steps, variables, waits, a schedule's firing) starts
with ``guard_run``. A write that fails it changes nothing else, records ``write-fenced`` (the
evidence that a zombie tried) and answers False.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from acta.ledger.events import event_params
from acta.model.codes import EventCode
from acta.provider.verb import Verb, execute, fetch_one


@dataclass(frozen=True, slots=True)
class RunLease:
    """The lease a handler's durable writes are fenced by."""

    job_id: int
    job_ref: str
    namespace_id: int
    epoch: int
    worker_id: int
    execution: int


def guard_run(lease: RunLease, now: datetime | None, what: str) -> Verb[bool]:
    """The fence. Refused: record the attempt and answer False (nothing else is written)."""
    row = yield fetch_one(
        "lease_guard",
        {"job_id": lease.job_id, "epoch": lease.epoch, "worker_id": lease.worker_id},
    )
    if row is not None:
        return True
    yield execute(
        "insert_event",
        event_params(
            now,
            lease.namespace_id,
            lease.job_id,
            lease.job_ref,
            EventCode.WRITE_FENCED,
            worker_id=lease.worker_id,
            epoch=lease.epoch,
            execution=lease.execution,
            message=f"refused {what} at epoch {lease.epoch}",
        ),
    )
    return False
