"""Per-enqueue options: delay and not_before, deduplication, priority, tags, correlation key."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any

import pytest

from acta import (
    Acta,
    InvalidPolicyError,
    JobContext,
    JobNotFoundError,
    JobStatus,
    ManualClock,
    ValidationError,
)
from acta.provider.protocol import Provider
from acta_testing import Host

if TYPE_CHECKING:
    from conformance.conftest import Ledger

MS = timedelta(milliseconds=1)


def _noop(app: Acta, name: str = "ping") -> Any:
    @app.job(name)
    def ping() -> None:
        pass

    return ping


# -- delay and not_before ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("delay", "wait"),
    [
        ("5m", timedelta(minutes=5)),
        ("1h30m", timedelta(hours=1, minutes=30)),
        (timedelta(seconds=90), timedelta(seconds=90)),
        (1.25, timedelta(seconds=1, milliseconds=250)),
        ("250ms", timedelta(milliseconds=250)),
    ],
)
def test_delay_makes_the_job_due_exactly_then(
    acta_app: Acta, acta_host: Host, delay: Any, wait: timedelta
) -> None:
    ping = _noop(acta_app)
    start = acta_host.clock.now()
    ref = ping.enqueue(delay=delay)
    info = acta_app.get(ref)
    assert info.status is JobStatus.READY
    assert info.next_run_at == start + wait
    assert info.created_at == start

    assert acta_host.tick() == "nothing-claimed"
    acta_host.advance(wait - MS)
    assert acta_host.tick() == "nothing-claimed"  # one millisecond early: still waiting
    acta_host.advance(MS)
    assert acta_host.tick() == "completed"
    assert acta_host.job(ref).status is JobStatus.SUCCEEDED


def test_not_before_is_the_instant_given_in_any_timezone(acta_app: Acta, acta_host: Host) -> None:
    ping = _noop(acta_app)
    start = acta_host.clock.now()
    berlin_winter = timezone(timedelta(hours=1))
    when = (start + timedelta(hours=2)).astimezone(berlin_winter)
    assert when.hour == 3  # the same instant, written in another zone

    ref = ping.enqueue(not_before=when)
    due = acta_app.get(ref).next_run_at
    assert due == when and due.utcoffset() == timedelta(0)

    acta_host.advance(timedelta(hours=2) - MS)
    assert acta_host.tick() == "nothing-claimed"
    acta_host.advance(MS)
    assert acta_host.tick() == "completed"


def test_not_before_is_never_rounded_earlier(acta_app: Acta, acta_host: Host) -> None:
    """The ledger keeps milliseconds; an instant between two of them must round up."""
    ping = _noop(acta_app)
    start = acta_host.clock.now()
    when = start + timedelta(seconds=10, microseconds=400)
    ref = ping.enqueue(not_before=when)
    assert acta_app.get(ref).next_run_at == start + timedelta(seconds=10, milliseconds=1)

    acta_host.advance("10s")
    assert acta_host.clock.now() < when
    assert acta_host.tick() == "nothing-claimed"
    acta_host.advance("1ms")
    assert acta_host.tick() == "completed"


def test_delay_below_a_millisecond_rounds_up(acta_app: Acta, acta_host: Host) -> None:
    ping = _noop(acta_app)
    start = acta_host.clock.now()
    ref = ping.enqueue(delay=timedelta(seconds=2, microseconds=1))
    assert acta_app.get(ref).next_run_at == start + timedelta(seconds=2, milliseconds=1)


def test_not_before_in_the_past_runs_at_once(acta_app: Acta, acta_host: Host) -> None:
    ping = _noop(acta_app)
    earlier = acta_host.clock.now() - timedelta(days=1)
    ref = ping.enqueue(not_before=earlier)
    assert acta_app.get(ref).next_run_at == earlier
    assert acta_host.tick() == "completed"


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"delay": "5m", "not_before": datetime(2026, 1, 2, tzinfo=UTC)}, "delay"),
        ({"delay": timedelta(0), "not_before": datetime(2026, 1, 2, tzinfo=UTC)}, "delay"),
        ({"not_before": datetime(2026, 1, 2)}, "not_before"),  # noqa: DTZ001 - naive on purpose
        ({"not_before": "2026-01-02T00:00:00Z"}, "not_before"),
        ({"not_before": 1767312000}, "not_before"),
        ({"delay": "-5s"}, "delay"),
        ({"delay": "5 minutes"}, "delay"),
        ({"delay": float("nan")}, "delay"),
        ({"delay": True}, "delay"),
        ({"delay": timedelta(days=366)}, "delay"),
        ({"not_before": datetime.max.replace(tzinfo=UTC)}, "not_before"),
    ],
)
def test_bad_schedules_are_refused(
    acta_app: Acta, acta_host: Host, ledger: Ledger, options: dict[str, Any], field: str
) -> None:
    ping = _noop(acta_app)
    with pytest.raises(ValidationError) as caught:
        ping.enqueue(**options)
    assert caught.value.field == field
    with pytest.raises(ValidationError):
        ping.request(**options)
    assert ledger.user_jobs() == 0


# -- deduplication -------------------------------------------------------------------------


def test_same_dedup_key_returns_the_existing_job(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    @acta_app.job("bill-invoice")
    def bill(amount: int) -> int:
        return amount

    first = bill.enqueue(100, dedup_key="invoice-42")
    again = bill.enqueue(999, dedup_key="invoice-42")
    assert again == first
    assert ledger.user_jobs() == 1
    info = acta_app.get(first)
    assert info.dedup_key == "invoice-42" and info.input == b"100"  # the first one wins
    assert acta_host.event_names(first) == ["enqueued"]  # the duplicate wrote nothing

    other = bill.enqueue(7, dedup_key="invoice-43")
    assert other != first
    # In a batch, a key an earlier job holds returns that job too, beside a new one.
    in_batch = acta_app.enqueue_batch(
        [bill.request(1, dedup_key="invoice-44"), bill.request(2, dedup_key="invoice-42")]
    )
    assert in_batch[1] == first and in_batch[0] not in (first, other)
    assert ledger.user_jobs() == 3

    assert acta_host.run_until_idle() == 3
    assert acta_app.result(first) == 100
    # A finished job still owns its key: enqueueing it again does not run it twice.
    assert bill.enqueue(5, dedup_key="invoice-42") == first
    assert ledger.user_jobs() == 3
    assert acta_host.tick() == "nothing-claimed"


def test_dedup_keys_do_not_cross_namespaces(
    acta_app: Acta,
    acta_host: Host,
    acta_provider: Provider,
    acta_clock: ManualClock,
    ledger: Ledger,
) -> None:
    @acta_app.job("sync-account")
    def sync_a(account: str) -> str:
        return f"default:{account}"

    tenant = Acta(namespace="tenant-b")

    @tenant.job("sync-account")
    def sync_b(account: str) -> str:
        return f"tenant-b:{account}"

    tenant_host = Host(tenant, acta_provider, acta_clock)
    try:
        mine = acta_app.enqueue("sync-account", "acme", dedup_key="nightly")
        theirs = tenant.enqueue("sync-account", "acme", dedup_key="nightly")
        assert mine != theirs
        assert tenant.enqueue("sync-account", "other", dedup_key="nightly") == theirs
        assert acta_app.enqueue("sync-account", "other", dedup_key="nightly") == mine
        assert ledger.user_jobs() == 2
        assert ledger.count("namespaces") == 2

        assert acta_app.get(mine).namespace == "default"
        assert tenant.get(theirs).namespace == "tenant-b"
        assert [j.job_ref for j in acta_app.jobs()] == [str(mine)]
        assert [j.job_ref for j in tenant.jobs()] == [str(theirs)]

        # Each namespace's workers claim only their own jobs.
        assert acta_host.run_until_idle() == 1
        assert tenant.get(theirs).status is JobStatus.READY
        assert tenant_host.run_until_idle() == 1
        assert acta_app.result(mine) == "default:acme"
        assert tenant.result(theirs) == "tenant-b:acme"
    finally:
        tenant_host.close()


def test_refs_of_another_namespace_are_not_found(
    acta_app: Acta, acta_host: Host, acta_provider: Provider, acta_clock: ManualClock
) -> None:
    _noop(acta_app)
    tenant = Acta(namespace="tenant-b")
    _noop(tenant)
    with tenant.bound(acta_provider, acta_clock):
        theirs = tenant.enqueue("ping")
    with pytest.raises(JobNotFoundError):
        acta_app.get(theirs)
    with pytest.raises(JobNotFoundError):
        acta_app.cancel(theirs)
    with tenant.bound(acta_provider, acta_clock):
        assert tenant.get(theirs).namespace == "tenant-b"  # its own namespace still finds it


# -- priority ------------------------------------------------------------------------------


def test_claim_order_is_priority_then_due_time_then_id(acta_app: Acta, acta_host: Host) -> None:
    ran: list[str] = []

    @acta_app.job("step", priority=3)
    def step(label: str) -> None:
        ran.append(label)

    refs = {
        "late": step.enqueue("late", delay="2s"),
        "a": step.enqueue("a"),
        "low": step.enqueue("low", priority=-100),
        "early": step.enqueue("early", delay="1s"),
        "b": step.enqueue("b"),
        "high": step.enqueue("high", priority=100),
        "zero": step.enqueue("zero", priority=0),
    }
    priorities = {label: acta_app.get(ref).priority for label, ref in refs.items()}
    assert priorities == {
        "late": 3,
        "a": 3,
        "low": -100,
        "early": 3,
        "b": 3,
        "high": 100,
        "zero": 0,
    }
    acta_host.advance("2s")
    assert acta_host.run_until_idle() == 7
    assert ran == ["high", "a", "b", "early", "late", "zero", "low"]


@pytest.mark.parametrize("priority", [101, -101, 1000, True, "5", 2.5])
def test_out_of_range_priority_is_refused(
    acta_app: Acta, acta_host: Host, ledger: Ledger, priority: Any
) -> None:
    ping = _noop(acta_app)
    with pytest.raises(InvalidPolicyError) as caught:
        ping.enqueue(priority=priority)
    assert caught.value.field == "priority"
    with pytest.raises(InvalidPolicyError):
        acta_app.job("other", priority=priority)
    assert "other" not in acta_app.definitions
    assert ledger.user_jobs() == 0


def test_priority_bounds_are_accepted(acta_app: Acta, acta_host: Host) -> None:
    ping = _noop(acta_app)
    assert acta_app.get(ping.enqueue(priority=100)).priority == 100
    assert acta_app.get(ping.enqueue(priority=-100)).priority == -100


# -- tags and correlation ------------------------------------------------------------------


def test_tags_and_correlation_key_are_stored_and_readable(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    seen: list[str | None] = []

    @acta_app.job("ship-order")
    def ship(ctx: JobContext) -> None:
        seen.append(ctx.correlation_key)

    tagged = ship.enqueue(
        tags=["zeta", "alpha", "mid", "alpha"], correlation_key="order-7 ✓", dedup_key="ship-7"
    )
    plain = ship.enqueue()
    info = acta_app.get(tagged)
    assert info.tags == ("alpha", "mid", "zeta")
    assert info.correlation_key == "order-7 ✓"
    assert info.dedup_key == "ship-7"
    assert acta_app.get(plain).tags == ()
    assert acta_app.get(plain).correlation_key is None
    assert ledger.count("job_tags") == 3  # the repeated tag is stored once

    rows = dict(
        (ref, (tags, corr, dedup))
        for ref, tags, corr, dedup in ledger.rows(
            "SELECT job_ref, tags, correlation_key, dedup_key FROM {schema}.jobs_view"
        )
    )
    tags, corr, dedup = rows[str(tagged)]
    assert json.loads(tags) == ["alpha", "mid", "zeta"]
    assert (corr, dedup) == ("order-7 ✓", "ship-7")
    assert rows[str(plain)] == (None, None, None)
    assert [j.tags for j in acta_app.jobs()] == [(), ("alpha", "mid", "zeta")]

    assert acta_host.run_until_idle() == 2
    assert seen == ["order-7 ✓", None]  # same priority and due time: enqueue order
