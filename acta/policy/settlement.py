"""Settlement: how a run's end becomes a guarded transition. The retry policy lives here, once.

Each planner turns what happened in a handler run into a ``Transition`` (new status, delay,
attempt charge, events filtered by the definition's audit level). Pure functions: no I/O, no
clock. A failure spends one attempt; when it was the last allowed, the job fails for good.
Cancellation, shutdown and a missing handler never spend an attempt.
"""

from __future__ import annotations

import random
import re
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

from acta.model.codes import AuditLevel, EventCode, JobStatus, Outcome, Reason, audited
from acta.model.rows import AlertCause, Claimed, EventRecord, Transition, WaitRef
from acta.policy.job import JobPolicy

_MS = timedelta(milliseconds=1)
MAX_MESSAGE = 4000


# What no text column takes: NUL (PostgreSQL refuses it) and lone surrogates (no UTF-8 form).
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def clip(message: str) -> str:
    """Error text as the ledger can store it. It is evidence, so nothing is dropped silently:
    characters no database text column accepts (NUL, lone surrogates, which a handler's error
    can contain) are written as visible escapes such as ``\\x00``, and a runaway traceback
    keeps its head and says how much was left out."""
    if _UNSTORABLE.search(message) is not None:
        message = _UNSTORABLE.sub(
            lambda m: (
                f"\\x{ord(m.group()):02x}" if m.group() == "\x00" else f"\\u{ord(m.group()):04x}"
            ),
            message,
        )
    if len(message) <= MAX_MESSAGE:
        return message
    return f"{message[:MAX_MESSAGE]}... [{len(message) - MAX_MESSAGE} more characters not stored]"


def audit_events(level: AuditLevel, events: list[EventRecord]) -> tuple[EventRecord, ...]:
    """Keep the events a definition's audit level writes."""
    return tuple(e for e in events if audited(level, e.code, e.outcome))


def _alert(policy: JobPolicy, reason: Reason, error: str, final: bool) -> AlertCause | None:
    """What a failure tells the alerting incidents, if the definition's profile reports it."""
    return AlertCause(reason, error, final) if policy.alerts.reports(final) else None


def _plan(
    job: Claimed, worker_id: int, expect: JobStatus, status: JobStatus, **rest: Any
) -> Transition:
    """A worker write: guarded by this worker's lease on the claimed epoch."""
    return Transition(
        job_id=job.job_id,
        job_ref=job.job_ref,
        namespace_id=job.namespace_id,
        epoch=job.epoch,
        expect=(expect,),
        status=status,
        owner=worker_id,
        worker_id=worker_id,
        lane_id=job.lane_id,
        parent_id=job.parent_id,
        **rest,
    )


def succeeded(
    job: Claimed,
    execution: int,
    worker_id: int,
    policy: JobPolicy,
    duration_ms: int,
    result: tuple[int, bytes] | None,
) -> Transition:
    events = [
        EventRecord(
            EventCode.EXECUTION_FINISHED, execution, Outcome.SUCCEEDED, duration_ms=duration_ms
        ),
        EventRecord(EventCode.SUCCEEDED, execution),
    ]
    return _plan(
        job,
        worker_id,
        JobStatus.EXECUTING,
        JobStatus.SUCCEEDED,
        events=audit_events(policy.audit, events),
        result=result,
    )


def cancelled(
    job: Claimed,
    execution: int | None,
    worker_id: int,
    policy: JobPolicy,
    duration_ms: int | None,
    message: str = "cancelled while running",
    reason: Reason = Reason.OPERATOR,
) -> Transition:
    expect = JobStatus.DISPATCHED if execution is None else JobStatus.EXECUTING
    events = []
    if execution is not None:
        events.append(
            EventRecord(
                EventCode.EXECUTION_FINISHED,
                execution,
                Outcome.CANCELLED,
                reason,
                duration_ms=duration_ms,
            )
        )
    events.append(EventRecord(EventCode.CANCELLED, execution, reason=reason, message=message))
    return _plan(
        job,
        worker_id,
        expect,
        JobStatus.CANCELLED,
        events=audit_events(policy.audit, events),
    )


