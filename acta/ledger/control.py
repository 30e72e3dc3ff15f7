"""Operator control verbs. Cancel now; pause, resume, restart and repair join it later.

Every verb is a guarded transition with its event, and always audited whatever the definition's
audit level: an operator's action is never silent.
"""

from __future__ import annotations

from datetime import datetime

from acta.errors import JobNotFoundError, ValidationError
from acta.ledger import read
from acta.ledger.enqueue import event_params
from acta.ledger.transition import apply_transition, request_cancel
from acta.model.codes import EventCode, JobStatus, Reason
from acta.model.rows import EventRecord, Transition
from acta.provider.verb import Verb, execute

MAX_REASON = 1000


def check_reason(reason: str) -> str:
    if (
        not isinstance(reason, str)
        or not reason.strip()
        or len(reason) > MAX_REASON
        or "\x00" in reason
    ):
        raise ValidationError(
            "reason", f"got {reason!r:.80}", f"1 to {MAX_REASON} characters, no NUL"
        )
    return reason


def cancel(
    job_ref: str, namespace: str | None, reason: str, now: datetime | None
) -> Verb[JobStatus]:
    """Cancel a waiting job at once, or flag a running one; returns the resulting status."""
    check_reason(reason)
    info = yield from read.job(job_ref, namespace)
    if info is None:
        raise JobNotFoundError(f"no job {job_ref} in namespace {namespace!r}")
    if info.status.terminal:
        return info.status
    if info.status in (JobStatus.DISPATCHED, JobStatus.EXECUTING):
        if (yield from request_cancel(info.job_id, info.lease_epoch, now)):
            yield execute(
                "insert_event",
                event_params(
                    now,
                    info.namespace_id,
                    info.job_id,
                    info.job_ref,
                    EventCode.CANCEL_REQUESTED,
                    epoch=info.lease_epoch,
                    reason=int(Reason.OPERATOR),
                    message=reason,
                ),
            )
        return info.status
    plan = Transition(
        job_id=info.job_id,
        job_ref=info.job_ref,
        namespace_id=info.namespace_id,
        epoch=info.lease_epoch,
        expect=(info.status,),
        status=JobStatus.CANCELLED,
        events=(EventRecord(EventCode.CANCELLED, reason=Reason.OPERATOR, message=reason),),
    )
    if (yield from apply_transition(plan, now)) is not None:
        return JobStatus.CANCELLED
    again = yield from read.job(job_ref, namespace)
    return JobStatus.CANCELLED if again is None else again.status
