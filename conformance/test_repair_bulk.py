"""Bulk repair verbs by filter (restart, cancel, reschedule, purge): dry runs count, real runs
work a batch per transaction and report what they changed; bad filters change nothing."""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING

import pytest

from acta import Acta, EventCode, JobContext, JobStatus
from acta.errors import ValidationError
from acta_testing import Host

if TYPE_CHECKING:
    from conformance.conftest import Ledger


@pytest.fixture
def small_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    from acta.ledger import repair_bulk

    monkeypatch.setattr(repair_bulk, "BATCH", 2)


def test_restart_many_failed_jobs_of_one_definition(
    acta_app: Acta, acta_host: Host, ledger: Ledger, small_batches: None
) -> None:
    healthy = {"ok": False}

    @acta_app.job("sync-account", max_attempts=1)
    def sync(n: int) -> int:
        if not healthy["ok"]:
            raise RuntimeError("upstream 503")
        return n

    @acta_app.job("other", max_attempts=1)
    def other() -> None:
        raise RuntimeError("not this one")

    refs = [sync.enqueue(n) for n in range(5)]
    bystander = other.enqueue()
    acta_host.run_until_idle()
    dry = acta_app.repairs.restart_many(name="sync-account", status="failed", dry_run=True)
    assert dry.dry_run and dry.matched == 5 and dry.changed == 0
    assert [acta_app.get(r).status for r in refs] == [
        JobStatus.FAILED
    ] * 5  # a dry run writes nothing

    healthy["ok"] = True
    report = acta_app.repairs.restart_many(name="sync-account", status="failed", reason="503s over")
    assert (report.matched, report.changed, report.skipped) == (5, 5, 0)
    assert report.batches == 3  # 2 + 2 + 1
    acta_host.run_until_idle()
    assert [acta_app.result(r) for r in refs] == [0, 1, 2, 3, 4]
    assert acta_app.get(bystander).status is JobStatus.FAILED
    assert (
        ledger.value(
            "SELECT count(*) FROM {schema}.events WHERE code = :code",
            {"code": int(EventCode.RESTARTED)},
        )
        == 5
    )


def test_cancel_many_by_tag_and_correlation_key(acta_app: Acta, acta_host: Host) -> None:
    @acta_app.job("notify")
    def notify(n: int) -> None:
        pass

    tagged = [notify.enqueue(n, tags=["campaign-7"], delay="1h") for n in range(3)]
    keyed = notify.enqueue(9, correlation_key="order-1", delay="1h")
    untouched = notify.enqueue(10, delay="1h")
    assert acta_app.repairs.cancel_many(tag="campaign-7", dry_run=True).matched == 3
    report = acta_app.repairs.cancel_many(tag="campaign-7", reason="campaign withdrawn")
    assert report.changed == 3
    assert acta_app.repairs.cancel_many(correlation_key="order-1").changed == 1
    assert {acta_app.get(r).status for r in [*tagged, keyed]} == {JobStatus.CANCELLED}
    assert acta_app.get(untouched).status is JobStatus.READY
    events = acta_app.events(tagged[0])
    assert events[-1].code is EventCode.CANCELLED
    assert (events[-1].message, events[-1].actor) == ("campaign withdrawn", "api")


def test_reschedule_many_pulls_delayed_jobs_to_now(acta_app: Acta, acta_host: Host) -> None:
    ran: list[int] = []

    @acta_app.job("digest")
    def digest(n: int) -> None:
        ran.append(n)

    for n in range(3):
        digest.enqueue(n, delay="6h")
    report = acta_app.repairs.reschedule_many(name="digest")
    assert report.changed == 3
    acta_host.tick()
    acta_host.tick()
    acta_host.tick()
    assert sorted(ran) == [0, 1, 2]  # without waiting six hours


