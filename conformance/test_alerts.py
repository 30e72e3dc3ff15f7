"""Failure alerts: a terminal failure opens (or joins) one incident per definition and reason
class, in the settle's transaction; sys.alerts notifies the routed channels of open incidents,
reminds on the reminder interval, and resolves an incident once its definition succeeds again.
Operators acknowledge (no more reminders) and resolve. Walked on the test host's clock.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from acta import Acta, ConflictError, SyncJobContext, ValidationError
from acta.alerting import Notice
from acta.alerts import AlertNotFoundError
from acta_testing import AsyncHost, Host

if TYPE_CHECKING:
    from conformance.conftest import Ledger


def incidents(ledger: Ledger) -> list[tuple[Any, ...]]:
    """Every alert as operators read it, oldest first."""
    return [
        tuple(row)
        for row in ledger.rows(
            "SELECT job_name, kind, severity, reason_class, occurrences, resolved_by "
            "FROM {schema}.alerts_view ORDER BY alert_id"
        )
    ]


class Outage:
    """A feed that is down until told otherwise."""

    def __init__(self) -> None:
        self.down = True

    def check(self) -> None:
        if self.down:
            raise RuntimeError("price feed unreachable")


def test_an_outage_of_100_failures_is_one_incident_reminded_then_resolved(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    notices: list[Notice] = []
    acta_app.alerting.callable("pager", notices.append)
    feed = Outage()

    @acta_app.job("sync-prices", max_attempts=1)
    def sync_prices(n: int) -> None:
        feed.check()

    refs = [sync_prices.enqueue(n) for n in range(100)]
    assert acta_host.run_until_idle() == 100
    assert all(acta_host.job(ref).status.label == "failed" for ref in refs)
    assert incidents(ledger) == [
        ("sync-prices", "failure", "critical", "attempts-exhausted", 100, None)
    ]
    # One incident, so one notice: the next sys.alerts round sends it.
    acta_host.advance("1m")
    acta_host.tick()
    assert [(n.state, n.occurrences, n.job_ref) for n in notices] == [("open", 100, str(refs[-1]))]
    assert "price feed unreachable" in (notices[0].detail or "")

    # Nothing more until the reminder interval (a day by default) has passed.
    acta_host.advance("12h")
    acta_host.tick()
    assert len(notices) == 1
    acta_host.advance("12h")
    acta_host.tick()
    assert [n.state for n in notices] == ["open", "reminder"]

    # The feed comes back: the next success resolves the incident at the next round.
    feed.down = False
    acta_host.advance("1s")
    ok = sync_prices.enqueue(101)
    acta_host.run_until_idle()
    assert acta_host.job(ok).status.label == "succeeded"
    acta_host.advance("1m")
    acta_host.tick()
    assert [n.state for n in notices] == ["open", "reminder", "resolved"]
    assert incidents(ledger) == [
        ("sync-prices", "failure", "critical", "attempts-exhausted", 100, "sys.alerts")
    ]
    # Resolved stays resolved: a day later nobody is reminded.
    acta_host.advance("2d")
    acta_host.tick()
    assert len(notices) == 3
    # A new failure after the resolution opens a new incident.
    feed.down = True
    sync_prices.enqueue(102)
    acta_host.run_until_idle()
    assert [row[4] for row in incidents(ledger)] == [100, 1]


@pytest.mark.parametrize(
    ("profile", "expected"),
    [
        ("terminal", [("critical", "attempts-exhausted", 1)]),
        ("all", [("warning", "handler-error", 2), ("critical", "attempts-exhausted", 1)]),
        ("off", []),
    ],
)
def test_the_alert_profile_says_which_failures_count(
    acta_app: Acta, acta_host: Host, ledger: Ledger, profile: str, expected: list[Any]
) -> None:
    @acta_app.job("flaky", max_attempts=3, backoff="1s", alerts=profile)
    def flaky(ctx: SyncJobContext) -> None:
        raise ValueError(f"attempt {ctx.attempt} broke")

    ref = flaky.enqueue()
    acta_host.run_until_idle()
    assert acta_host.job(ref).status.label == "failed"
    rows = ledger.rows(
        "SELECT severity, reason_class, occurrences FROM {schema}.alerts_view ORDER BY alert_id"
    )
    assert [tuple(r) for r in rows] == expected
    # The job's own timeline is the same whatever the profile: incidents have their own events.
    assert "alert-opened" not in acta_host.event_names(ref)


def test_operators_acknowledge_and_resolve(acta_app: Acta, acta_host: Host) -> None:
    notices: list[Notice] = []
    acta_app.alerting.callable("pager", notices.append)

    @acta_app.job("nightly-report", max_attempts=1)
    def report() -> None:
        raise RuntimeError("disk full")

    report.enqueue()
    acta_host.run_until_idle()
    acta_host.advance("1m")
    acta_host.tick()
    [alert] = acta_app.alerts.list()
    assert (alert.job_name, alert.occurrences, alert.acknowledged_at) == ("nightly-report", 1, None)

    acked = acta_app.alerts.acknowledge(alert.alert_id, by="ana", reason="looking at the disk")
    assert acked.acknowledged_by == "ana" and acked.open
    with pytest.raises(ConflictError, match="already acknowledged by ana"):
        acta_app.alerts.acknowledge(alert.alert_id, by="bob")
    acta_host.advance("2d")  # acknowledged: no reminder
    acta_host.tick()
    assert [n.state for n in notices] == ["open"]

    done = acta_app.alerts.resolve(alert.alert_id, by="ana", reason="disk cleaned")
    assert done.resolved_by == "ana" and not done.open
    assert acta_app.alerts.list() == []
    assert [a.alert_id for a in acta_app.alerts.list(include_resolved=True)] == [alert.alert_id]
    with pytest.raises(ConflictError, match="already resolved by ana"):
        acta_app.alerts.resolve(alert.alert_id, by="bob")
    with pytest.raises(AlertNotFoundError):
        acta_app.alerts.get(alert.alert_id + 1000)


def test_a_manual_alert_is_notified_too(acta_app: Acta, acta_host: Host, ledger: Ledger) -> None:
    notices: list[Notice] = []
    acta_app.alerting.callable("pager", notices.append)

    @acta_app.job("reconcile")
    def reconcile(ctx: SyncJobContext) -> None:
        ctx.alert("ledger mismatch", "3 rows differ", severity="warning")

    ref = reconcile.enqueue()
    assert acta_host.tick() == "completed"
    acta_host.advance("1m")
    acta_host.tick()
    assert [(n.kind, n.severity, n.title, n.job_ref) for n in notices] == [
        ("manual", "warning", "ledger mismatch", str(ref))
    ]
    assert incidents(ledger) == [("reconcile", "manual", "warning", None, 1, None)]


async def test_the_async_verbs_and_an_async_channel(
    acta_app: Acta, acta_async_host: AsyncHost
) -> None:
    got: list[Notice] = []

    async def chat(notice: Notice) -> None:
        got.append(notice)

    acta_app.alerting.callable("chat", chat)

    @acta_app.job("warm-cache", timeout="1s", max_attempts=1)
    async def warm_cache() -> None:
        raise TimeoutError("cache node slow")

    await warm_cache.enqueue_async()
    await acta_async_host.run_until_idle()
    await acta_async_host.advance("1m")
    await acta_async_host.tick()
    [alert] = await acta_app.alerts.list_async()
    assert [(n.alert_id, n.state) for n in got] == [(alert.alert_id, "open")]
    assert (await acta_app.alerts.get_async(alert.alert_id)).last_notified_at is not None
    acked = await acta_app.alerts.acknowledge_async(alert.alert_id, by="ops-bot")
    assert acked.acknowledged_by == "ops-bot"
    done = await acta_app.alerts.resolve_async(alert.alert_id, by="ops-bot", reason="warmed")
    assert done.resolved_by == "ops-bot"
    with pytest.raises(ValidationError, match="alert_id"):
        await acta_app.alerts.resolve_async(0, by="ops-bot")
    for past_64_bit in (2**63, 10**30):  # an id no ledger can hold: refused, not a driver error
        with pytest.raises(ValidationError, match="alert_id"):
            await acta_app.alerts.get_async(past_64_bit)
        with pytest.raises(ValidationError, match="alert_id"):
            acta_app.alerts.acknowledge(past_64_bit, by="ops-bot")
    with pytest.raises(ValidationError, match="by"):
        await acta_app.alerts.resolve_async(alert.alert_id, by="")


class Statements:
    """A ledger hook that keeps the name of every statement run."""

    def __init__(self) -> None:
        self.names: list[str] = []

    def statement(self, op: Any, seconds: float) -> None:
        self.names.append(op.statement)

    def verb(self, name: str, seconds: float, error: BaseException | None) -> None:
        pass


def test_successes_and_unreported_failures_pay_nothing_for_alerting(
    acta_app: Acta, acta_host: Host
) -> None:
    @acta_app.job("resize", max_attempts=1)
    def resize(fail: bool) -> None:
        if fail:
            raise RuntimeError("bad image")

    @acta_app.job("thumbnail", max_attempts=1, alerts="off")
    def thumbnail() -> None:
        raise RuntimeError("bad image")

    acta_host.tick()  # registers the worker before anything is watched
    seen = Statements()
    acta_app.ledger.hooks.append(seen)
    resize.enqueue(False)
    thumbnail.enqueue()
    acta_host.run_until_idle()
    fused = acta_host.provider.capabilities.fused
    assert "incident_upsert" not in seen.names
    # On a server database both settles stay in the one fused statement.
    assert ("transition_guard" in seen.names) is not fused
    seen.names.clear()
    resize.enqueue(True)
    acta_host.run_until_idle()
    assert seen.names.count("incident_upsert") == 1
