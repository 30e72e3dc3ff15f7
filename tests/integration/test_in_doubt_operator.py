"""An operator verb whose COMMIT reply is lost reports success (issue 26, item 5).

The provider runs the whole verb again after a lost reply. Read again, the row has already
moved to where the verb put it, so without memory the retry refused its own work ("cannot
restart: it is ready", "not paused", "already acknowledged", a signal "already sent", a bulk
walk that stopped after its first batch). Each verb is aimed at in turn, on both dialects
(``in_doubt_support``), and must answer as if the reply had arrived, with one event.
"""

from __future__ import annotations

from typing import Any

from in_doubt_support import InDoubt, lossy_ledger

from acta import Acta, EventCode, JobStatus, Pause, SignalOutcome, SyncJobContext
from acta_testing import Host

acta_provider = lossy_ledger


def _count(app: Acta, ref: Any, code: EventCode) -> int:
    return [e.code for e in app.events(str(ref))].count(code)


def _failed_job(app: Acta, host: Host) -> Any:
    @app.job("charge", max_attempts=1)
    def charge() -> None:
        raise RuntimeError("gateway down")

    ref = charge.enqueue()
    assert host.tick() == "failed"
    return ref


def test_restart(acta_app: Acta, acta_host: Host, acta_provider: InDoubt) -> None:
    ref = _failed_job(acta_app, acta_host)
    acta_provider.lose_commit("repair_drop_result")
    info = acta_app.repairs.restart(ref, actor="ops:ada")
    assert acta_provider.lost == 1
    assert info.status is JobStatus.READY and info.attempts == 0
    assert _count(acta_app, ref, EventCode.RESTARTED) == 1


def test_reschedule_and_amend(acta_app: Acta, acta_host: Host, acta_provider: InDoubt) -> None:
    acta_app.define("report")
    ref = acta_app.enqueue("report")
    acta_provider.lose_commit("transition")
    info = acta_app.repairs.reschedule(ref, at=acta_host.clock.now().replace(year=2027))
    assert info.status is JobStatus.READY and info.next_run_at.year == 2027
    acta_provider.lose_commit("repair_amend")
    info = acta_app.repairs.amend(ref, priority=7)
    assert info.priority == 7
    assert acta_provider.lost == 2
    assert _count(acta_app, ref, EventCode.RUN_AT_CHANGED) == 1
    assert _count(acta_app, ref, EventCode.AMENDED) == 1


def test_pause_and_resume_a_definition_and_the_namespace(
    acta_app: Acta, acta_host: Host, acta_provider: InDoubt
) -> None:
    acta_app.define("report")
    acta_app.enqueue("report")
    repairs = acta_app.repairs
    for statement, verb in (
        ("repair_pause_definition", lambda: repairs.pause_definition("report")),
        ("repair_pause_definition", lambda: repairs.resume_definition("report")),
        ("repair_pause_namespace", repairs.pause_namespace),
        ("repair_pause_namespace", repairs.resume_namespace),
    ):
        acta_provider.lose_commit(statement)
        assert verb() is True  # changed, not "it already was so"
    assert acta_provider.lost == 4
    assert repairs.pause_definition("report") is True  # it really was resumed, once
    assert repairs.pause_definition("report") is False


def test_resume_a_paused_job(acta_app: Acta, acta_host: Host, acta_provider: InDoubt) -> None:
    @acta_app.job("ship")
    def ship() -> Pause:
        return Pause("the address needs a human")

    ref = ship.enqueue()
    acta_host.tick()
    assert acta_app.get(ref).status is JobStatus.PAUSED
    acta_provider.lose_commit("transition")
    assert acta_app.resume(ref, "address confirmed") is JobStatus.READY
    assert acta_provider.lost == 1
    assert _count(acta_app, ref, EventCode.RESUMED) == 1


def test_cancel(acta_app: Acta, acta_host: Host, acta_provider: InDoubt) -> None:
    acta_app.define("report")
    ref = acta_app.enqueue("report")
    acta_provider.lose_commit("transition")
    assert acta_app.cancel(ref, "not needed") is JobStatus.CANCELLED
    assert acta_provider.lost == 1
    assert _count(acta_app, ref, EventCode.CANCELLED) == 1


