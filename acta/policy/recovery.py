"""Recovery policy: what taking back a lapsed lease does to the job that held it.

A started run that lost its worker counts as an attempt (a job that keeps killing its worker
must not loop forever) and fails the job when it was the last; a job that was only dispatched
goes back untouched. acta's own ``sys.*`` jobs never spend attempts this way. The lease-lost
event is always written, whatever the audit level: it is the evidence that the lease moved.
"""

from __future__ import annotations

from acta.model.codes import EventCode, JobStatus, Reason, audited
from acta.model.rows import AlertCause, EventRecord, LapsedLease, Transition
from acta.names import SYSTEM_PREFIX


def recovery_transition(lapsed: LapsedLease) -> Transition:
    """What recovery does with one lapsed lease (policy, no I/O)."""
    level = lapsed.audit_level
    started = lapsed.status is JobStatus.EXECUTING
    events = [
        EventRecord(
            EventCode.LEASE_LOST,
            execution=lapsed.executions if started else None,
            reason=Reason.LEASE_EXPIRED,
            message="the worker holding the lease stopped renewing it",
        )
    ]
    # acta's own sys.* jobs are recurring slots that keep the ledger alive (recovery among
    # them): a lost run re-arms them without spending attempts, so no number of crashes over
    # a ledger's life can ever fail one for good.
    charge = 1 if started and not lapsed.name.startswith(SYSTEM_PREFIX) else 0
    status = JobStatus.READY
    alert = None
    if charge and lapsed.attempts + charge >= lapsed.max_attempts:
        status = JobStatus.FAILED
        message = f"lost its worker on attempt {lapsed.attempts + 1} of {lapsed.max_attempts}"
        # The definition's alert profile lives in code the recovering worker may not have:
        # a job failed by recovery always reports (as a terminal failure).
        alert = AlertCause(Reason.ATTEMPTS_EXHAUSTED, message, True)
        if audited(level, EventCode.FAILED):
            events.append(
                EventRecord(
                    EventCode.FAILED,
                    execution=lapsed.executions,
                    reason=Reason.ATTEMPTS_EXHAUSTED,
                    message=message,
                )
            )
    return Transition(
        job_id=lapsed.job_id,
        job_ref=lapsed.job_ref,
        namespace_id=lapsed.namespace_id,
        epoch=lapsed.epoch,
        expect=(JobStatus.DISPATCHED, JobStatus.EXECUTING),
        status=status,
        # The events name the worker whose lease lapsed: the one that lost the execution.
        worker_id=lapsed.owner,
        lapsed=True,
        delay_ms=0 if status is JobStatus.READY else None,
        charge=charge,
        events=tuple(events),
        alert=alert,
    )
