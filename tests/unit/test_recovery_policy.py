"""What recovery decides for one lapsed lease: pure policy, no database."""

from __future__ import annotations

from acta.model.codes import AuditLevel, EventCode, JobStatus
from acta.model.rows import LapsedLease
from acta.policy.recovery import recovery_transition


def _lapsed(name: str, attempts: int, status: JobStatus = JobStatus.EXECUTING) -> LapsedLease:
    return LapsedLease(
        job_id=7,
        job_ref="job_01m8vqchq5ewfvd6t5cdhrxrry",
        namespace_id=1,
        status=status,
        executions=attempts + 1,
        attempts=attempts,
        epoch=3,
        owner=11,
        max_attempts=1000 if name.startswith("sys.") else 3,
        audit_level=AuditLevel.FULL,
        name=name,
    )


def test_a_lost_run_of_a_user_job_spends_an_attempt_and_the_last_one_fails_it() -> None:
    plan = recovery_transition(_lapsed("send-email", attempts=0))
    assert (plan.status, plan.charge) == (JobStatus.READY, 1)
    last = recovery_transition(_lapsed("send-email", attempts=2))
    assert (last.status, last.charge) == (JobStatus.FAILED, 1)
    assert [e.code for e in last.events] == [EventCode.LEASE_LOST, EventCode.FAILED]


def test_a_lost_run_of_a_system_job_never_spends_an_attempt_nor_fails_it() -> None:
    plan = recovery_transition(_lapsed("sys.recovery", attempts=999))
    assert (plan.status, plan.charge) == (JobStatus.READY, 0)
    assert [e.code for e in plan.events] == [EventCode.LEASE_LOST]


def test_a_job_that_was_only_claimed_goes_back_without_spending_an_attempt() -> None:
    plan = recovery_transition(_lapsed("send-email", attempts=2, status=JobStatus.DISPATCHED))
    assert (plan.status, plan.charge) == (JobStatus.READY, 0)
    [lost] = plan.events
    assert lost.code is EventCode.LEASE_LOST and lost.execution is None