def test_signal(acta_app: Acta, acta_host: Host, acta_provider: InDoubt) -> None:
    @acta_app.job("approve")
    def approve(ctx: SyncJobContext) -> str:
        return str(ctx.wait_signal("approved"))

    waiting, later = approve.enqueue(), approve.enqueue()
    assert acta_host.tick() == "suspended"
    acta_provider.lose_commit("signal_insert")
    assert acta_app.signal(waiting, "approved", "yes") is SignalOutcome.RELEASED
    acta_provider.lose_commit("signal_insert")
    assert acta_app.signal(later, "approved", "no") is SignalOutcome.STORED
    assert acta_provider.lost == 2
    assert acta_app.signal(later, "approved", "again") is SignalOutcome.ALREADY_SENT
    assert _count(acta_app, waiting, EventCode.SIGNALLED) == 1
    acta_host.run_until_idle()
    assert (acta_app.result(waiting), acta_app.result(later)) == ("yes", "no")


def test_acknowledge_and_resolve_an_alert(
    acta_app: Acta, acta_host: Host, acta_provider: InDoubt
) -> None:
    @acta_app.job("reconcile")
    def reconcile(ctx: SyncJobContext) -> None:
        ctx.alert("ledger drift", severity="warning")

    reconcile.enqueue()
    assert acta_host.tick() == "completed"
    [alert] = acta_app.alerts.list()
    acta_provider.lose_commit("alert_acknowledge")
    acked = acta_app.alerts.acknowledge(alert.alert_id, by="ana")
    acta_provider.lose_commit("alert_resolve")
    resolved = acta_app.alerts.resolve(alert.alert_id, by="ana")
    assert acta_provider.lost == 2
    assert acked.acknowledged_by == "ana" and resolved.resolved_by == "ana"


def test_bulk_verbs_walk_on_and_count_each_job_once(
    acta_app: Acta, acta_host: Host, acta_provider: InDoubt
) -> None:
    @acta_app.job("charge", max_attempts=1)
    def charge(n: int) -> None:
        raise RuntimeError("gateway down")

    refs = [charge.enqueue(n) for n in range(5)]
    acta_host.run_until_idle()
    repairs = acta_app.repairs
    acta_provider.lose_commit("repair_select")  # the first batch's transaction
    report = repairs.restart_many(name="charge")
    assert (report.changed, report.skipped) == (5, 0)
    acta_provider.lose_commit("repair_select")
    report = repairs.cancel_many(name="charge")
    assert (report.changed, report.skipped) == (5, 0)
    acta_provider.lose_commit("repair_select")
    report = repairs.purge(name="charge", before=acta_host.clock.now().replace(year=2100))
    assert (report.changed, report.skipped) == (5, 0)
    assert acta_provider.lost == 3
    for ref in refs:
        codes = [e.code for e in acta_app.events(str(ref))]
        assert [codes.count(c) for c in (EventCode.RESTARTED, EventCode.CANCELLED)] == [1, 1]
        assert codes.count(EventCode.PURGED) == 1


def test_settings_and_policy_and_gate_overrides(
    acta_app: Acta, acta_host: Host, acta_provider: InDoubt
) -> None:
    @acta_app.job("mail", concurrency_limit=4)
    def mail() -> None:
        pass

    acta_host.tick()  # registers the definitions
    settings = acta_app.settings
    acta_provider.lose_commit("setting_insert")
    assert settings.set("feature.x", True, expected_version=0) == 1
    acta_provider.lose_commit("setting_update")
    assert settings.set("feature.x", False, expected_version=1) == 2
    acta_provider.lose_commit("setting_delete")
    settings.delete("feature.x", expected_version=2)
    acta_provider.lose_commit("policy_override_insert")
    policy = acta_app.ops.policy.set("mail", max_attempts=3, expected_version=0)
    assert policy.version == 1
    acta_provider.lose_commit("insert_event")  # the gate override's transaction, the only one
    assert acta_app.set_concurrency_limit(job="mail", limit=1, expected_version=0) == 1
    assert acta_provider.lost == 5
    assert settings.read("feature.x") is None
