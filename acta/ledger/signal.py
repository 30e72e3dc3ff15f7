"""Signals and resumes: an outsider releasing a job that waits.

``send_signal`` keeps a named payload for a job and, if the job is suspended on a wait for that
name that has not expired, makes it ready in the same transaction. The job's runtime row is
locked first, so a handler suspending on the same signal at the same moment either commits
first (and is woken here) or finds the signal when it takes the lock (``acta.ledger.latch``).
``resume`` takes a paused job back to ready.

Both answer with the probe of the event they wrote, and the caller runs them with
``acta.ledger.doubt.once``: a retry after a lost COMMIT reply answers what the first attempt
would have (a signal stored or released, not "already sent"; a job resumed, not "not paused").
"""

from __future__ import annotations

from datetime import datetime

from acta.errors import ConflictError, JobNotFoundError
from acta.ledger import read
from acta.ledger.control import check_reason
from acta.ledger.doubt import event_probe, job_event_probe
from acta.ledger.events import event_params
from acta.ledger.latch import wake
from acta.ledger.transition import apply_transition
from acta.model.codes import EventCode, JobStatus, Reason, WaitKind
from acta.model.rows import EventRecord, Transition
from acta.outcome import SignalOutcome
from acta.provider.verb import Op, Verb, fetch_all, fetch_one


def send_signal(
    job_ref: str,
    namespace: str,
    name: str,
    codec: int,
    body: bytes,
    now: datetime | None,
    actor: str | None = None,
) -> Verb[tuple[SignalOutcome, Op | None]]:
    """Deliver signal ``name`` to a job; what happened, as a SignalOutcome (never an error for
    an unknown or finished job: senders race with jobs ending, and that is not a bug)."""
    target = yield fetch_one("signal_target", {"job_ref": job_ref, "namespace": namespace})
    if target is None:
        return SignalOutcome.NO_SUCH_JOB, None
    if JobStatus(target["status"]).terminal:
        return SignalOutcome.JOB_FINISHED, None
    job_id = target["job_id"]
    kept = yield fetch_all(
        "signal_insert", {"job_id": job_id, "name": name, "codec": codec, "body": body, "now": now}
    )
    if not kept:
        return SignalOutcome.ALREADY_SENT, None
    event = yield fetch_one(
        "insert_event_id",
        event_params(
            now,
            target["namespace_id"],
            job_id,
            job_ref,
            EventCode.SIGNALLED,
            message=name,
            actor=actor,
        ),
    )
    probe = event_probe(event["id"], int(EventCode.SIGNALLED))
    if target["status"] == int(JobStatus.SUSPENDED):
        released = yield fetch_all(
            "wait_release",
            {"job_id": job_id, "kind": int(WaitKind.SIGNAL), "name": name, "now": now},
        )
        if released and (
            yield from wake(job_id, target["namespace_id"], job_ref, f"signal:{name}", now)
        ):
            return SignalOutcome.RELEASED, probe
    return SignalOutcome.STORED, probe


def resume(
    job_ref: str, namespace: str, reason: str, now: datetime | None, actor: str | None = None
) -> Verb[tuple[JobStatus, Op | None]]:
    """Take a paused job back to ready, now."""
    check_reason(reason)
    info = yield from read.job(job_ref, namespace)
    if info is None:
        raise JobNotFoundError(f"no job {job_ref} in namespace {namespace!r}")
    if info.status is not JobStatus.PAUSED:
        raise ConflictError(
            f"job {job_ref} is {info.status.label}, not paused: only a paused job is resumed"
        )
    plan = Transition(
        job_id=info.job_id,
        job_ref=info.job_ref,
        namespace_id=info.namespace_id,
        epoch=info.lease_epoch,
        expect=(JobStatus.PAUSED,),
        status=JobStatus.READY,
        delay_ms=0,
        events=(
            EventRecord(EventCode.RESUMED, reason=Reason.OPERATOR, message=reason, actor=actor),
        ),
    )
    if (yield from apply_transition(plan, now)) is None:
        raise ConflictError(f"job {job_ref} changed while it was being resumed; nothing written")
    return JobStatus.READY, (yield from job_event_probe(info.job_id, int(EventCode.RESUMED)))