def test_purge_deletes_finished_jobs_before_an_instant_and_keeps_events(
    acta_app: Acta, acta_host: Host, ledger: Ledger, small_batches: None
) -> None:
    @acta_app.job("tidy")
    def tidy(n: int) -> int:
        return n

    old = [tidy.enqueue(n) for n in range(3)]
    acta_host.run_until_idle()
    acta_host.advance("2d")
    cutoff = acta_host.clock.now() - timedelta(days=1)
    recent = tidy.enqueue(99)
    waiting = tidy.enqueue(100, delay="1h")
    acta_host.run_until_idle()

    dry = acta_app.repairs.purge(before=cutoff, dry_run=True)
    assert dry.matched == 3
    report = acta_app.repairs.purge(before=cutoff, reason="quarterly cleanup")
    assert (report.changed, report.batches) == (3, 2)
    for ref in old:
        assert (
            ledger.value(
                "SELECT count(*) FROM {schema}.jobs WHERE job_ref = :ref", {"ref": str(ref)}
            )
            == 0
        )
        codes = ledger.rows(
            "SELECT code FROM {schema}.events WHERE job_ref = :ref ORDER BY id", {"ref": str(ref)}
        )
        assert codes[0][0] == int(EventCode.ENQUEUED)  # the timeline outlives the row
        assert codes[-1][0] == int(EventCode.PURGED)
    assert acta_app.get(recent).status is JobStatus.SUCCEEDED
    assert acta_app.get(waiting).status is JobStatus.SUCCEEDED
    assert acta_app.repairs.purge(before=cutoff).changed == 0


def test_bulk_verbs_refuse_bad_filters_and_write_nothing(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    @acta_app.job("any")
    def any_job() -> None:
        pass

    any_job.enqueue()
    acta_host.run_until_idle()
    now = acta_host.clock.now()
    before = ledger.snapshot()
    bad_calls = [
        lambda: acta_app.repairs.cancel_many(),  # no filter at all
        lambda: acta_app.repairs.cancel_many(status=None, name=None),  # still no filter
        lambda: acta_app.repairs.cancel_many(name="any", reason="x" * 800),  # too long
        lambda: acta_app.repairs.restart_many(status="ready"),  # not a status restart takes
        lambda: acta_app.repairs.reschedule_many(status="failed"),
        lambda: acta_app.repairs.cancel_many(status="no-such-status"),
        lambda: acta_app.repairs.cancel_many(status=[]),
        lambda: acta_app.repairs.cancel_many(colour="red"),  # unknown filter
        lambda: acta_app.repairs.cancel_many(name="Bad Name!"),
        lambda: acta_app.repairs.cancel_many(tag=7),
        lambda: acta_app.repairs.cancel_many(created_after="yesterday"),
        lambda: acta_app.repairs.cancel_many(created_after=now, created_before=now),
        lambda: acta_app.repairs.purge(before="last week"),  # type: ignore[arg-type]
        lambda: acta_app.repairs.purge(before=now, status="ready"),
    ]
    for call in bad_calls:
        with pytest.raises(ValidationError):
            call()
    assert ledger.snapshot() == before


def test_purge_keeps_a_finished_child_while_its_parent_waits(
    acta_app: Acta, acta_host: Host
) -> None:
    @acta_app.job("part")
    async def part(path: str, ctx: JobContext) -> str:
        if path == "slow":
            await ctx.wait_signal("go")  # keeps the parent waiting
        return path.upper()

    @acta_app.job("whole")
    async def whole(paths: list[str], ctx: JobContext) -> list[str]:
        await ctx.spawn_many(part, paths, group="p")
        outcomes = await ctx.wait_children()
        return [o.result for o in outcomes]

    parent = whole.enqueue(["fast", "slow"])
    acta_host.run_until_idle()
    assert acta_app.get(parent).status is JobStatus.SUSPENDED
    acta_host.advance("1d")
    report = acta_app.repairs.purge(before=acta_host.clock.now(), name="part")
    assert (report.changed, report.skipped) == (0, 1)  # the finished child stays
    slow = [j for j in acta_app.jobs(name="part") if j.status is not JobStatus.SUCCEEDED]
    acta_app.signal(slow[0].job_ref, "go")
    acta_host.run_until_idle()
    assert acta_app.result(parent) == ["FAST", "SLOW"]
