"""Alert channels and routes: a channel that raises never blocks settles or the other channels
(it is recorded and owed the notice next round); routes pick channels by job name and severity;
routes naming unknown channels are checked when a worker is built (off, warn, fail); bad
declarations are typed errors at the call site. A job that loses its worker on its last attempt
opens an incident too (through recovery).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import pytest

from acta import Acta, ConfigurationError, InvalidPolicyError, ValidationError
from acta.alerting import Notice
from acta_testing import Host

if TYPE_CHECKING:
    from conformance.conftest import Ledger


class Flaky:
    """A pager that is down for its first ``failures`` calls."""

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.got: list[Notice] = []

    def __call__(self, notice: Notice) -> None:
        if self.failures > 0:
            self.failures -= 1
            raise ConnectionError("pager unreachable")
        self.got.append(notice)


def test_a_raising_channel_is_owed_the_notice_and_blocks_nobody(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    pager = Flaky(failures=1)
    chat: list[Notice] = []
    acta_app.alerting.callable("pager", pager)
    acta_app.alerting.callable("chat", chat.append)

    @acta_app.job("export", max_attempts=1)
    def export() -> None:
        raise RuntimeError("bucket gone")

    export.enqueue()
    acta_host.run_until_idle()
    acta_host.advance("1m")
    acta_host.tick()
    assert [n.state for n in chat] == ["open"] and pager.got == []
    [(pending, notified)] = ledger.rows(
        "SELECT pending_channels, event FROM {schema}.alerts_view a, {schema}.events_view e "
        "WHERE e.event = 'alert-notified'"
    )
    assert pending == '{"notice": "open", "channels": ["pager"]}' and notified == "alert-notified"
    message = ledger.value(
        "SELECT message FROM {schema}.events_view WHERE event = 'alert-notified'"
    )
    assert "via chat" in message and "pager: ConnectionError: pager unreachable" in message
    # Settles go on while the pager is down: a second failure joins the incident.
    export.enqueue()
    acta_host.run_until_idle()
    # Next round: only the pager is owed the notice; chat is not told twice.
    acta_host.advance("1m")
    acta_host.tick()
    assert [n.state for n in chat] == ["open"]
    assert [(n.state, n.occurrences) for n in pager.got] == [("open", 2)]
    assert ledger.value("SELECT pending_channels FROM {schema}.alerts_view") is None
    # The day after, both are reminded.
    acta_host.advance("1d")
    acta_host.tick()
    assert [n.state for n in chat] == ["open", "reminder"]
    assert [n.state for n in pager.got] == ["open", "reminder"]


def test_routes_pick_channels_by_job_and_severity(acta_app: Acta, acta_host: Host) -> None:
    billing: list[Notice] = []
    oncall: list[Notice] = []
    acta_app.alerting.callable("billing-team", billing.append)
    acta_app.alerting.callable("oncall", oncall.append)
    acta_app.alerting.route("billing-team", jobs=["billing.*"])
    acta_app.alerting.route("oncall", severities=["critical"])

    @acta_app.job("billing.invoice", max_attempts=2, backoff="1s", alerts="all")
    def invoice() -> None:
        raise RuntimeError("tax service down")

    @acta_app.job("search.reindex", max_attempts=1)
    def reindex() -> None:
        raise RuntimeError("index locked")

    invoice.enqueue()
    reindex.enqueue()
    acta_host.run_until_idle()
    acta_host.advance("1m")
    acta_host.tick()
    assert sorted((n.job_name, n.severity) for n in billing) == [
        ("billing.invoice", "critical"),
        ("billing.invoice", "warning"),
    ]
    assert sorted((n.job_name, n.reason_class) for n in oncall) == [
        ("billing.invoice", "attempts-exhausted"),
        ("search.reindex", "attempts-exhausted"),
    ]


def test_unknown_channels_in_routes_are_checked_at_worker_start(
    acta_app: Acta, caplog: pytest.LogCaptureFixture
) -> None:
    acta_app.alerting.logging("ops-log")
    acta_app.alerting.route("pagr")  # a typo: no such channel
    with pytest.raises(ConfigurationError, match="'pagr', which is not declared"):
        acta_app.worker()
    acta_app.alerting.configure(validation="warn")
    with caplog.at_level(logging.WARNING, logger="acta.alerts"):
        assert acta_app.alerting.validate() == [
            "alert route names channel 'pagr', which is not declared (declared: ops-log)"
        ]
    assert "the route is skipped" in caplog.text
    acta_app.alerting.configure(validation="off")
    assert len(acta_app.alerting.validate()) == 1  # reported to the caller, nothing raised


def test_bad_declarations_are_typed_errors(acta_app: Acta) -> None:
    with pytest.raises(InvalidPolicyError, match="one of 'terminal', 'all', 'off'"):
        acta_app.job("nightly", alerts="sometimes")
    with pytest.raises(ValidationError, match="kebab-case"):
        acta_app.alerting.callable("Pager!", print)
    with pytest.raises(ValidationError, match="a function"):
        acta_app.alerting.callable("pager", "not callable")  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="http"):
        acta_app.alerting.webhook("hook", "ftp://example.org/x")
    with pytest.raises(ValidationError, match="one of debug"):
        acta_app.alerting.logging("log", level="loud")
    with pytest.raises(ValidationError, match="critical"):
        acta_app.alerting.route("pager", severities=["urgent"])
    with pytest.raises(ValidationError, match="off, warn or fail"):
        acta_app.alerting.configure(validation="maybe")
    acta_app.alerting.callable("pager", print)
    with pytest.raises(ConfigurationError, match="declared twice"):
        acta_app.alerting.logging("pager")
    assert list(acta_app.alerting.channels) == ["pager"]


def test_a_job_that_loses_its_worker_on_its_last_attempt_opens_an_incident(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    @acta_app.job("resize-image", max_attempts=1, alerts="off")
    def resize() -> None:
        acta_host.kill()  # the worker dies mid-run

    ref = resize.enqueue()
    assert acta_host.tick() == "killed"
    survivor = acta_host.add_worker()
    acta_host.advance(survivor.dead_after * 2)
    acta_host.tick(survivor)
    assert acta_host.job(ref).status.label == "failed"
    # Recovery cannot see the code's profile ("off" here): a lost last attempt always counts.
    rows = ledger.rows(
        "SELECT job_name, severity, reason_class, occurrences FROM {schema}.alerts_view"
    )
    assert [tuple(r) for r in rows] == [("resize-image", "critical", "attempts-exhausted", 1)]