def failed(
    job: Claimed,
    execution: int,
    worker_id: int,
    policy: JobPolicy,
    *,
    outcome: Outcome,
    reason: Reason,
    message: str,
    duration_ms: int,
    rng: random.Random,
    final: bool = False,
) -> Transition:
    """A failed run: retry after the backoff, or fail for good on the last attempt."""
    attempt = job.attempts + 1
    text = clip(message)
    finished = EventRecord(
        EventCode.EXECUTION_FINISHED, execution, outcome, reason, text, duration_ms=duration_ms
    )
    if final or attempt >= policy.max_attempts:
        why = reason if final else Reason.ATTEMPTS_EXHAUSTED
        summary = text if final else f"attempt {attempt} of {policy.max_attempts} failed: {text}"
        events = [
            finished,
            EventRecord(EventCode.FAILED, execution, reason=why, message=clip(summary)),
        ]
        return _plan(
            job,
            worker_id,
            JobStatus.EXECUTING,
            JobStatus.FAILED,
            charge=1,
            events=audit_events(policy.audit, events),
            alert=_alert(policy, why, text, True),
        )
    delay = policy.backoff.delay(attempt, rng)
    delay_ms = max(0, delay // _MS)
    retry = EventRecord(
        EventCode.RETRY_SCHEDULED,
        execution,
        reason=reason,
        message=f"attempt {attempt} of {policy.max_attempts} failed; retrying in {delay_ms} ms",
    )
    return _plan(
        job,
        worker_id,
        JobStatus.EXECUTING,
        JobStatus.READY,
        delay_ms=delay_ms,
        charge=1,
        events=audit_events(policy.audit, [finished, retry]),
        on_cancel=cancelled(job, execution, worker_id, policy, duration_ms),
        alert=_alert(policy, reason, text, False),
    )


def expired(job: Claimed, worker_id: int, policy: JobPolicy, message: str) -> Transition:
    """A job claimed after its strict deadline, failed before its run started: no handler ran,
    so no execution is recorded and no attempt is spent; the failed event says why."""
    text = clip(message)
    events = [EventRecord(EventCode.FAILED, None, reason=Reason.DEADLINE, message=text)]
    return _plan(
        job,
        worker_id,
        JobStatus.DISPATCHED,
        JobStatus.FAILED,
        events=audit_events(policy.audit, events),
        alert=_alert(policy, Reason.DEADLINE, text, True),
    )


def handed_back(
    job: Claimed,
    execution: int | None,
    worker_id: int,
    policy: JobPolicy | None,
    reason: Reason,
    message: str,
    duration_ms: int | None = None,
) -> Transition:
    """Return a claimed job untouched (no attempt spent): shutdown or no handler here."""
    expect = JobStatus.DISPATCHED if execution is None else JobStatus.EXECUTING
    events = []
    if execution is not None:
        events.append(
            EventRecord(
                EventCode.EXECUTION_FINISHED,
                execution,
                Outcome.INTERRUPTED,
                reason,
                message,
                duration_ms=duration_ms,
            )
        )
    events.append(EventRecord(EventCode.HANDED_BACK, execution, reason=reason, message=message))
    kept = tuple(events) if policy is None else audit_events(policy.audit, events)
    return _plan(
        job,
        worker_id,
        expect,
        JobStatus.READY,
        events=kept,
        on_cancel=None
        if policy is None
        else cancelled(job, execution, worker_id, policy, duration_ms),
    )


def rearmed(
    job: Claimed,
    execution: int,
    worker_id: int,
    policy: JobPolicy,
    every: timedelta,
    duration_ms: int,
    error: str | None = None,
) -> Transition:
    """A recurring run ended: schedule the next one, whatever this one did."""
    events = [
        EventRecord(
            EventCode.EXECUTION_FINISHED,
            execution,
            Outcome.FAILED if error else Outcome.REARMED,
            Reason.HANDLER_ERROR if error else None,
            None if error is None else clip(error),
            duration_ms=duration_ms,
        ),
        EventRecord(EventCode.REARMED, execution),
    ]
    return _plan(
        job,
        worker_id,
        JobStatus.EXECUTING,
        JobStatus.READY,
        delay_ms=max(1, every // _MS),
        events=audit_events(policy.audit, events),
    )


def suspended(
    job: Claimed,
    execution: int,
    worker_id: int,
    policy: JobPolicy,
    *,
    wait: WaitRef,
    until: datetime,
    what: str,
    duration_ms: int,
) -> Transition:
    """The handler parked the job on a durable wait: no attempt spent, no lease kept; the
    claim brings it back at ``until`` (its timer) unless a signal or its children do first."""
    events = [
        EventRecord(
            EventCode.EXECUTION_FINISHED, execution, Outcome.SUSPENDED, duration_ms=duration_ms
        ),
        EventRecord(EventCode.SUSPENDED, execution, message=what),
    ]
    return _plan(
        job,
        worker_id,
        JobStatus.EXECUTING,
        JobStatus.SUSPENDED,
        run_at=until,
        wait=wait,
        events=audit_events(policy.audit, events),
        on_cancel=cancelled(job, execution, worker_id, policy, duration_ms),
    )


def directed(
    job: Claimed,
    execution: int,
    worker_id: int,
    policy: JobPolicy,
    *,
    status: JobStatus,
    outcome: Outcome,
    reason: Reason,
    message: str,
    duration_ms: int,
    run_at: datetime | None = None,
    delay_ms: int | None = None,
) -> Transition:
    """The handler ended its run deliberately (reschedule, fail, cancel, pause), or acta ended
    it for the job (a strict deadline, a wait that timed out). Only a failure spends the
    attempt (it ran and failed); rescheduling, pausing and cancelling spend none."""
    code = {
        JobStatus.READY: EventCode.RESCHEDULED,
        JobStatus.FAILED: EventCode.FAILED,
        JobStatus.CANCELLED: EventCode.CANCELLED,
        JobStatus.PAUSED: EventCode.PAUSED,
    }[status]
    text = clip(message)
    events = [
        EventRecord(
            EventCode.EXECUTION_FINISHED, execution, outcome, reason, text, duration_ms=duration_ms
        ),
        EventRecord(code, execution, reason=reason, message=text),
    ]
    return _plan(
        job,
        worker_id,
        JobStatus.EXECUTING,
        status,
        run_at=run_at,
        delay_ms=delay_ms,
        charge=1 if status is JobStatus.FAILED else 0,
        events=audit_events(policy.audit, events),
        on_cancel=None
        if status.terminal
        else cancelled(job, execution, worker_id, policy, duration_ms),
        alert=_alert(policy, reason, text, True) if status is JobStatus.FAILED else None,
    )


_ENDINGS = frozenset({EventCode.SUCCEEDED, EventCode.FAILED, EventCode.CANCELLED})


def rearmed_slot(plan: Transition) -> Transition:
    """A recurring slot's run ended the way ``plan`` says a job ends: the slot itself does
    not end. It goes back to ready (its next wake is set with the firing's close) and its
    ending event becomes ``rearmed``; the run's execution-finished event keeps its outcome."""
    events = tuple(
        EventRecord(EventCode.REARMED, e.execution) if e.code in _ENDINGS else e
        for e in plan.events
    )
    return replace(
        plan, status=JobStatus.READY, events=events, on_cancel=None, delay_ms=None, run_at=None
    )


def slot_idle(
    job: Claimed,
    execution: int,
    worker_id: int,
    policy: JobPolicy,
    wake: datetime,
    duration_ms: int,
) -> Transition:
    """A recurring slot woke with nothing due (early, or its schedules changed): back to
    ready until ``wake``, no attempt spent, the handler not run."""
    events = [
        EventRecord(
            EventCode.EXECUTION_FINISHED,
            execution,
            Outcome.REARMED,
            message="no schedule due",
            duration_ms=duration_ms,
        ),
        EventRecord(EventCode.REARMED, execution),
    ]
    return _plan(
        job,
        worker_id,
        JobStatus.EXECUTING,
        JobStatus.READY,
        run_at=wake,
        slot=True,
        events=audit_events(policy.audit, events),
        on_cancel=cancelled(job, execution, worker_id, policy, duration_ms),
    )
