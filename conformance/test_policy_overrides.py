"""Live policy overrides (issue 12, item 4): an operator overrides a definition's attempts,
backoff, timeout, audit level, retention, alert profile or priority on a running system, by
compare-and-set on a version; workers pick it up at their next heartbeat, recovery and
retention read it in SQL; effective_policy_view shows the policy in force.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from acta import (
    Acta,
    ConflictError,
    InvalidPolicyError,
    JobPurgedError,
    UnknownJobError,
    ValidationError,
)
from acta_testing import Host

if TYPE_CHECKING:
    from conformance.conftest import Ledger


def view(ledger: Ledger, job: str) -> tuple[object, ...]:
    row = ledger.rows(
        "SELECT max_attempts, backoff, timeout_ms, audit, retention_ms, alerts, version "
        "FROM {schema}.effective_policy_view WHERE job_name = :job",
        {"job": job},
    )
    return tuple(row[0])


def test_an_attempts_override_reaches_workers_at_their_next_heartbeat(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    @acta_app.job("flaky", max_attempts=5, backoff="1s")
    def flaky() -> None:
        raise RuntimeError("always")

    acta_host.advance(0)
    assert view(ledger, "flaky")[0] == 5
    first = acta_app.ops.policy.set(
        "flaky", max_attempts=2, expected_version=0, reason="stop hammering the API", actor="ann"
    )
    assert (first.version, first.overrides, first.effective and first.effective.max_attempts) == (
        1,
        {"max_attempts": 2},
        2,
    )
    assert view(ledger, "flaky")[0] == 2
    ref = flaky.enqueue()
    acta_host.advance(acta_host.worker.heartbeat)  # the worker hears of it at its heartbeat
    assert acta_host.tick() == "rearmed"
    acta_host.advance("1s")
    assert acta_host.tick() == "failed"  # attempt 2 of 2, not of 5
    assert acta_app.get(ref).attempts == 2
    message = ledger.value(
        "SELECT message FROM {schema}.events_view WHERE event = 'policy-overridden'"
    )
    assert message == "flaky: max_attempts=2 by ann: stop hammering the API"


def test_timeout_and_audit_overrides_apply_to_the_next_runs(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    @acta_app.job("report")
    def report() -> str:
        return "done"

    acta_host.advance(0)
    acta_app.ops.policy.set("report", timeout="30s", audit="off", expected_version=0)
    acta_host.advance(acta_host.worker.heartbeat)
    ref = report.enqueue()
    assert acta_host.tick() == "completed"
    # Audit off: the run writes no execution or success events of its own.
    names = [e.code.label for e in acta_app.events(ref)]
    assert "execution-finished" not in names and "succeeded" not in names
    assert view(ledger, "report")[2:4] == (30000, "off")


def test_clearing_brings_the_declaration_back_and_versions_are_checked(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    @acta_app.job("sync", max_attempts=7, backoff="2s")
    def sync() -> None: ...

    acta_host.advance(0)
    policy = acta_app.ops.policy
    policy.set("sync", max_attempts=3, backoff="5s..1m x2", retention=None, expected_version=0)
    with pytest.raises(ConflictError, match="version 1, not 0"):
        policy.set("sync", max_attempts=4, expected_version=0)
    assert view(ledger, "sync")[0:2] == (3, "5s..1m x2")
    assert view(ledger, "sync")[4] is None  # kept forever
    after = policy.clear("sync", "max_attempts", expected_version=1)
    assert after.overrides == {"backoff": "5s..1m x2", "retention_ms": None}
    assert after.effective is not None and after.effective.max_attempts == 7
    everything = policy.clear("sync", expected_version=2)
    assert everything.overrides == {} and everything.version == 3
    assert view(ledger, "sync")[0:2] == (7, "2s")
    assert view(ledger, "sync")[6] == 3


def test_a_priority_override_moves_the_backlog_and_every_later_enqueue(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    ran: list[str] = []

    @acta_app.job("bulk-export", priority=0)
    def bulk_export(name: str) -> None:
        ran.append(name)

    @acta_app.job("invoice", priority=10)
    def invoice(name: str) -> None:
        ran.append(name)

    acta_host.advance(0)
    waiting = [bulk_export.enqueue("export-1"), bulk_export.enqueue("export-2", priority=-5)]
    invoice.enqueue("invoice-1")
    # An incident: exports must go first now, the waiting ones and those still to come.
    policy = acta_app.ops.policy.set(
        "bulk-export", priority=50, expected_version=0, reason="customer export due", actor="kim"
    )
    assert policy.effective is not None and policy.effective.priority == 50
    assert [acta_app.get(ref).priority for ref in waiting] == [50, 50]
    bulk_export.enqueue("export-3", priority=1)  # the override beats the priority asked for
    acta_host.run_until_idle()
    assert ran == ["export-1", "export-2", "export-3", "invoice-1"]
    assert (
        ledger.value(
            "SELECT priority FROM {schema}.effective_policy_view WHERE job_name = 'bulk-export'"
        )
        == 50
    )
    [(message, actor)] = ledger.rows(
        "SELECT message, actor FROM {schema}.events_view WHERE event = 'policy-overridden'"
    )
    assert (
        message == "bulk-export: priority=50 (2 waiting jobs re-prioritised) by kim: "
        "customer export due"
    )
    assert actor == "kim"
    # Cleared: new jobs take their declared (or asked-for) priority again; nothing else moves.
    acta_app.ops.policy.clear("bulk-export", expected_version=1)
    assert acta_app.get(bulk_export.enqueue("export-4", priority=3)).priority == 3
    assert (
        ledger.value(
            "SELECT priority FROM {schema}.effective_policy_view WHERE job_name = 'bulk-export'"
        )
        == 0
    )


def test_bad_overrides_are_refused_and_change_nothing(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    @acta_app.job("sync")
    def sync() -> None: ...

    acta_host.advance(0)
    policy = acta_app.ops.policy
    with pytest.raises(InvalidPolicyError, match="max_attempts"):
        policy.set("sync", max_attempts=0, expected_version=0)
    with pytest.raises(InvalidPolicyError, match="backoff"):
        policy.set("sync", backoff="sometimes", expected_version=0)
    with pytest.raises(InvalidPolicyError, match="retention"):
        policy.set("sync", retention="5s", expected_version=0)
    with pytest.raises(InvalidPolicyError, match="priority"):
        policy.set("sync", priority=500, expected_version=0)
    with pytest.raises(InvalidPolicyError, match="fields"):
        policy.set("sync", expected_version=0)
    with pytest.raises(ValidationError, match="expected_version"):
        policy.set("sync", max_attempts=2, expected_version=-1)
    with pytest.raises(ValidationError, match="colour"):
        policy.clear("sync", "colour", expected_version=0)
    with pytest.raises(UnknownJobError, match="no job 'ghost'"):
        policy.set("ghost", max_attempts=2, expected_version=0)
    assert ledger.value("SELECT count(*) FROM {schema}.policy_overrides") == 0
    assert (
        ledger.value("SELECT count(*) FROM {schema}.events_view WHERE event = 'policy-overridden'")
        == 0
    )


def test_a_retention_override_is_what_sys_retention_purges_by(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    @acta_app.job("report")
    def report() -> int:
        return 1

    @acta_app.job("invoice")
    def invoice() -> int:
        return 2

    short, kept = report.enqueue(), invoice.enqueue()
    assert acta_host.run_until_idle() == 2
    invoice.enqueue()  # a younger row: SQLite keeps the newest job row (its id would be reused)
    acta_app.ops.policy.set("report", retention="1m", expected_version=0)
    acta_host.advance("2h")  # past every retention cadence; invoice keeps its 7 days
    acta_host.tick()  # system jobs run first: sys.retention purges by the override
    with pytest.raises(JobPurgedError):
        acta_app.get(short)
    assert acta_app.get(kept).name == "invoice"
