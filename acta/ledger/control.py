"""Cancelling a job, and the checks every operator verb applies to its reason and actor.

Cancel is a guarded transition with its event, always audited whatever the definition's audit
level: an operator's action is never silent. The other verbs live beside it and use the same
checks: the repairs (restart, reschedule, amend, pause, retire, purge) in ``acta.ledger.repair``
and ``acta.ledger.repair_bulk``, signals and resume in ``acta.ledger.signal``, and settings,
gates and policy overrides in their own modules.
"""

from __future__ import annotations

from datetime import datetime

from acta.errors import ConflictError, JobNotFoundError, ValidationError
from acta.ledger import read
from acta.ledger.events import event_params
from acta.ledger.transition import apply_transition, request_cancel
from acta.model.codes import Control, EventCode, JobStatus, Reason
from acta.model.rows import EventRecord, Transition
from acta.names import SYSTEM_PREFIX, validate_text
from acta.provider.verb import Verb, execute

MAX_REASON = 1000
_CANCEL_TRIES = 5


def check_reason(reason: str) -> str:
    """An operator's reason is stored and shown to other operators (``validate_text``)."""
    return validate_text(reason, field="reason", max_length=MAX_REASON)


MAX_ACTOR = 200


def check_actor(actor: str) -> str:
    """Who asked for an operator verb: stored in the event's ``actor`` column and shown."""
    return validate_text(actor, field="actor", max_length=MAX_ACTOR)


def cancel(
    job_ref: str,
    namespace: str | None,
    reason: str,
    now: datetime | None,
    *,
    code: Reason = Reason.OPERATOR,
    actor: str | None = None,
) -> Verb[JobStatus]:
    """Cancel a waiting job at once, or flag a running one; returns the resulting status.
    ``actor`` (an operator's name) is recorded on the event; None when acta itself cancels."""
    check_reason(reason)
    # The read takes no lock, so the job may move on before the write (a run settles, a retry
    # is claimed): a write that changes nothing means "look again", never "done".
    for _ in range(_CANCEL_TRIES):
        info = yield from read.job(job_ref, namespace)
        if info is None:
            raise JobNotFoundError(f"no job {job_ref} in namespace {namespace!r}")
        if info.name.startswith(SYSTEM_PREFIX):
            raise ValidationError(
                "job",
                f"{job_ref} is acta's own {info.name!r} job",
                "jobs of your own definitions; acta's system jobs keep the ledger working",
            )
        if info.status.terminal:
            return info.status
        if info.status in (JobStatus.DISPATCHED, JobStatus.EXECUTING):
            if info.cancel_requested:
                return info.status  # asked before: one request is enough
            control = Control.PARENT_GAVE_UP if code is Reason.PARENT_GAVE_UP else Control.CANCEL
            if (yield from request_cancel(info.job_id, info.lease_epoch, now, control)):
                yield execute(
                    "insert_event",
                    event_params(
                        now,
                        info.namespace_id,
                        info.job_id,
                        info.job_ref,
                        EventCode.CANCEL_REQUESTED,
                        epoch=info.lease_epoch,
                        reason=int(code),
                        message=reason,
                        actor=actor,
                    ),
                )
                return info.status
            continue
        plan = Transition(
            job_id=info.job_id,
            job_ref=info.job_ref,
            namespace_id=info.namespace_id,
            epoch=info.lease_epoch,
            expect=(info.status,),
            status=JobStatus.CANCELLED,
            events=(EventRecord(EventCode.CANCELLED, reason=code, message=reason, actor=actor),),
        )
        if (yield from apply_transition(plan, now)) is not None:
            return JobStatus.CANCELLED
    raise ConflictError(
        f"job {job_ref} changed state {_CANCEL_TRIES} times while it was being cancelled; "
        "nothing was written, try again"
    )
