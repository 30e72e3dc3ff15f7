"""Who did it: every operator verb records its actor in the event's ``actor`` column, and what
the runtime does on its own names no one (issue 12: "an event naming the verb, the actor and
the reason"). One table-driven spec walks every verb family once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from acta import Acta
from acta_testing import Host

if TYPE_CHECKING:
    from conformance.conftest import Ledger


def actors(ledger: Ledger) -> dict[str, set[str | None]]:
    """Event name -> the actors recorded on events of that name."""
    seen: dict[str, set[str | None]] = {}
    for event, actor in ledger.rows("SELECT event, actor FROM {schema}.events_view", {}):
        seen.setdefault(event, set()).add(actor)
    return seen


def test_each_operator_verb_names_its_actor_and_the_runtime_names_no_one(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    @acta_app.job("report", max_attempts=1, schedule="1h", concurrency_limit=2)
    def report() -> None:
        raise RuntimeError("disk full")

    @acta_app.job("mail")
    def mail(to: str) -> None: ...

    acta_host.advance(0)
    failed = report.enqueue()
    acta_host.run_until_idle()
    acta_host.advance("1m")
    acta_host.tick()  # sys.alerts opens the incident's notice
    [alert] = acta_app.alerts.list()

    acta_app.alerts.acknowledge(alert.alert_id, by="alert-ann")
    acta_app.repairs.restart(failed, reason="disk cleaned", actor="repair-ray")
    acta_app.cancel(mail.enqueue("x@example.com", delay="1h"), "not needed", actor="cancel-cy")
    acta_app.repairs.pause_definition("mail", reason="smtp down", actor="pause-pat")
    acta_app.ops.policy.set("mail", max_attempts=3, expected_version=0, actor="policy-po")
    acta_app.settings.set("feature.x", True, expected_version=0, actor="setting-sam")
    acta_app.schedules.pause("report", reason="quiet week", actor="schedule-sue")
    acta_app.set_concurrency_limit(job="report", limit=1, expected_version=0, actor="gate-gus")

    seen = actors(ledger)
    assert seen["alert-acknowledged"] == {"alert-ann"}
    assert seen["restarted"] == {"repair-ray"}
    assert seen["cancelled"] == {"cancel-cy"}
    assert seen["claims-paused"] == {"pause-pat"}
    assert seen["policy-overridden"] == {"policy-po"}
    assert seen["setting-changed"] == {"setting-sam"}
    assert seen["schedule-changed"] == {"schedule-sue"}
    assert seen["gate-changed"] == {"gate-gus"}
    # The runtime's own events (enqueues, runs, failures, alerts it opened) name no one.
    for event in ("enqueued", "execution-started", "execution-finished", "failed", "alert-opened"):
        assert seen[event] == {None}, event
