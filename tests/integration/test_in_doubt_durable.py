"""A handler's durable write whose COMMIT reply is lost is written once (issue 26, item 4).

The provider retries the whole transaction after a lost reply; the retry must recognise what
its first attempt committed: one step intent and one step-completed event, one note, one
alert, one wait, one child. Each write kind is aimed at in turn, on both dialects
(``in_doubt_support``: a real lost reply on PostgreSQL, the same sequence played on SQLite).
"""

from __future__ import annotations

from typing import Any

import pytest
from in_doubt_support import InDoubt, lossy_ledger

from acta import Acta, EventCode, JobStatus, SyncJobContext
from acta_testing import Host

acta_provider = lossy_ledger


def _codes(host: Host, ref: Any) -> list[EventCode]:
    return [e.code for e in host.events(ref)]


def test_an_at_most_once_intent_is_recorded_once(
    acta_app: Acta, acta_host: Host, acta_provider: InDoubt
) -> None:
    bodies: list[int] = []

    @acta_app.job("charge-card")
    def charge(ctx: SyncJobContext) -> str:
        acta_provider.lose_commit("step_write")  # the intent's transaction
        return str(ctx.step("charge", lambda: bodies.append(1) or "ch_1", at_most_once=True))

    ref = charge.enqueue()
    assert acta_host.tick() == "completed"
    assert acta_provider.lost == 1
    codes = _codes(acta_host, ref)
    assert codes.count(EventCode.STEP_BEGUN) == 1
    assert codes.count(EventCode.STEP_COMPLETED) == 1
    assert EventCode.WRITE_FENCED not in codes
    assert bodies == [1] and acta_app.result(ref) == "ch_1"


def test_a_completed_step_is_recorded_once(
    acta_app: Acta, acta_host: Host, acta_provider: InDoubt
) -> None:
    def body() -> str:
        acta_provider.lose_commit("step_write")  # the completion's transaction
        return "label-7"

    @acta_app.job("print-label")
    def print_label(ctx: SyncJobContext) -> str:
        return str(ctx.step("print", body))

    ref = print_label.enqueue()
    assert acta_host.tick() == "completed"
    assert acta_provider.lost == 1
    assert _codes(acta_host, ref).count(EventCode.STEP_COMPLETED) == 1
    assert acta_app.result(ref) == "label-7"


def test_an_interrupted_step_is_recorded_once(
    acta_app: Acta, acta_host: Host, acta_provider: InDoubt
) -> None:
    def body() -> str:
        acta_provider.lose_commit("step_write")  # the interruption's transaction
        raise RuntimeError("gateway hung up")

    @acta_app.job("charge-card", max_attempts=1)
    def charge(ctx: SyncJobContext) -> str:
        return str(ctx.step("charge", body, at_most_once=True))

    ref = charge.enqueue()
    assert acta_host.tick() == "failed"
    assert acta_provider.lost == 1
    assert _codes(acta_host, ref).count(EventCode.STEP_INTERRUPTED) == 1


def test_a_note_is_written_once(acta_app: Acta, acta_host: Host, acta_provider: InDoubt) -> None:
    @acta_app.job("import-feed")
    def import_feed(ctx: SyncJobContext) -> None:
        ctx.note("skipped 3 rows")  # the same text twice is two notes
        acta_provider.lose_commit("lease_guard")  # the next durable write: the second note
        ctx.note("skipped 3 rows")

    ref = import_feed.enqueue()
    assert acta_host.tick() == "completed"
    assert acta_provider.lost == 1
    assert _codes(acta_host, ref).count(EventCode.NOTE) == 2


def test_an_alert_from_a_handler_opens_once(
    acta_app: Acta, acta_host: Host, acta_provider: InDoubt
) -> None:
    @acta_app.job("reconcile")
    def reconcile(ctx: SyncJobContext) -> None:
        acta_provider.lose_commit("alert_insert")
        ctx.alert("ledger drift", "3 accounts off by a cent", severity="warning")

    ref = reconcile.enqueue()
    assert acta_host.tick() == "completed"
    assert acta_provider.lost == 1
    assert _codes(acta_host, ref).count(EventCode.ALERT_OPENED) == 1
    manual = [a for a in acta_app.alerts.list(include_resolved=True) if a.kind == "manual"]
    assert [a.title for a in manual] == ["ledger drift"]


@pytest.mark.parametrize("statement", ["variable_write", "progress_write"])
def test_a_variable_and_progress_write_once(
    acta_app: Acta, acta_host: Host, acta_provider: InDoubt, statement: str
) -> None:
    @acta_app.job("import-feed")
    def import_feed(ctx: SyncJobContext) -> int:
        acta_provider.lose_commit(statement)
        ctx.set("cursor", 40)
        ctx.set_progress(40, 100, "rows")
        return int(ctx.get("cursor"))

    ref = import_feed.enqueue()
    assert acta_host.tick() == "completed"
    assert acta_provider.lost == 1
    assert acta_app.result(ref) == 40
    assert EventCode.WRITE_FENCED not in _codes(acta_host, ref)


def test_a_sleep_and_a_signal_wait_arm_once(
    acta_app: Acta, acta_host: Host, acta_provider: InDoubt
) -> None:
    @acta_app.job("approve")
    def approve(ctx: SyncJobContext) -> str:
        if ctx.execution == 1:  # the sleep is armed in the first run, the wait in the second
            acta_provider.lose_commit("wait_arm")
        ctx.sleep("1h", name="cool-off")
        if ctx.execution == 2:
            acta_provider.lose_commit("wait_arm")
        return str(ctx.wait_signal("approved", timeout="1d"))

    ref = approve.enqueue()
    assert acta_host.tick() == "suspended"
    acta_host.advance("1h")
    assert acta_host.tick() == "suspended"
    assert acta_app.signal(ref, "approved", "yes").name in ("RELEASED", "STORED")
    assert acta_host.tick() == "completed"
    assert acta_provider.lost == 2
    assert acta_app.result(ref) == "yes"
    codes = _codes(acta_host, ref)
    assert codes.count(EventCode.SUSPENDED) == 2 and EventCode.WRITE_FENCED not in codes


def test_children_spawned_once(acta_app: Acta, acta_host: Host, acta_provider: InDoubt) -> None:
    @acta_app.job("resize")
    def resize(size: int) -> int:
        return size * 2

    @acta_app.job("album")
    def album(ctx: SyncJobContext) -> list[int]:
        acta_provider.lose_commit("latch_insert")
        ctx.spawn_many(resize, [1, 2], group="size")
        return [c.result for c in ctx.wait_children()]

    ref = album.enqueue()
    acta_host.run_until_idle()
    assert acta_provider.lost == 1
    assert acta_host.job(ref).status is JobStatus.SUCCEEDED
    assert acta_app.result(ref) == [2, 4]
    assert len(acta_app.jobs(name="resize")) == 2
    assert _codes(acta_host, ref).count(EventCode.CHILDREN_SPAWNED) == 1
